"""An experiment keeps its plan: the conversations it retrieves (one chunk each) and the labels their orders are
sampled from, so the chunks sample the orders in parallel instead of the request that creates the experiment.

Experiments created before sampled every order at creation: their plan lists the conversations that have orders,
with no labels (a chunk of theirs never samples), so the sweeper can still queue what a running one lacks."""

from django.db import migrations, models


def plans_from_stored_orders(apps, schema_editor):
    experiment_model = apps.get_model("evaluation", "PermutationExperiment")
    permutation_model = apps.get_model("evaluation", "Permutation")
    for exp in experiment_model.objects.filter(plan=[]).iterator():
        sizes: dict[int, int] = {}
        topics: dict[int, str] = {}
        rows = permutation_model.objects.filter(experiment_id=exp.pk).values_list(
            "conversation_id", "conversation__topic_id", "order"
        )
        for conv_id, topic, order in rows.iterator():
            sizes[conv_id] = sizes.get(conv_id, 0) + len(order)
            topics[conv_id] = topic
        exp.plan = [
            {"conversation": c, "topic": topics[c], "size": sizes[c], "paths": []}
            for c in sorted(sizes, key=lambda c: (-sizes[c], c))
        ]
        exp.save(update_fields=["plan"])


class Migration(migrations.Migration):
    dependencies = [("evaluation", "0011_permutation_rankings_stored_uncompressed")]

    operations = [
        migrations.AddField(
            model_name="permutationexperiment",
            name="plan",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text="The conversations retrieved, one chunk each, largest first: {conversation, topic, size "
                "(turns over its orders), paths: [[path, [[turn number, class], ...]], ...]}. A chunk samples its "
                "conversation's orders from these labels, as they were when the experiment was created.",
            ),
        ),
        migrations.RunPython(plans_from_stored_orders, migrations.RunPython.noop),
    ]
