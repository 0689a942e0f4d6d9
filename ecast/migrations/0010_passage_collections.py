"""A collection's corpus: the passages imported for it. Existing rows are linked from what the database recorded:
the passages a collection's succeeded passage or topics imports wrote (a passage's ``source`` is its import's file
name), and the canonical and replacement responses its turns name."""

from django.db import migrations, models

# The import kinds that write passage texts (ecast.imports.registry).
PASSAGE_KINDS = ["passages_tsv", "passages_jsonl", "crowd_passages", "cast_topics"]
BATCH = 5000


def link_imported_passages(apps, schema_editor):
    Passage = apps.get_model("ecast", "Passage")
    ImportJob = apps.get_model("ecast", "ImportJob")
    Turn = apps.get_model("ecast", "Turn")
    Link = Passage.collections.through

    def link(collection_id, passage_pks):
        batch = []
        for pk in passage_pks:
            batch.append(Link(passage_id=pk, collection_id=collection_id))
            if len(batch) >= BATCH:
                Link.objects.bulk_create(batch, ignore_conflicts=True)
                batch = []
        Link.objects.bulk_create(batch, ignore_conflicts=True)

    imports = (
        ImportJob.objects.filter(status="succeeded", collection__isnull=False, kind__in=PASSAGE_KINDS)
        .values_list("collection_id", "file_name")
        .distinct()
    )
    for collection_id, file_name in imports:
        pks = Passage.objects.filter(source=file_name[:300]).values_list("pk", flat=True)
        link(collection_id, pks.iterator(chunk_size=BATCH))
    for field in ("canonical_response_id", "replacement_response_id"):
        named = Turn.objects.exclude(**{field: ""}).values_list("collection_id", field).distinct()
        by_collection: dict[int, set[str]] = {}
        for collection_id, pid in named:
            by_collection.setdefault(collection_id, set()).add(pid)
        for collection_id, ids in by_collection.items():
            wanted = sorted(ids)
            for i in range(0, len(wanted), 900):
                named_here = Passage.objects.filter(passage_id__in=wanted[i : i + 900])
                link(collection_id, named_here.values_list("pk", flat=True))


class Migration(migrations.Migration):
    dependencies = [
        ("ecast", "0009_recovery_transient"),
    ]

    operations = [
        migrations.AddField(
            model_name="passage",
            name="collections",
            field=models.ManyToManyField(
                blank=True,
                help_text="The collections whose corpus this passage is in.",
                related_name="corpus",
                to="ecast.collection",
            ),
        ),
        migrations.RunPython(link_imported_passages, migrations.RunPython.noop),
    ]
