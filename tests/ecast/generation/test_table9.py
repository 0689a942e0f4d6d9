"""ECAsT Table 9 on the real CAsT 2020 and 2021 turns: "Original manual" is the paper's figure to the decimal."""

from __future__ import annotations

import pytest

from ecast.generation.reports import PAPER_TABLE9, context_removal_rows
from ecast.imports.services import import_file
from ecast.models import Collection

FILES = {year: f"cast/{year}/{year}_manual_evaluation_topics_v1.0.json" for year in (2020, 2021)}


@pytest.mark.django_db
@pytest.mark.parametrize("year", [2020, 2021])
def test_original_manual_bleu_over_every_turn_matches_the_paper(shared_data, year, capsys):
    assert import_file(kind="cast_topics", path=shared_data / FILES[year]).status == "succeeded"
    rows = {r["system"]: r for r in context_removal_rows(collection=Collection.objects.get(year=year))}
    with capsys.disabled():
        figures = ", ".join(f"{k} {r['bleu']:.2f} (paper {r['paper']})" for k, r in rows.items())
        print(f"\nTable 9, CAsT {year}: {figures}")
    original = rows["Original manual"]
    assert original["paper"] == PAPER_TABLE9[year]["Original manual"]
    if year == 2020:
        assert original["turns"] == 216 and round(original["bleu"], 2) == 44.72
