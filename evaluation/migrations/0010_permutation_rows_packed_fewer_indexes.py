"""Permutation rows: rankings packed like a run's, and no index that another index already covers.

- ``PermutationQuery.doc_ids`` / ``scores`` go from JSON arrays to the packed blobs of ``RunTurn`` (newline-joined
  ids, IEEE-754 doubles); existing rows are converted.
- The foreign keys that lead a unique index (experiment, permutation) lose their own index.
- ``PermutationResult.run`` stays unique, but only among the rows that have a run: the plain unique index held a
  NULL entry for every built-in system's result, and the planner read all of them for ``run IS NULL``.
"""

from array import array

import django.db.models.deletion
from django.db import migrations, models

import evaluation.models.core

BATCH = 2000


def _batches(apps, schema_editor, fields):
    """The permutation queries in pk order, BATCH at a time, with only ``fields`` loaded."""
    rows = apps.get_model("evaluation", "PermutationQuery").objects.using(schema_editor.connection.alias)
    last = 0
    while batch := list(rows.order_by("pk").filter(pk__gt=last).only("pk", *fields)[:BATCH]):
        yield batch
        last = batch[-1].pk


def rankings_packed(apps, schema_editor):
    PermutationQuery = apps.get_model("evaluation", "PermutationQuery")
    for batch in _batches(apps, schema_editor, ["doc_ids", "scores"]):
        for q in batch:
            q.doc_ids_packed = "\n".join(q.doc_ids).encode("utf-8")
            q.scores_packed = array("d", [float(v) for v in q.scores]).tobytes()
        PermutationQuery.objects.bulk_update(batch, ["doc_ids_packed", "scores_packed"])


def rankings_unpacked(apps, schema_editor):
    PermutationQuery = apps.get_model("evaluation", "PermutationQuery")
    for batch in _batches(apps, schema_editor, ["doc_ids_packed", "scores_packed"]):
        for q in batch:
            q.doc_ids, q.scores = q.doc_ids_packed, q.scores_packed  # decoded on read
        PermutationQuery.objects.bulk_update(batch, ["doc_ids", "scores"])


class Migration(migrations.Migration):
    dependencies = [
        ("evaluation", "0009_bulk_rows_without_fk_checks"),
    ]

    operations = [
        migrations.AddField(
            model_name="permutationquery",
            name="doc_ids_packed",
            field=evaluation.models.core.DocIdsField(),
        ),
        migrations.AddField(
            model_name="permutationquery",
            name="scores_packed",
            field=evaluation.models.core.ScoresField(),
        ),
        migrations.RunPython(rankings_packed, rankings_unpacked),
        migrations.RemoveField(model_name="permutationquery", name="doc_ids"),
        migrations.RemoveField(model_name="permutationquery", name="scores"),
        migrations.RenameField(model_name="permutationquery", old_name="doc_ids_packed", new_name="doc_ids"),
        migrations.RenameField(model_name="permutationquery", old_name="scores_packed", new_name="scores"),
        migrations.AlterField(
            model_name="permutation",
            name="experiment",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="permutations",
                to="evaluation.permutationexperiment",
            ),
        ),
        migrations.AlterField(
            model_name="permutationquery",
            name="experiment",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="queries",
                to="evaluation.permutationexperiment",
            ),
        ),
        migrations.AlterField(
            model_name="permutationresult",
            name="permutation",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="results",
                to="evaluation.permutation",
            ),
        ),
        migrations.AlterField(
            model_name="permutationresult",
            name="run",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="permutation_results",
                to="evaluation.run",
            ),
        ),
        migrations.AddConstraint(
            model_name="permutationresult",
            constraint=models.UniqueConstraint(
                condition=models.Q(("run__isnull", False)), fields=("run",), name="uniq_perm_result_run"
            ),
        ),
    ]
