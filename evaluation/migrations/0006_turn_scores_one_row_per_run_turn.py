"""Stored scores: one row per run × turn × qrels version holding every measure (names and values side by side)
instead of one row per measure; existing scores are carried over both ways."""

from itertools import groupby

import django.db.models.deletion
import evaluation.models.core
from django.db import migrations, models


def to_turn_rows(apps, schema_editor):
    Score = apps.get_model("evaluation", "Score")
    TurnScores = apps.get_model("evaluation", "TurnScores")
    rows = Score.objects.order_by("version_id", "run_id", "turn_id", "id").values_list(
        "version_id", "run_id", "turn_id", "measure", "value", "threshold", "computed_at"
    )
    batch = []
    for (version_id, run_id, turn_id), group in groupby(rows.iterator(chunk_size=5000), key=lambda r: r[:3]):
        group = list(group)
        batch.append(
            TurnScores(
                version_id=version_id,
                run_id=run_id,
                turn_id=turn_id,
                measures="\n".join(r[3] for r in group),
                values=[r[4] for r in group],
                threshold=group[0][5],
                computed_at=max(r[6] for r in group),
            )
        )
        if len(batch) >= 2000:
            TurnScores.objects.bulk_create(batch)
            batch = []
    TurnScores.objects.bulk_create(batch)


def to_measure_rows(apps, schema_editor):
    Score = apps.get_model("evaluation", "Score")
    TurnScores = apps.get_model("evaluation", "TurnScores")
    batch = []
    for row in TurnScores.objects.order_by("id").iterator(chunk_size=2000):
        for measure, value in zip(row.measures.split("\n"), row.values, strict=True):
            batch.append(
                Score(
                    version_id=row.version_id,
                    run_id=row.run_id,
                    turn_id=row.turn_id,
                    measure=measure,
                    value=value,
                    threshold=row.threshold,
                    computed_at=row.computed_at,
                )
            )
        if len(batch) >= 5000:
            Score.objects.bulk_create(batch)
            batch = []
    Score.objects.bulk_create(batch)


class Migration(migrations.Migration):
    dependencies = [
        ("ecast", "0003_ikat_ptkb"),
        ("evaluation", "0005_permutation_path"),
    ]

    operations = [
        migrations.CreateModel(
            name="TurnScores",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "measures",
                    models.TextField(help_text="ir_measures strings, newline-separated, in the order of values"),
                ),
                ("values", evaluation.models.core.FloatArrayField()),
                ("threshold", models.PositiveSmallIntegerField()),
                ("computed_at", models.DateTimeField(auto_now=True)),
                (
                    "run",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="evaluation.run",
                    ),
                ),
                (
                    "turn",
                    models.ForeignKey(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="ecast.turn",
                    ),
                ),
                (
                    "version",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="evaluation.qrelsversion",
                    ),
                ),
            ],
        ),
        migrations.AddConstraint(
            model_name="turnscores",
            constraint=models.UniqueConstraint(fields=("version", "run", "turn"), name="uniq_turn_scores"),
        ),
        migrations.RunPython(to_turn_rows, to_measure_rows),
        migrations.DeleteModel(
            name="Score",
        ),
    ]
