"""Every job kept through the one job contract's migrations: the status words each kind stored before become the
one vocabulary (and come back on the way down), renamed progress fields keep their values, and a pool still
building gets its build job (a real ``migrate`` on a scratch database: the suite itself runs without migrations)."""

from __future__ import annotations

import ast

from tests.migration_helpers import manage, scratch_env

BEFORE = [
    ("ecast", "0006_bulk_paraphrase_rows_without_fk_checks"),
    ("evaluation", "0012_permutation_experiment_plan"),
    ("judging", "0009_rating_indexes_not_duplicated"),
]

# Rows as the code before the contract wrote them, through the models of that migration state.
SETUP = f"""
from django.db import connection
from django.db.migrations.loader import MigrationLoader
apps = MigrationLoader(connection).project_state({BEFORE!r}).apps
m = lambda app, name: apps.get_model(app, name)
coll = m("ecast", "Collection").objects.create(name="M", year=2020)
conv = m("ecast", "Conversation").objects.create(collection=coll, topic_id="1")
turns = [m("ecast", "Turn").objects.create(conversation=conv, collection=coll, number=n, turn_id=f"1_{{n}}",
         raw_utterance="q") for n in (1, 2, 3)]
version = m("evaluation", "QrelsVersion").objects.create(collection=coll, name="original")
m("ecast", "ImportJob").objects.create(kind="qrels", file_name="queued.txt", status="pending")
m("ecast", "ImportJob").objects.create(kind="qrels", file_name="done.txt", status="succeeded", progress_done=3,
                                       progress_total=3)
gen = m("ecast", "GenerationJob").objects.create(collection=coll, name="g", status="running", total_turns=3)
for turn, status in zip(turns, ["done", "failed", "pending"]):
    m("ecast", "GenerationTurn").objects.create(job=gen, turn=turn, status=status)
m("evaluation", "EvaluationJob").objects.create(collection=coll, kind="full", status="done", done=4, total=4)
for name, status in [("retrieving", "running"), ("scoring", "scoring"), ("finished", "done")]:
    m("evaluation", "PermutationExperiment").objects.create(collection=coll, name=name, qrels_version=version,
                                                             status=status, chunks_done=2, chunks_total=3)
m("evaluation", "PivotAnalysis").objects.create(collection=coll, name="pv", status="pending")
m("evaluation", "BudgetSimulation").objects.create(collection=coll, name="b", status="done")
m("judging", "LlmJudgeJob").objects.create(collection=coll, source_version=version, model="smollm", model_id="s",
                                           status="pending", done=2, total=5)
m("judging", "Pool").objects.create(collection=coll, name="building", qrels_version=version, status="building")
m("judging", "Pool").objects.create(collection=coll, name="broken", qrels_version=version, status="failed",
                                    error="disk full")
m("judging", "Pool").objects.create(collection=coll, name="open", qrels_version=version, status="open")
"""

READ = """
from ecast.models import GenerationJob, ImportJob
from evaluation.models import BudgetSimulation, EvaluationJob, PermutationExperiment, PivotAnalysis
from judging.models import LlmJudgeJob, PoolBuild
print(repr({
    "import": sorted(ImportJob.objects.values_list("file_name", "status")),
    "generation": list(GenerationJob.objects.values_list("status", "progress_done", "progress_total")),
    "evaluation": list(EvaluationJob.objects.values_list("status", "progress_done", "progress_total")),
    "permutation": sorted(PermutationExperiment.objects.values_list("name", "status", "message", "progress_done",
                                                                    "progress_total")),
    "analyses": [PivotAnalysis.objects.get().status, BudgetSimulation.objects.get().status],
    "llm": list(LlmJudgeJob.objects.values_list("status", "progress_done", "progress_total")),
    "pool builds": sorted(PoolBuild.objects.values_list("pool__name", "status", "error")),
}))
"""

RAW = """
from django.db import connection
with connection.cursor() as cur:
    out = {}
    for table in ["ecast_importjob", "ecast_generationjob", "evaluation_evaluationjob",
                  "evaluation_permutationexperiment", "evaluation_pivotanalysis", "evaluation_budgetsimulation",
                  "judging_llmjudgejob"]:
        cur.execute(f"SELECT status FROM {table} ORDER BY id")
        out[table] = [row[0] for row in cur.fetchall()]
print(repr(out))
"""


def last_line(text: str):
    return ast.literal_eval(text.strip().splitlines()[-1])


def test_every_job_keeps_its_status_in_the_one_vocabulary_and_back(tmp_path, scratch_db):
    env = scratch_env(scratch_db, tmp_path)
    for app, name in reversed(BEFORE):  # forward to the state before the contract, app by app
        manage(env, "migrate", app, name.split("_")[0], "-v0")
    manage(env, "shell", "-c", SETUP)
    before = last_line(manage(env, "shell", "-c", RAW))

    manage(env, "migrate", "-v0")
    assert last_line(manage(env, "shell", "-c", READ)) == {
        "import": [("done.txt", "succeeded"), ("queued.txt", "queued")],
        "generation": [("running", 2, 3)],  # done and failed turns are finished
        "evaluation": [("succeeded", 4, 4)],
        "permutation": [
            ("finished", "succeeded", "", 2, 3),
            ("retrieving", "running", "Retrieving", 2, 3),
            ("scoring", "running", "Scoring", 2, 3),
        ],
        "analyses": ["queued", "succeeded"],
        "llm": [("queued", 2, 5)],
        "pool builds": [("broken", "failed", "disk full"), ("building", "queued", "")],
    }

    for app, name in reversed(BEFORE):
        manage(env, "migrate", app, name.split("_")[0], "-v0")
    assert last_line(manage(env, "shell", "-c", RAW)) == before
