"""Response runs, a nugget bank and qrels over the small judged collection of the LLM judge tests."""

from __future__ import annotations

from ecast.models import Collection, Passage
from evaluation.models import Nugget, NuggetBank, QrelsVersion, Response, ResponseRun, ResponseSentence
from tests import factories
from tests.judging.llm.helpers import judged_collection

# run → turn → [(sentence, citations)]
ANSWERS = {
    "sysA": {
        "1_1": [
            ("Throat cancer develops in the pharynx.", ["d1"]),
            ("Smoking raises the risk.", ["d3", "d2"]),
            ("I hope this helps.", []),
        ],
        "2_1": [("Neonicotinoids harm bees.", ["d7", "d8"])],  # d8 has no text: never labelled
    },
    "sysB": {"1_1": [("Bees pollinate crops.", ["d2"])]},
}
NUGGETS = {
    "1_1": [("Throat cancer develops in the pharynx or larynx", "vital"), ("Smoking is a risk factor", "okay")],
    "2_1": [("Pesticides harm bees", "vital")],
}


def response_collection() -> tuple[Collection, QrelsVersion, dict[str, ResponseRun], NuggetBank]:
    coll, original, _ = judged_collection()
    coll.corpus.add(*Passage.objects.exclude(text=""))
    turns = factories.turns_by_id(coll)
    runs = {}
    for name, answers in ANSWERS.items():
        run = ResponseRun.objects.create(collection=coll, name=name)
        for turn_id, sentences in answers.items():
            response = Response.objects.create(
                run=run, turn=turns[turn_id], text=" ".join(s for s, _ in sentences), references=[]
            )
            for i, (text, cited) in enumerate(sentences):
                ResponseSentence.objects.create(response=response, index=i, text=text, citations=cited)
        runs[name] = run
    bank = NuggetBank.objects.create(collection=coll, name="post-edited")
    for turn_id, nuggets in NUGGETS.items():
        for i, (text, importance) in enumerate(nuggets):
            Nugget.objects.create(bank=bank, turn=turns[turn_id], position=i, text=text, importance=importance)
    return coll, original, runs, bank
