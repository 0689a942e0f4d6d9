"""Scores stored one row per measure before the per-turn layout come through the migration unchanged, both ways
(a real ``migrate`` on a scratch database: the suite itself runs without migrations)."""

from __future__ import annotations

from tests.migration_helpers import manage, scratch_env

SETUP = """
from django.db import connection
from ecast.models import Collection, Conversation, Turn
c = Collection.objects.create(name="M", year=2020)
conv = Conversation.objects.create(collection=c, topic_id="1")
t1 = Turn.objects.create(conversation=conv, collection=c, number=1, turn_id="1_1", raw_utterance="q")
t2 = Turn.objects.create(conversation=conv, collection=c, number=2, turn_id="1_2", raw_utterance="q")
with connection.cursor() as cur:
    cur.execute("INSERT INTO evaluation_run (collection_id, name, description, source_file, import_report, created_at)"
                " VALUES (%s, 'r', '', '', '{}', '2020-01-01')", [c.pk])
    cur.execute("INSERT INTO evaluation_qrelsversion (collection_id, name, description, source_file, created_at,"
                " updated_at) VALUES (%s, 'original', '', '', '2020-01-01', '2020-01-01')", [c.pk])
    for turn, measure, value in [(t1, "nDCG@3", 0.25), (t1, "AP", 1 / 3), (t2, "nDCG@3", 0.0), (t2, "AP", 0.5)]:
        cur.execute("INSERT INTO evaluation_score (run_id, turn_id, version_id, measure, value, threshold,"
                    " computed_at) VALUES ((SELECT id FROM evaluation_run), %s, (SELECT id FROM"
                    " evaluation_qrelsversion), %s, %s, 2, '2020-01-02')", [turn.pk, measure, value])
"""

READ = (
    "from evaluation.selectors import score_rows\n"
    "print(sorted((r.turn_id, r.measure, r.value, r.threshold) for r in score_rows()))"
)
RAW = (
    "from django.db import connection\n"
    "with connection.cursor() as cur:\n"
    "    cur.execute('SELECT t.turn_id, s.measure, s.value, s.threshold FROM evaluation_score s'\n"
    "                ' JOIN ecast_turn t ON t.id = s.turn_id')\n"
    "    print(sorted(cur.fetchall()))"
)
EXPECTED = str(
    sorted([("1_1", "AP", 1 / 3, 2), ("1_1", "nDCG@3", 0.25, 2), ("1_2", "AP", 0.5, 2), ("1_2", "nDCG@3", 0.0, 2)])
)


def test_per_measure_scores_become_per_turn_rows_and_back(tmp_path, scratch_db):
    env = scratch_env(scratch_db, tmp_path)
    manage(env, "migrate", "-v0")
    manage(env, "migrate", "evaluation", "0005", "-v0")
    manage(env, "shell", "-c", SETUP)
    manage(env, "migrate", "evaluation", "0006", "-v0")
    assert manage(env, "shell", "-c", READ).strip().splitlines()[-1] == EXPECTED
    count = "from evaluation.models import TurnScores; print(TurnScores.objects.count())"
    assert manage(env, "shell", "-c", count).strip().splitlines()[-1] == "2"
    manage(env, "migrate", "evaluation", "0005", "-v0")
    assert manage(env, "shell", "-c", RAW).strip().splitlines()[-1] == EXPECTED
