from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("judging", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="pool",
            name="text_only",
            field=models.BooleanField(default=False, help_text="Depth counted over passages with text only."),
        ),
    ]
