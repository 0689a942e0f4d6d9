"""Qrels imports keep to the relevance scale: a grade outside 0–4 is refused with its file and line, and nothing is
written (a grade of 9 in a CAsT collection would skew every graded measure)."""

from __future__ import annotations

import pytest

from ecast.imports.services import import_file
from ecast.models import ImportJob
from evaluation.models import Qrel, QrelsVersion


@pytest.mark.django_db
def test_a_grade_outside_the_relevance_scale_is_refused_with_its_line_and_nothing_is_written(
    small_collection, tmp_path
):
    path = tmp_path / "qrels.txt"
    path.write_text("1_1 0 a 4\n1_1 0 b 9\n1_2 0 c 0\n1_2 0 d -1\n")
    job = import_file(kind="qrels", path=path, collection=small_collection)
    assert job.status == ImportJob.Status.FAILED
    assert [(e["line"], e["reason"]) for e in job.errors] == [
        (2, "grade 9 of b is outside the relevance scale 0–4"),
        (4, "grade -1 of d is outside the relevance scale 0–4"),
    ]
    assert not Qrel.objects.exists() and not QrelsVersion.objects.exists()


@pytest.mark.django_db
def test_every_grade_of_the_scale_is_accepted(small_collection, tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text("".join(f"1_1 0 p{g} {g}\n" for g in range(5)))
    job = import_file(kind="qrels", path=path, collection=small_collection)
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    assert sorted(Qrel.objects.values_list("grade", flat=True)) == [0, 1, 2, 3, 4]
