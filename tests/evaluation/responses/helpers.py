"""Builders of response-judging scenes for tests: a small hand-made collection, and the TREC RAG 2024 files
(nugget assignments, citation judgments) loaded straight into the stores.

The loaders are a test's own minimal reading of the files (one conversation with one turn per topic, one run per
``run_id``), not the product's importer."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ecast.models import Collection, Conversation, Turn
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

NUGGETS_FILE = "rag/trec_rag_2024/nugget_assignment.20241108.jl.gz"
CITATIONS_FILE = "rag/trec_rag_2024/final.citation_judgments_without_prediction.20241025.jsonl"
# The file's support grades as the store names them; "-1" (not judged) gets no label.
SUPPORT = {"2": "full", "1": "partial", "0": "none"}


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:  # type: ignore[operator]
        for line in handle:
            if line.strip():
                yield json.loads(line)


def _text(sentence: Mapping[str, Any]) -> str:
    # 11 sentences of the citation file have the text NaN (a bare JSON NaN): kept, judged, with no text.
    return sentence["text"] if isinstance(sentence["text"], str) else ""


def collection_of_topics(
    name: str, qids: Iterable[str], queries: Mapping[str, str] | None = None
) -> tuple[Collection, dict[str, Turn]]:
    """A collection with one conversation of one turn per topic id (the turn id is the topic id; the utterance is
    the query given, else the id)."""
    coll = Collection.objects.create(name=name, year=2024, relevance_threshold=1)
    turns = {}
    for qid in sorted(set(qids)):
        conv = Conversation.objects.create(collection=coll, topic_id=qid)
        text = (queries or {}).get(qid, qid)
        turns[qid] = Turn.objects.create(
            conversation=conv, collection=coll, number=1, turn_id=qid, raw_utterance=text, manual_rewrite=text
        )
    return coll, turns


def _runs(coll: Collection, names: Iterable[str]) -> dict[str, ResponseRun]:
    made = ResponseRun.objects.bulk_create(
        [ResponseRun(collection=coll, name=n, source_format="rag24") for n in sorted(set(names))]
    )
    return {r.name: r for r in made}


def load_nugget_assignments(rows: Sequence[Mapping[str, Any]], *, name: str = "RAG 2024") -> ResponseLabelSet:
    """The nugget-assignment file's rows as a bank (one per file), runs, responses and an imported label set."""
    coll, turns = collection_of_topics(name, (r["qid"] for r in rows), {r["qid"]: r["query"] for r in rows})
    runs = _runs(coll, (r["run_id"] for r in rows))
    bank = NuggetBank.objects.create(collection=coll, name="NIST post-edited")
    nuggets: dict[tuple[str, str], Nugget] = {}
    for row in rows:
        for i, n in enumerate(row["nuggets"]):
            key = (row["qid"], n["text"])
            if key not in nuggets:
                nuggets[key] = Nugget(
                    bank=bank, turn=turns[row["qid"]], position=i, text=n["text"], importance=n["importance"]
                )
    Nugget.objects.bulk_create(list(nuggets.values()))
    responses = Response.objects.bulk_create(
        [
            Response(
                run=runs[r["run_id"]], turn=turns[r["qid"]], text=r["answer_text"], length=r.get("response_length")
            )
            for r in rows
        ]
    )
    label_set = ResponseLabelSet.objects.create(
        collection=coll, name="NIST assignments", kind="nuggets", source="imported", bank=bank
    )
    NuggetAssignment.objects.bulk_create(
        [
            NuggetAssignment(
                label_set=label_set, response=resp, nugget=nuggets[(r["qid"], n["text"])], label=n["assignment"]
            )
            for r, resp in zip(rows, responses, strict=True)
            for n in r["nuggets"]
        ],
        batch_size=5000,
    )
    return label_set


