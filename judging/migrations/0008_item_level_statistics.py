from django.db import migrations

# The lease statement reads a campaign's open items one completion level at a time through the (campaign, is_gold,
# completed_count, position) index. PostgreSQL estimates how many items one level holds from completed_count's
# distinct values at the last ANALYZE; a campaign analysed before its first rating has a single one (0), so every
# level looked like the whole campaign and the planner read the whole table for each. Fixing the estimate at ten
# levels keeps the index in use however the counts stood when the table was last analysed.
FORWARD = """
ALTER TABLE judging_ratingitem ALTER COLUMN completed_count SET (n_distinct = 10);
ANALYZE judging_ratingitem;
"""
BACKWARD = "ALTER TABLE judging_ratingitem ALTER COLUMN completed_count RESET (n_distinct);"


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FORWARD)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(BACKWARD)


class Migration(migrations.Migration):
    dependencies = [
        ("judging", "0007_item_leases"),
    ]

    operations = [migrations.RunPython(forward, backward)]
