"""Builders shared by the dataset tests: the real CAsT topics that the ECAsT release covers."""

from __future__ import annotations

from pathlib import Path

from ecast.imports.services import import_file

# The CAsT topic files whose turns ECAsT.csv paraphrases (2019-2021), under ../shared/data/cast/.
ECAST_TOPICS = [
    "2019/train_topics_v1.0.json",
    "2019/evaluation_topics_v1.0.json",
    "2020/2020_manual_evaluation_topics_v1.0.json",
    "2021/2021_manual_evaluation_topics_v1.0.json",
]


def ecast_topics_import(shared_data: Path) -> None:
    """Import every CAsT topic file that ECAsT.csv covers (a collection per year), each import succeeding."""
    for name in ECAST_TOPICS:
        assert import_file(kind="cast_topics", path=shared_data / "cast" / name).status == "succeeded", name
