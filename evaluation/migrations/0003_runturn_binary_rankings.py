"""Rankings move from JSON arrays to compact blobs (newline-separated doc ids, packed doubles); data is kept."""

from array import array

from django.db import migrations

import evaluation.models.core

CHUNK = 500


def to_blobs(apps, schema_editor):
    RunTurn = apps.get_model("evaluation", "RunTurn")
    last = 0
    while True:
        rows = list(RunTurn.objects.filter(pk__gt=last).order_by("pk")[:CHUNK])
        if not rows:
            return
        for row in rows:
            docs = [str(d) for d in (row.doc_ids_json or [])]
            scores = [float(s) for s in (row.scores_json or [])]
            RunTurn.objects.filter(pk=row.pk).update(
                doc_ids="\n".join(docs).encode("utf-8"), scores=array("d", scores).tobytes()
            )
        last = rows[-1].pk


def to_json(apps, schema_editor):
    RunTurn = apps.get_model("evaluation", "RunTurn")
    for row in RunTurn.objects.order_by("pk").iterator(chunk_size=CHUNK):
        RunTurn.objects.filter(pk=row.pk).update(doc_ids_json=list(row.doc_ids), scores_json=list(row.scores))


class Migration(migrations.Migration):
    dependencies = [("evaluation", "0002_score_rows_without_fk_checks")]

    operations = [
        migrations.RenameField("runturn", "doc_ids", "doc_ids_json"),
        migrations.RenameField("runturn", "scores", "scores_json"),
        migrations.AddField("runturn", "doc_ids", evaluation.models.core.DocIdsField()),
        migrations.AddField("runturn", "scores", evaluation.models.core.ScoresField()),
        migrations.RunPython(to_blobs, to_json),
        migrations.RemoveField("runturn", "doc_ids_json"),
        migrations.RemoveField("runturn", "scores_json"),
    ]
