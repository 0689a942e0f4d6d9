"""Rebuild the demo subset in this folder from the public files (see DATA_LICENSES.md at the repository root).

Usage: python ecast/demo/build.py /path/to/shared/data

Keeps CAsT 2020 topics 81–83: their topics (raw, manual and automatic rewrites, canonical passage text), ECAsT
paraphrases, official qrels, the turn-dependency annotations (v1.1), the top 100 of four DECAF runs, and iterations
1–3 of the TREC DD 2016 per-topic score table (for the meta-evaluation demo). From TREC iKAT 2023: the four test
conversations that NIST and the organisers both assessed most PTKB statements of (their topics with the PTKB, and
both published PTKB relevance files restricted to their turns), for the PTKB task and agreement demo.

The demo passage corpus (``corpus_*.tsv.gz``, what the built-in BM25 baselines search) is every public passage text
found: CAsT 2020 canonical passages (the ``_extended`` topic files, all 25 topics), the crowd-annotated CAsT 2020
passages (Łajewska & Balog, all 25 topics), CAsT 2021 canonical passages and iKAT 2023 provenance passages. Each
id is kept once: the crowd copy of a 2020 passage wins over the canonical one (it has MS MARCO's mis-decoded
characters such as "â€™" repaired), otherwise the first text seen.
Rows are copied unchanged apart from the selection; passage texts have tabs/newlines folded to spaces so that
they fit the `id<TAB>text` format.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import sys
from pathlib import Path

TOPICS = {"81", "82", "83"}
HERE = Path(__file__).resolve().parent


def _topic(turn_id: str) -> str:
    return turn_id.split("_", 1)[0]


def main(shared: Path) -> None:
    """Write every demo file from ``shared`` (the shared/data folder)."""
    # The manual _extended file carries raw, manual and automatic rewrites plus the canonical passage text.
    name = "2020_manual_evaluation_topics_v1.0_extended.json"
    topics = json.loads((shared / "cast" / "2020" / name).read_text(encoding="utf-8"))
    subset = [t for t in topics if str(t["number"]) in TOPICS]
    (HERE / name).write_text(json.dumps(subset, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

    # Turn-dependency annotations (v1.1 numbering: topic 81 has an extra turn 6), for the SE/FT/PT derivation.
    annotated = json.loads((shared / "cast" / "2020" / "automatic_evaluation_topics_annotated_v1.1.json").read_text())
    subset = [t for t in annotated if str(t["number"]) in TOPICS]
    (HERE / "automatic_evaluation_topics_annotated_v1.1_81-83.json").write_text(
        json.dumps(subset, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )

    with open(shared / "ecast" / "ECAsT.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    with open(HERE / "ECAsT_81-83.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(rows[0])
        writer.writerows(r for r in rows[1:] if _topic(r[0]) in TOPICS)

    lines = (shared / "cast" / "2020" / "2020qrels.txt").read_text(encoding="utf-8").splitlines(keepends=True)
    (HERE / "2020qrels_81-83.txt").write_text("".join(x for x in lines if _topic(x.split()[0]) in TOPICS))

    for exp in ("exp1", "exp2", "exp3", "exp4"):
        with gzip.open(shared / "runs" / "cast2020_decaf" / f"{exp}.run.gz", "rt", encoding="utf-8") as fh:
            kept = [x for x in fh if _topic(x.split()[0]) in TOPICS and int(x.split()[3]) < 100]
        (HERE / f"decaf_{exp}_81-83.run").write_text("".join(kept), encoding="utf-8")

    _corpus(shared)
    _ikat(shared)

    dd = gzip.open(shared / "trec_dd_meta" / "trec-all-2016-evals.csv.gz", "rt", encoding="utf-8").read()
    dd_lines = dd.splitlines(keepends=True)
    iteration = next(csv.reader([dd_lines[0]])).index("iteration")
    kept_dd = [dd_lines[0]] + [x for x in dd_lines[1:] if next(csv.reader([x]))[iteration] in {"1", "2", "3"}]
    with gzip.GzipFile(HERE / "trec-dd-2016-evals-iter1-3.csv.gz", "wb", mtime=0) as gz:
        gz.write("".join(kept_dd).encode("utf-8"))


IKAT_CONVERSATIONS = ("9-2", "14-2", "17-2", "18-2")


def _ikat(shared: Path) -> None:
    """iKAT 2023 test conversations with their PTKB, and the NIST and organisers' PTKB relevance of their turns."""
    folder = shared / "ikat" / "2023"
    topics = json.loads((folder / "2023_test_topics.json").read_text(encoding="utf-8"))
    kept = [t for t in topics if t["number"] in IKAT_CONVERSATIONS]
    (HERE / "ikat2023_test_topics_demo.json").write_text(json.dumps(kept, indent=1) + "\n", encoding="utf-8")
    for name in ("ptkb_rel_nist", "ptkb_rel_org"):
        lines = (folder / name).read_text(encoding="utf-8").splitlines(keepends=True)
        subset = [x for x in lines if x.split()[0].rsplit("_", 1)[0] in IKAT_CONVERSATIONS]
        (HERE / f"{name}_demo").write_text("".join(subset), encoding="utf-8")


