"""The item table's completion level keeps a fixed distinct-value estimate on PostgreSQL, so the lease statement's
per-level index reads survive an ANALYZE taken before any rating (a real ``migrate`` on a scratch database)."""

from __future__ import annotations

from tests.migration_helpers import column_attributes, manage, scratch_env


def _n_distinct(env: dict[str, str]) -> list[str] | None:
    """completed_count's distinct-value option as the migrations left it; None off PostgreSQL."""
    found = column_attributes(env, "judging_ratingitem", ["completed_count"], "attoptions")
    return None if found is None else [o for o in found[0][1] or [] if o.startswith("n_distinct")]


# Once a campaign whose items all sit at level 0 is analysed, the plan of one level's read.
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
    assert _n_distinct(env) == (["n_distinct=10"] if postgres else None)
    if postgres:
        plan = manage(env, "shell", "-c", PLAN).strip().splitlines()[-1]
        assert "judging_rat_campaig_b064b3_idx" in plan and "Seq Scan" not in plan, plan
    manage(env, "migrate", "judging", "0007", "-v0")
    assert _n_distinct(env) == ([] if postgres else None)