def load_citation_judgments(rows: Sequence[Mapping[str, Any]], *, name: str = "RAG 2024 support") -> ResponseLabelSet:
    """The citation-support file's rows as runs, responses with their sentences and an imported label set."""
    coll, turns = collection_of_topics(name, (r["topic_id"] for r in rows))
    runs = _runs(coll, (r["run_id"] for r in rows))
    responses = Response.objects.bulk_create(
        [
            Response(run=runs[r["run_id"]], turn=turns[r["topic_id"]], text=" ".join(map(_text, r["sentences"])))
            for r in rows
        ]
    )
    sentences = ResponseSentence.objects.bulk_create(
        [
            ResponseSentence(
                response=resp,
                index=s["sentenceID"],
                text=_text(s),
                citations=[c["reference"] for c in sorted(s["citations"], key=lambda c: c["citationID"])],
            )
            for r, resp in zip(rows, responses, strict=True)
            for s in r["sentences"]
        ],
        batch_size=5000,
    )
    label_set = ResponseLabelSet.objects.create(
        collection=coll, name="NIST support", kind="citations", source="imported"
    )
    flat = [s for r in rows for s in r["sentences"]]
    CitationLabel.objects.bulk_create(
        [
            CitationLabel(label_set=label_set, sentence=row, passage_id=c["reference"], support=SUPPORT[c["support"]])
            for s, row in zip(flat, sentences, strict=True)
            for c in s["citations"]
            if c["support"] in SUPPORT
        ],
        batch_size=5000,
    )
    return label_set


def small_scene() -> dict[str, Any]:
    """A hand-made collection: two topics (t1, t2), two runs (A answers both, B only t1), a bank with 3 vital + 2
    okay nuggets on t1 and 1 vital on t2, a nugget label set and a citation label set, every label hand-chosen."""
    coll, turns = collection_of_topics("Responses scene", ["t1", "t2"])
    run_a = ResponseRun.objects.create(collection=coll, name="A")
    run_b = ResponseRun.objects.create(collection=coll, name="B")
    a1 = Response.objects.create(run=run_a, turn=turns["t1"], text="A on t1.", references=["p1", "p2"])
    a2 = Response.objects.create(run=run_a, turn=turns["t2"], text="A on t2.")
    b1 = Response.objects.create(run=run_b, turn=turns["t1"], text="B on t1.")
    bank = NuggetBank.objects.create(collection=coll, name="post-edited")
    imp = ["vital", "vital", "vital", "okay", "okay"]
    n1 = [
        Nugget.objects.create(bank=bank, turn=turns["t1"], position=i, text=f"n{i}", importance=v)
        for i, v in enumerate(imp)
    ]
    n2 = Nugget.objects.create(bank=bank, turn=turns["t2"], position=0, text="m0", importance="vital", origin="added")
    nls = ResponseLabelSet.objects.create(
        collection=coll, name="assessed", kind="nuggets", source="assessed", bank=bank
    )
    # A on t1: vital S, P, N; okay S, P → V_strict 1/3, A_strict 2/5, V 1.5/3, A 3/5.
    for n, label in zip(n1, ["support", "partial_support", "not_support", "support", "partial_support"], strict=True):
        NuggetAssignment.objects.create(label_set=nls, response=a1, nugget=n, label=label, condition="blind")
    # A on t2: the one vital nugget supported → all 1.
    NuggetAssignment.objects.create(label_set=nls, response=a2, nugget=n2, label="support", condition="post_edit")
    # B on t1: only two of five labelled → not scored yet.
    for n in n1[:2]:
        NuggetAssignment.objects.create(label_set=nls, response=b1, nugget=n, label="support", condition="blind")
    # Citations: A's t1 answer has six sentences, B's t1 answer two; t2 has no label (not a judged topic).
    cites = [["p1", "p2"], ["p2"], ["p3"], ["p4"], [], ["p5"]]
    sa = [
        ResponseSentence.objects.create(response=a1, index=i, text=f"A sentence {i}.", citations=c)
        for i, c in enumerate(cites)
    ]
    sb = [
        ResponseSentence.objects.create(response=b1, index=i, text=f"B sentence {i}.", citations=["p1"])
        for i in range(2)
    ]
    ResponseSentence.objects.create(response=a2, index=0, text="A on t2.", citations=["p9"])
    cls = ResponseLabelSet.objects.create(collection=coll, name="support", kind="citations", source="assessed")
    for s, p, v in [
        (sa[0], "p1", "full"),
        (sa[0], "p2", "none"),  # a later citation: never read
        (sa[1], "p2", "partial"),
        (sa[2], "p3", "none"),
        # sa[3]: cited, not judged; sa[4]: no citation
        (sa[5], "p5", "not_needed"),
        (sb[0], "p1", "full"),
        (sb[1], "p1", "full"),
    ]:
        CitationLabel.objects.create(label_set=cls, sentence=s, passage_id=p, support=v, condition="blind")
    return {"collection": coll, "runs": (run_a, run_b), "responses": (a1, a2, b1), "bank": bank, "nugget_set": nls,
            "citation_set": cls, "turns": turns}  # fmt: skip
