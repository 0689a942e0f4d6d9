"""Detection scores of preprocessing (ecast.pipeline.preprocess) on hand-labelled CAsT turns.

Labelled set: tests/ecast/pipeline/data/cast_preprocess_labels.json — every CAsT 2020 and 2021 turn (raw text copied
from the public TREC CAsT topics), plus a CAsT 2022 held-out set. Prints precision and recall per category (negative
feedback per turn; feedback and revealment per part and per turn) and the final question's exact-match accuracy, for
the current module and, when git can show it, for the module as it was before clause splitting (commit OLD_COMMIT).
Needs no ../shared data; runs in a few seconds.

The 2022 turns were labelled before the detector was run on them. Their first (blind) score, before some rules were
widened on their errors, is printed as BLIND_2022: it is the fairer estimate for unseen turns.

Usage: python bench/bench_preprocess.py
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from ecast.pipeline import preprocess  # noqa: E402
from tests.ecast.pipeline.helpers import NAMED, Scores, load, score  # noqa: E402

OLD_COMMIT = "4d4886bacd47a25fc01bd981c46f28d1bcc29db9"  # last version matching cue phrases at sentence starts only
BLIND_2022 = (
    "negative feedback P 0.786 R 0.733; feedback parts P 0.904 R 0.786; revealment parts P 0.656 R 0.875; "
    "final question (multi-part) 0.971"
)


def old_module() -> ModuleType | None:
    """The module at OLD_COMMIT, or None without git history (e.g. in the Docker image)."""
    try:
        source = subprocess.run(
            ["git", "-C", str(REPO), "show", f"{OLD_COMMIT}:ecast/pipeline/preprocess.py"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    path = Path(tempfile.mkdtemp(prefix="bench-preprocess-")) / "old_preprocess.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("old_preprocess", path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def table(title: str, columns: dict[str, Scores]) -> None:
    names = list(columns)
    print(f"\n{title}")
    print(f"  {'':34}" + "".join(f"{n:>22}" for n in names))
    print(f"  {'':34}" + "".join(f"{'precision  recall':>22}" for _ in names))
    rows = [
        ("negative feedback (turns)", lambda s: s.negative),
        ("feedback (parts)", lambda s: s.feedback),
        ("feedback (turns with any)", lambda s: s.feedback_turns),
        ("revealment (parts)", lambda s: s.revealment),
        ("revealment (turns with any)", lambda s: s.revealment_turns),
    ]
    for label, get in rows:
        cells = "".join(f"{get(s).precision:>12.3f}{get(s).recall:>10.3f}" for s in columns.values())
        counts = ", ".join(f"{get(s).tp}/{get(s).predicted}/{get(s).expected}" for s in columns.values())
        print(f"  {label:34}{cells}   (tp/pred/exp {counts})")
    for label, attr in (("final question, all turns", "final_all"), ("final question, multi-part", "final_multi")):
        cells = "".join(f"{getattr(s, attr)[0] / getattr(s, attr)[1]:>22.3f}" for s in columns.values())
        counts = ", ".join(f"{getattr(s, attr)[0]}/{getattr(s, attr)[1]}" for s in columns.values())
        print(f"  {label:34}{cells}   (exact {counts})")
    print("  turns with any difference: " + "; ".join(f"{n} {len(s.wrong)}" for n, s in columns.items()))


def main() -> None:
    dev, heldout = load(heldout=False), load(heldout=True)
    print(f"Labelled CAsT turns: {len(dev)} from 2020 + 2021, {len(heldout)} held out from 2022")
    old = old_module()
    t0 = time.perf_counter()
    preprocess.preprocess("Wow. Loads Punkt and VADER?")
    load_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    new_dev = score(preprocess.preprocess, dev)
    seconds = time.perf_counter() - t0
    new_held = score(preprocess.preprocess, heldout)
    cols_dev = {"new": new_dev}
    cols_held = {"new": new_held}
    if old is not None:
        cols_dev = {"old": score(old.preprocess, dev), **cols_dev}
        cols_held = {"old": score(old.preprocess, heldout), **cols_held}
    else:
        print("(old module not available: no git history)")
    table("CAsT 2020 + 2021 (labels written while designing the rules)", cols_dev)
    table("CAsT 2022 held-out (labelled before the detector was run on them)", cols_held)
    print(f"  first blind score of the new rules on 2022: {BLIND_2022}")
    by_id = {t["id"]: t for t in dev}
    print("\nTurns named in the issue:")
    for tid in NAMED:
        r = preprocess.preprocess(by_id[tid]["raw"])
        ok = "ok " if tid not in new_dev.wrong else "BAD"
        print(f"  {ok} {tid:7} neg={r.negative_feedback!s:5} fb={r.feedback} rev={r.revealment} q={r.final_question!r}")
    if new_dev.wrong:
        print("Differences (2020 + 2021): " + " ".join(new_dev.wrong))
    if new_held.wrong:
        print("Differences (2022 held-out): " + " ".join(new_held.wrong))
    if old is not None:
        fields = ("final_question", "feedback", "revealment", "other", "negative_feedback")
        changed = sum(
            any(getattr(old.preprocess(t["raw"]), f) != getattr(preprocess.preprocess(t["raw"]), f) for f in fields)
            for t in dev
        )
        print(f"\nOutputs changed from the old module: {changed} of {len(dev)} CAsT 2020 + 2021 turns")
    print(
        f"Punkt + VADER loaded in {load_seconds:.2f} s; {len(dev)} turns preprocessed in {seconds:.3f} s "
        f"({1000 * seconds / len(dev):.2f} ms per turn)"
    )


if __name__ == "__main__":
    main()
