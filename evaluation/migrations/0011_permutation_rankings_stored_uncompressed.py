"""A permutation query's packed ranking is stored out of line as it is, like a run's (0009): PostgreSQL tried to
compress every 2.7 kB blob of doc ids with pglz and nearly always gave up (under 25 % saved), which was half of the
database's work in storing an experiment's rankings. Values already stored keep their form."""

from django.db import migrations

COLUMNS = (
    "ALTER TABLE evaluation_permutationquery ALTER COLUMN doc_ids SET STORAGE {0}, ALTER COLUMN scores SET STORAGE {0}"
)


def rankings_stored_uncompressed(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(COLUMNS.format("EXTERNAL"))


def rankings_stored_compressed(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(COLUMNS.format("EXTENDED"))


class Migration(migrations.Migration):
    dependencies = [("evaluation", "0010_permutation_rows_packed_fewer_indexes")]

    operations = [migrations.RunPython(rankings_stored_uncompressed, rankings_stored_compressed)]
