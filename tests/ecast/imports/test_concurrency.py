"""On PostgreSQL, ECAsT imports running at the same time reserve disjoint ids and link only their own pairs."""

from __future__ import annotations

import pytest
from django.db import transaction

from ecast.core.bulk import ids_reserve
from ecast.imports.services import import_file
from ecast.models import ImportJob, Paraphrase
from tests.concurrency_helpers import in_threads, require_postgres

ROWS = 400  # per file: enough that the reservations of the imports overlap in time


@pytest.mark.django_db(transaction=True)
def test_simultaneous_reservations_never_share_an_id():
    require_postgres("simultaneous writers are exercised on PostgreSQL (SQLite serialises every writer)")
    blocks: list[list[int]] = []

    def reserve(_: int) -> None:
        with transaction.atomic():
            for _round in range(5):
                blocks.append(ids_reserve(Paraphrase, 2000))

    assert in_threads(4, reserve) == []
    ids = [i for block in blocks for i in block]
    assert len(blocks) == 20 and len(ids) == len(set(ids)) == 40000


@pytest.mark.django_db(transaction=True)
def test_simultaneous_ecast_imports_write_every_pair_linked_to_its_own_partner(tmp_path, small_collection):
    require_postgres("simultaneous writers are exercised on PostgreSQL (SQLite serialises every writer)")
    turns = ["1_1", "1_2", "1_3", "2_1", "2_2", "2_3"]
    paths = []
    for f in range(4):
        path = tmp_path / f"file{f}.csv"
        body = "".join(f"{turns[k % 6]},file{f} manual {k},file{f} raw {k}\n" for k in range(ROWS))
        path.write_text("TURN_ID,MANUAL PARAPHRASE,RAW PARAPHRASE\n" + body, encoding="utf-8")
        paths.append(path)
    jobs: list[ImportJob] = []

    def run(i: int) -> None:
        jobs.append(import_file(kind="ecast_csv", path=paths[i], collection=small_collection))

    assert in_threads(4, run) == []
    assert [job.status for job in jobs] == [ImportJob.Status.SUCCEEDED] * 4, [job.errors[:3] for job in jobs]
    rows = {
        pk: (kind, text, pair) for pk, kind, text, pair in Paraphrase.objects.values_list("pk", "kind", "text", "pair")
    }
    assert len(rows) == 4 * ROWS * 2
    for pk, (kind, text, pair) in rows.items():
        partner_kind, partner_text, back = rows[pair]
        assert back == pk and {kind, partner_kind} == {"manual", "raw"}
        assert partner_text == text.replace(kind, partner_kind)  # "fileF manual K" ↔ "fileF raw K"
