"""Reading ir_datasets: the offered ids and the refusal of downloads (no Django)."""

from __future__ import annotations

import pytest

from ecast.imports import irds_source
from ecast.imports.errors import ImportFailed


def test_the_cast_v1_ids_with_qrels_are_offered_first():
    ids = irds_source.offered_ids()
    assert ids[:4] == ["trec-cast/v1/2019", "trec-cast/v1/2019/judged", "trec-cast/v1/2020", "trec-cast/v1/2020/judged"]
    assert "trec-cast/v1" not in ids  # a corpus without queries and qrels is not importable
    assert len(ids) > 100 and ids[4:] == sorted(ids[4:])


def test_a_missing_file_is_refused_while_downloads_are_off_even_when_ir_datasets_has_several_mirrors(
    ir_datasets_home,
):
    # The 2019 training qrels have one source; the evaluation qrels a NIST address and ir_datasets' mirror.
    with pytest.raises(ImportFailed) as failed:
        irds_source.load("trec-cast/v0/train", allow_downloads=False)
    reason = failed.value.errors[0]["reason"]
    assert str(ir_datasets_home / "trec-cast" / "2019" / "train_topics_v1.0.json") in reason
    assert "https://raw.githubusercontent.com/daltonj/treccastweb/" in reason
    (ir_datasets_home / "trec-cast" / "2019" / "2019qrels.txt").rename(ir_datasets_home / "moved")
    try:
        with pytest.raises(ImportFailed, match="2019qrels.txt is missing from the local ir_datasets cache"):
            irds_source.load("trec-cast/v1/2019", allow_downloads=False)
    finally:
        (ir_datasets_home / "moved").rename(ir_datasets_home / "trec-cast" / "2019" / "2019qrels.txt")
