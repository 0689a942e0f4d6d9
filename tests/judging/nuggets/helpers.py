"""A small RAG scene for the response-judging tests: two topics of one turn each, three passages with text (one
cited passage without), two runs answering both turns with cited sentences, a nugget bank and an LLM label set."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ecast.models import Collection, Turn
from evaluation.models import (
    CitationLabel,
    Nugget,
    NuggetAssignment,
    NuggetBank,
    Response,
    ResponseLabelSet,
    ResponseRun,
    ResponseSentence,
)
from judging.models import ResponseTask
from judging.nuggets import services
from tests import factories

PASSAGES = {
    "p1": "The Eiffel Tower is 330 metres tall and stands in Paris.",
    "p2": "Gustave Eiffel's company built the tower for the 1889 World's Fair.",
    "p3": "Paris is the capital of France.",
}
# Cited by run B's answer to turn 2_1 but absent from the corpus: that sentence cannot be judged.
MISSING = "p-missing"

# turn id -> [(text, importance)]
NUGGETS = {
    "1_1": [("Built for the 1889 World's Fair", "okay"), ("330 metres tall", "vital"), ("In Paris", "vital")],
    "2_1": [("Capital of France is Paris", "vital")],
}

# run -> turn id -> [(sentence, citations)]
ANSWERS = {
    "runA": {
        "1_1": [("The tower is 330 metres tall.", ["p1"]), ("It was built for the 1889 fair.", ["p2", "p1"])],
        "2_1": [("Paris is the capital.", ["p3"]), ("I hope this helps.", [])],
    },
    "runB": {
        "1_1": [("The tower is in Paris.", ["p1"])],
        "2_1": [("France's capital is Paris.", [MISSING])],
    },
}


@dataclass
class Scene:
    collection: Collection
    turns: dict[str, Turn]
    runs: dict[str, ResponseRun]
    bank: NuggetBank
    llm_nuggets: ResponseLabelSet
    llm_citations: ResponseLabelSet

    def response(self, run: str, turn_id: str) -> Response:
        return Response.objects.get(run=self.runs[run], turn=self.turns[turn_id])

    def nuggets(self, turn_id: str) -> list[Nugget]:
        return list(Nugget.objects.filter(bank=self.bank, turn=self.turns[turn_id]).order_by("position"))


def scene(name: str = "RAG test") -> Scene:
    coll = factories.collection_with_turns(
        name, 2024, {"1": ["How tall is the Eiffel Tower?"], "2": ["What is the capital of France?"]}
    )
    turns = factories.turns_by_id(coll)
    factories.passages(PASSAGES)
    factories.qrels_version(coll, "original", {"1_1": {"p1": 3, "p2": 2, "p3": 0}, "2_1": {"p3": 2}})
    runs = {}
    for run_name, answers in ANSWERS.items():
        run = ResponseRun.objects.create(collection=coll, name=run_name)
        runs[run_name] = run
        for turn_id, sentences in answers.items():
            response = Response.objects.create(
                run=run, turn=turns[turn_id], text=" ".join(s for s, _ in sentences), references=[]
            )
            ResponseSentence.objects.bulk_create(
                [
                    ResponseSentence(response=response, index=i, text=s, citations=c)
                    for i, (s, c) in enumerate(sentences)
                ]
            )
    bank = NuggetBank.objects.create(collection=coll, name="LLM draft")
    for turn_id, nuggets in NUGGETS.items():
        Nugget.objects.bulk_create(
            [
                Nugget(bank=bank, turn=turns[turn_id], position=i, text=t, importance=imp, origin="auto")
                for i, (t, imp) in enumerate(nuggets)
            ]
        )
    llm_nuggets = ResponseLabelSet.objects.create(
        collection=coll, name="llm nuggets", kind="nuggets", source="llm", bank=bank
    )
    llm_citations = ResponseLabelSet.objects.create(
        collection=coll, name="llm citations", kind="citations", source="llm"
    )
    s = Scene(coll, turns, runs, bank, llm_nuggets, llm_citations)
    # The LLM said "support" for every nugget of run A's answer to 1_1, and "full" for each of its first citations.
    for n in s.nuggets("1_1"):
        NuggetAssignment.objects.create(
            label_set=llm_nuggets, response=s.response("runA", "1_1"), nugget=n, label="support"
        )
    for sentence in s.response("runA", "1_1").sentences.all():
        CitationLabel.objects.create(
            label_set=llm_citations, sentence=sentence, passage_id=sentence.citations[0], support="full"
        )
    return s


def nugget_task(s: Scene, *, post_edit: bool = False, **kwargs: Any) -> ResponseTask:
    return services.task_create(
        collection=s.collection,
        kind="nuggets",
        runs=list(s.runs.values()),
        bank=s.bank,
        llm_label_set=s.llm_nuggets if post_edit else None,
        **kwargs,
    )


def citation_task(s: Scene, *, post_edit: bool = False, **kwargs: Any) -> ResponseTask:
    return services.task_create(
        collection=s.collection,
        kind="citations",
        runs=list(s.runs.values()),
        llm_label_set=s.llm_citations if post_edit else None,
        **kwargs,
    )
