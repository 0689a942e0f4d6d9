"""Passages stored before collections had corpora join the corpus of the collection they were imported for, or whose
turns name them as responses (a real ``migrate`` on a scratch database: the suite itself runs without migrations)."""

from __future__ import annotations

from tests.migration_helpers import manage, scratch_env

# ecast's models as they were at 0009 (no corpus): two collections, passages from three imports and one response.
SETUP = """
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
at_0009 = MigrationExecutor(connection).loader.project_state(("ecast", "0009_recovery_transient")).apps
Collection, Conversation, ImportJob, Passage, Turn = (
    at_0009.get_model("ecast", name) for name in ("Collection", "Conversation", "ImportJob", "Passage", "Turn")
)
a, b = Collection.objects.create(name="CAsT 2020"), Collection.objects.create(name="iKAT 2023")
ImportJob.objects.create(kind="passages_tsv", collection=a, file_name="marco.tsv", status="succeeded")
ImportJob.objects.create(kind="passages_tsv", collection=a, file_name="broken.tsv", status="failed")
ImportJob.objects.create(kind="passages_jsonl", collection=None, file_name="ikat.jsonl", status="succeeded")
for pid, source in [("MARCO_1", "marco.tsv"), ("MARCO_2", "marco.tsv"), ("MARCO_9", "broken.tsv"),
                    ("clueweb22-x:1", "ikat.jsonl"), ("clueweb22-x:2", "ikat.jsonl")]:
    Passage.objects.create(passage_id=pid, text="t", source=source)
conv = Conversation.objects.create(collection=b, topic_id="1")
Turn.objects.create(conversation=conv, collection=b, number=1, turn_id="1_1", raw_utterance="q",
                    canonical_response_id="clueweb22-x:2")
"""
READ = (
    "from ecast.models import Collection\n"
    "print({c.name: sorted(c.corpus.values_list('passage_id', flat=True)) for c in Collection.objects.all()})"
)


def test_passages_join_the_corpus_of_the_collection_they_were_imported_for_or_answer(tmp_path, scratch_db):
    env = scratch_env(scratch_db, tmp_path)
    manage(env, "migrate", "-v0")
    manage(env, "migrate", "ecast", "0009", "-v0")
    manage(env, "shell", "-c", SETUP)
    manage(env, "migrate", "ecast", "0010", "-v0")
    corpora = manage(env, "shell", "-c", READ).strip().splitlines()[-1]
    assert corpora == str({"CAsT 2020": ["MARCO_1", "MARCO_2"], "iKAT 2023": ["clueweb22-x:2"]})
