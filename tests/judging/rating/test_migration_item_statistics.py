"""The item table's completion level keeps a fixed distinct-value estimate on PostgreSQL, so the lease statement's
per-level index reads survive an ANALYZE taken before any rating (a real ``migrate`` on a scratch database)."""

from __future__ import annotations

from tests.migrations import manage, scratch_env

# The column's distinct-value option; then, once a campaign whose items all sit at level 0 is analysed, the plan of
# one level's read.
READ = """
from django.db import connection
if connection.vendor != "postgresql":
    print("n/a")
else:
    from judging.models import Campaign, RatingItem
    with connection.cursor() as cur:
        cur.execute("SELECT attoptions FROM pg_attribute WHERE attrelid = 'judging_ratingitem'::regclass"
                    " AND attname = 'completed_count'")
        print([o for o in cur.fetchone()[0] or [] if o.startswith("n_distinct")])
"""
PLAN = """
from django.db import connection
from judging.models import Campaign, RatingItem
c = Campaign.objects.create(name="c", seed=1, sample_size=3000)
RatingItem.objects.bulk_create([RatingItem(campaign=c, position=i, turn_key=str(i), external_key=str(i), context={},
                                           passage_id="p", passage_text="t" * 300) for i in range(3000)])
with connection.cursor() as cur:
    cur.execute("ANALYZE judging_ratingitem")
    cur.execute("EXPLAIN SELECT id FROM judging_ratingitem WHERE campaign_id = %s AND NOT is_gold"
                " AND completed_count = (SELECT 3)", [c.pk])
    print(" | ".join(r[0] for r in cur.fetchall()))
"""


def test_the_completion_level_estimate_is_fixed_and_the_level_read_uses_the_index(tmp_path, scratch_db):
    postgres = scratch_db.startswith("postgres")
    env = scratch_env(scratch_db, tmp_path)
    manage(env, "migrate", "-v0")
    assert manage(env, "shell", "-c", READ).strip().splitlines()[-1] == ("['n_distinct=10']" if postgres else "n/a")
    if postgres:
        plan = manage(env, "shell", "-c", PLAN).strip().splitlines()[-1]
        assert "judging_rat_campaig_b064b3_idx" in plan and "Seq Scan" not in plan, plan
    manage(env, "migrate", "judging", "0007", "-v0")
    assert manage(env, "shell", "-c", READ).strip().splitlines()[-1] == ("[]" if postgres else "n/a")
