"""A small judged collection with passage texts for LLM judge tests (seven of its eight judged pairs have text)."""

from __future__ import annotations

from ecast.models import Collection
from evaluation.models import QrelsVersion, Run
from tests import factories
from tests.evaluation.helpers import build

TEXTS = {
    "d1": "Throat cancer is cancer that develops in the pharynx, larynx or tonsils.",
    "d2": "Bees pollinate crops.",
    "d3": "Smoking and alcohol raise the risk of cancers of the head and neck.",
    "d4": "Early throat cancer is often cured by radiation therapy or surgery.",
    "d5": "The Eiffel tower is in Paris.",
    "d6": "Colony collapse disorder kills honey bee colonies.",
    "d7": "Pesticides called neonicotinoids harm bees.",
}  # d8 has no text: it is never labelled


def judged_collection() -> tuple[Collection, QrelsVersion, dict[str, Run]]:
    coll, original, runs = build(name="LlmMini")
    factories.passages(TEXTS)
    return coll, original, runs
