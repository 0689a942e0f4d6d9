import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

# Every lease inserts an assignment and every answer a rating, each writing all of its table's indexes. Four of
# them duplicated the leading column of a composite index (assignment: item, campaign; rating: campaign, rater),
# which serves the same look-ups and cascades, so they go.


class Migration(migrations.Migration):
    dependencies = [
        ("judging", "0008_item_level_statistics"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name="rating",
            name="campaign",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="ratings",
                to="judging.campaign",
            ),
        ),
        migrations.AlterField(
            model_name="rating",
            name="rater",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="ratings",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AlterField(
            model_name="ratingassignment",
            name="campaign",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="assignments",
                to="judging.campaign",
            ),
        ),
        migrations.AlterField(
            model_name="ratingassignment",
            name="item",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="assignments",
                to="judging.ratingitem",
            ),
        ),
    ]
