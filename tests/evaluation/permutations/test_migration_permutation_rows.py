"""Permutation rankings stored as JSON before the packed layout come through the migration unchanged, both ways,
and a result's run stays unique once its index holds only the rows that have a run (a real ``migrate`` on a
scratch database: the suite itself runs without migrations)."""

from __future__ import annotations

import ast
import json

from tests.migration_helpers import column_attributes, manage, scratch_env

# Today's models for the tables of the app the migration leaves alone, the evaluation app's as they were at 0009
# (today's have columns added since); raw SQL for the rankings it converts.
SETUP = """
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from ecast.models import Collection, Conversation, Turn
at_0009 = MigrationExecutor(connection).loader.project_state(("evaluation", "0009_bulk_rows_without_fk_checks")).apps
Permutation, PermutationExperiment, PermutationResult, QrelsVersion, Run = (
    at_0009.get_model("evaluation", name)
    for name in ("Permutation", "PermutationExperiment", "PermutationResult", "QrelsVersion", "Run")
)
c = Collection.objects.create(name="M", year=2020)
conv = Conversation.objects.create(collection=c, topic_id="1")
Turn.objects.create(conversation=conv, collection=c, number=1, turn_id="1_1", raw_utterance="q")
v = QrelsVersion.objects.create(collection_id=c.pk, name="original")
exp = PermutationExperiment.objects.create(collection_id=c.pk, name="e", qrels_version=v, systems=["current", "fu"])
p = Permutation.objects.create(experiment=exp, conversation_id=conv.pk, index=0, order=[1], is_original=True)
with connection.cursor() as cur:
    for key, docs, scores in [("k1", '["MARCO_1-2", "CAR_x y\\\\u00e9"]', "[2.5, 1]"), ("k2", "[]", "[]")]:
        cur.execute("INSERT INTO evaluation_permutationquery (experiment_id, key, query, doc_ids, scores)"
                    " VALUES (%s, %s, '[]', %s, %s)", [exp.pk, key, docs, scores])
PermutationResult.objects.create(permutation=p, system="current", queries={"1_1": 1}, per_turn={"1_1": 0.5}, mean=0.5)
PermutationResult.objects.create(permutation=p, system="fu", queries={"1_1": 1}, per_turn={}, mean=None)
PermutationResult.objects.create(permutation=p, system="run-a", run=Run.objects.create(collection_id=c.pk, name="a"))
"""
READ = (
    "from evaluation.models import PermutationQuery\n"
    "print(list(PermutationQuery.objects.order_by('key').values_list('key', 'doc_ids', 'scores')))"
)
RAW = (
    "import json\nfrom django.db import connection\n"
    "with connection.cursor() as cur:\n"
    "    cur.execute('SELECT key, doc_ids, scores FROM evaluation_permutationquery ORDER BY key')\n"
    "    print([(k, *(json.loads(v) if isinstance(v, str) else v for v in (d, s))) for k, d, s in cur.fetchall()])"
)
EXPECTED = "[('k1', ['MARCO_1-2', 'CAR_x yé'], [2.5, 1.0]), ('k2', [], [])]"
# A second result for the same run must be refused; results without a run are many.
SECOND_LINK = """
from django.db import IntegrityError, transaction
from evaluation.models import Permutation, PermutationResult, Run
p = Permutation.objects.get()
try:
    with transaction.atomic():
        PermutationResult.objects.create(permutation=p, system="run-b", run=Run.objects.get(name="a"))
    print("accepted")
except IntegrityError:
    print("refused")
"""


def test_json_permutation_rankings_become_packed_and_back(tmp_path, scratch_db):
    env = scratch_env(scratch_db, tmp_path)
    manage(env, "migrate", "-v0")
    manage(env, "migrate", "evaluation", "0009", "-v0")
    manage(env, "shell", "-c", SETUP)
    manage(env, "migrate", "evaluation", "0010", "-v0")
    assert manage(env, "shell", "-c", READ).strip().splitlines()[-1] == EXPECTED
    assert manage(env, "shell", "-c", SECOND_LINK).strip().splitlines()[-1] == "refused"
    manage(env, "migrate", "evaluation", "0009", "-v0")
    assert manage(env, "shell", "-c", RAW).strip().splitlines()[-1] == EXPECTED


# A column's storage strategy: 'e' (external, no compression attempt), 'x' (extended, PostgreSQL's default).
def _storage(env: dict[str, str]):
    return column_attributes(env, "evaluation_permutationquery", ["doc_ids", "scores"], "attstorage")


def test_permutation_rankings_are_stored_uncompressed_out_of_line_and_back(tmp_path, scratch_db):
    # PostgreSQL no longer tries pglz on blobs that barely compress; SQLite has no such option and migrates as is.
    postgres = scratch_db.startswith("postgres")
    env = scratch_env(scratch_db, tmp_path)
    manage(env, "migrate", "-v0")
    assert _storage(env) == ([("doc_ids", "e"), ("scores", "e")] if postgres else None)
    manage(env, "migrate", "evaluation", "0010", "-v0")
    assert _storage(env) == ([("doc_ids", "x"), ("scores", "x")] if postgres else None)


# An experiment created before plans, its orders sampled at creation: topic 2 has more turns over its orders.
BEFORE_PLANS = """
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from ecast.models import Collection, Conversation
at_0011 = MigrationExecutor(connection).loader.project_state(
    ("evaluation", "0011_permutation_rankings_stored_uncompressed")
).apps
Permutation, PermutationExperiment, QrelsVersion = (
    at_0011.get_model("evaluation", name) for name in ("Permutation", "PermutationExperiment", "QrelsVersion")
)
c = Collection.objects.create(name="M", year=2020)
one, two = (Conversation.objects.create(collection=c, topic_id=t) for t in ("1", "2"))
v = QrelsVersion.objects.create(collection_id=c.pk, name="original")
exp = PermutationExperiment.objects.create(collection_id=c.pk, name="e", qrels_version=v, systems=["current"])
for conv, orders in ((one, [[1, 2], [2, 1]]), (two, [[1, 2, 3], [1, 3, 2]])):
    for i, order in enumerate(orders):
        Permutation.objects.create(experiment=exp, conversation_id=conv.pk, index=i, order=order, is_original=i == 0)
print([one.pk, two.pk])
"""
# Only the plan column: the model of today has columns later migrations add.
PLAN = (
    "from evaluation.models import PermutationExperiment\n"
    "print(PermutationExperiment.objects.values_list('plan', flat=True).get())"
)


def test_an_experiment_from_before_plans_gets_one_listing_its_conversations_largest_first(tmp_path, scratch_db):
    env = scratch_env(scratch_db, tmp_path)
    manage(env, "migrate", "-v0")
    manage(env, "migrate", "evaluation", "0011", "-v0")
    one, two = json.loads(manage(env, "shell", "-c", BEFORE_PLANS).strip().splitlines()[-1])
    manage(env, "migrate", "evaluation", "0012", "-v0")
    plan = ast.literal_eval(manage(env, "shell", "-c", PLAN).strip().splitlines()[-1])
    # No labels: its orders are stored, so no chunk of it samples; the sweeper can still queue what it lacks.
    assert plan == [
        {"conversation": two, "topic": "2", "size": 6, "paths": []},
        {"conversation": one, "topic": "1", "size": 4, "paths": []},
    ]
