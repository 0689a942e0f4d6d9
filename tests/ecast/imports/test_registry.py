"""The import registry: evaluation registers the qrels, run and PTKB relevance kinds, listed where the import page
always had them."""

from __future__ import annotations

from ecast.imports import registry
from evaluation import importers


def test_other_apps_kinds_are_registered_in_the_import_page_order():
    assert registry.names() == [
        "cast_topics",
        "cast2019_resolved",
        "cast2022_topics",
        "ikat_topics",
        "ecast_csv",
        "utterance_labels",
        "castur",
        "qrels",
        "run",
        "ptkb_qrels",
        "responses",
        "nuggets",
        "citation_support",
        "passages_tsv",
        "passages_jsonl",
        "crowd_passages",
        "clef_queries",
        "ir_datasets",
    ]
    assert registry.second_file("run") == registry.second_file("qrels") == "queries"
    assert registry.second_file("cast_topics") == "resolved_tsv" and registry.second_file("castur") is None


def test_registering_again_replaces_a_kind_in_place():
    before = registry.kinds()
    importers.register()
    assert registry.kinds() == before
