"""Rankings stored as JSON before the blob layout come through the migration unchanged, both ways (a real
``migrate`` on a scratch database: the suite itself runs without migrations)."""

from __future__ import annotations

from tests.migration_helpers import manage, scratch_env

SETUP = """
from django.db import connection
from ecast.models import Collection, Conversation, Turn
c = Collection.objects.create(name="M", year=2020)
t = Turn.objects.create(conversation=Conversation.objects.create(collection=c, topic_id="1"), collection=c,
                        number=1, turn_id="1_1", raw_utterance="q")
with connection.cursor() as cur:
    cur.execute("INSERT INTO evaluation_run (collection_id, name, description, source_file, import_report, created_at)"
                " VALUES (%s, 'r', '', '', '{}', '2020-01-01')", [c.pk])
    cur.execute("INSERT INTO evaluation_runturn (run_id, turn_id, doc_ids, scores)"
                " VALUES ((SELECT id FROM evaluation_run), %s, %s, %s)",
                [t.pk, '["MARCO_1-2", "CAR_x y\\\\u00e9"]', '[2.5, 1]'])
"""


def test_json_rankings_become_blobs_and_back(tmp_path):
    env = scratch_env(f"sqlite:///{tmp_path / 'db.sqlite3'}", tmp_path)
    # Every other app at its latest state (the setup creates rows through today's models), rankings as JSON.
    manage(env, "migrate", "-v0")
    manage(env, "migrate", "evaluation", "0002", "-v0")
    manage(env, "shell", "-c", SETUP)
    manage(env, "migrate", "evaluation", "0003", "-v0")
    read = "from evaluation.models import RunTurn; print(list(RunTurn.objects.values_list('doc_ids', 'scores')))"
    assert manage(env, "shell", "-c", read).strip().splitlines()[-1] == "[(['MARCO_1-2', 'CAR_x yé'], [2.5, 1.0])]"
    manage(env, "migrate", "evaluation", "0002", "-v0")
    raw = (
        "import json\nfrom django.db import connection\n"
        "with connection.cursor() as cur:\n"
        "    cur.execute('SELECT doc_ids, scores FROM evaluation_runturn')\n"
        "    print([(json.loads(d), json.loads(s)) for d, s in cur.fetchall()])"
    )
    assert manage(env, "shell", "-c", raw).strip().splitlines()[-1] == "[(['MARCO_1-2', 'CAR_x yé'], [2.5, 1.0])]"