def _fold(text: str) -> str:
    return " ".join(text.split())


def _write_passages(name: str, passages: dict[str, str]) -> None:
    body = "".join(f"{pid}\t{passages[pid]}\n" for pid in sorted(passages))
    with gzip.GzipFile(HERE / name, "wb", mtime=0) as gz:
        gz.write(body.encode("utf-8"))


def _corpus(shared: Path) -> None:
    """The four corpus files; an id appears in one file only (see the module docstring for which text wins)."""
    crowd: dict[str, str] = {}
    for path in sorted((shared / "crowd" / "cast2020_snippets_lajewska2023").glob("*.csv.gz")):
        with gzip.open(path, "rb") as raw:
            for row in csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8", newline="")):
                crowd.setdefault(row["Input.passage_id"], _fold(row["Input.passage"]))

    canonical20: dict[str, str] = {}
    for kind in ("manual", "automatic"):
        path = shared / "cast" / "2020" / f"2020_{kind}_evaluation_topics_v1.0_extended.json"
        for topic in json.loads(path.read_text(encoding="utf-8")):
            for turn in topic["turn"]:
                pid = turn[f"{kind}_canonical_result_id"]
                if pid not in crowd:
                    canonical20.setdefault(pid, _fold(turn["canonical_passage"]))

    # CAsT 2021 names a document and the index of the passage in it; ecast's topic import uses "<doc>-<index>".
    canonical21: dict[str, str] = {}
    for kind in ("manual", "automatic"):
        path = shared / "cast" / "2021" / f"2021_{kind}_evaluation_topics_v1.0.json"
        for topic in json.loads(path.read_text(encoding="utf-8")):
            for turn in topic["turn"]:
                if turn.get("passage"):
                    canonical21.setdefault(
                        f"{turn['canonical_result_id']}-{turn['passage_id']}", _fold(turn["passage"])
                    )

    # iKAT runs name a passage "<doc_id>:<passage_id>".
    ikat: dict[str, str] = {}
    for split in ("train", "test"):
        path = shared / "ikat" / "2023" / f"2023_{split}_topics_psg_text.jsonl"
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                obj = json.loads(line)
                ikat.setdefault(f"{obj['doc_id']}:{obj['passage_id']}", _fold(obj["passage_text"]))

    _write_passages("corpus_cast2020_canonical.tsv.gz", canonical20)
    _write_passages("corpus_cast2020_crowd.tsv.gz", crowd)
    _write_passages("corpus_cast2021_canonical.tsv.gz", canonical21)
    _write_passages("corpus_ikat2023_provenance.tsv.gz", ikat)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
