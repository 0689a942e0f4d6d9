"""Rebuild the demo subset in this folder from the public files (see DATA_LICENSES.md at the repository root).

Usage: python ecast/demo/build.py /path/to/shared/data

Keeps CAsT 2020 topics 81–83: their topics (raw, manual and automatic rewrites, canonical passage text), ECAsT
paraphrases, official qrels, the texts of the crowd-annotated passages (Łajewska & Balog), the turn-dependency
annotations (v1.1), the top 100 of four DECAF runs, and iterations 1–3 of the TREC DD 2016 per-topic score table
(for the meta-evaluation demo).
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

    passages: dict[str, str] = {}
    for path in sorted((shared / "crowd" / "cast2020_snippets_lajewska2023").glob("*.csv.gz")):
        with gzip.open(path, "rb") as raw:
            reader = csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8", newline=""))
            for row in reader:
                if _topic(row["Input.turn_id"]) in TOPICS:
                    passages.setdefault(row["Input.passage_id"], " ".join(row["Input.passage"].split()))
    with open(HERE / "passages_81-83.tsv", "w", encoding="utf-8") as fh:
        for pid in sorted(passages):
            fh.write(f"{pid}\t{passages[pid]}\n")

    dd = gzip.open(shared / "trec_dd_meta" / "trec-all-2016-evals.csv.gz", "rt", encoding="utf-8").read()
    dd_lines = dd.splitlines(keepends=True)
    iteration = next(csv.reader([dd_lines[0]])).index("iteration")
    kept_dd = [dd_lines[0]] + [x for x in dd_lines[1:] if next(csv.reader([x]))[iteration] in {"1", "2", "3"}]
    with gzip.GzipFile(HERE / "trec-dd-2016-evals-iter1-3.csv.gz", "wb", mtime=0) as gz:
        gz.write("".join(kept_dd).encode("utf-8"))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
