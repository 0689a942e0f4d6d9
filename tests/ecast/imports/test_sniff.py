"""Telling a file's format from its head: every real file is taken for a format its kind reads, files ecast cannot
import are named for what they are, and the decision reads a bounded head, never the whole file."""

from __future__ import annotations

import gzip
import io
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from ecast.imports import registry, sniff
from ecast.imports.formats import passages
from tests.conftest import REPO

DATA = Path(__file__).parent / "data"
CLEF_2021 = DATA / "clef_ehealth_2021"
IKAT_2025 = "ikat_2025/2025_test_topics.json.gz"

# Every real file of ../shared/data (and of the 2021 CLEF topics copied here) that some kind reads, by kind.
READ_BY_KIND = {
    "cast_topics": [
        "cast/2019/evaluation_topics_v1.0.json",
        "cast/2019/train_topics_v1.0.json",
        "cast/2020/2020_automatic_evaluation_topics_v1.0.json",
        "cast/2020/2020_manual_evaluation_topics_v1.0.json",
        "cast/2020/2020_automatic_evaluation_topics_v1.0_extended.json",
        "cast/2020/2020_manual_evaluation_topics_v1.0_extended.json",
        "cast/2020/automatic_evaluation_topics_annotated_v1.1.json",
        "cast/2021/2021_automatic_evaluation_topics_v1.0.json",
        "cast/2021/2021_manual_evaluation_topics_v1.0.json",
    ],
    "ikat_topics": [
        "ikat/2023/2023_train_topics.json",
        "ikat/2023/2023_test_topics.json",
        "ikat/2024/2024_test_topics.json",
        IKAT_2025,
    ],
    "cast2019_resolved": [
        "cast/2019/evaluation_topics_annotated_resolved_v1.0.tsv",
        "cast/2019/train_topic_sample_annotated_resolved_v1.0.tsv",
    ],
    "ecast_csv": ["ecast/ECAsT.csv"],
    "utterance_labels": ["utterance_labels/mele2021_test_set.tsv", "utterance_labels/mele2021_training_set.tsv"],
    "castur": ["utterance_labels/CAsTUR.tsv"],
    "qrels": [
        "cast/2019/2019qrels.txt",
        "cast/2019/train_topics_mod.qrel",
        "cast/2020/2020qrels.txt",
        "cast/2021/trec-cast-qrels-docs.2021.qrel",
        "clef_ehealth_2018/qrels/CLEF2018_qrel_20180914.txt",
        "clef_ehealth_2018/qrels/CLEF2018_qread_20180914.txt.gz",
        "clef_ehealth_2018/qrels/CLEF2018_qtrust_20180914.txt.gz",
    ],
    "ptkb_qrels": ["ikat/2023/ptkb_rel_nist", "ikat/2023/ptkb_rel_org"],
    "run": [
        *(f"runs/cast2019_decaf/exp{n}.run.gz" for n in range(1, 17)),
        *(f"runs/cast2020_decaf/exp{n}.run.gz" for n in range(1, 9)),
        "runs/cast2020_ielab/ielab-bm25-T5QLMAQ.run.gz",
        "clef_ehealth_2018/runs_irtask1/CUNI__CUNI_en.run1.gz",
        "clef_ehealth_2018/runs_irtask1/IELAB__IELAB_01.txt.gz",
        "clef_ehealth_2018/runs_irtask1/IMS__baseline.exp.gz",
        "clef_ehealth_2018/runs_irtask1/SINAI__SINAI_Run1_google+cTakes.result.gz",
        "clef_ehealth_2018/runs_irtask1/UEvora__UEvoraIRtask1run1.res.gz",
        "clef_ehealth_2018/runs_irtask1/baselines__Base_Bing_all.txt.gz",
        "clef_ehealth_2018/runs_irtask1/baselines__elastic_BM25f_qe.out.gz",
        "clef_ehealth_2018/runs_irtask1/baselines__indri_okapi_qe.out.gz",
        "clef_ehealth_2018/runs_irtask1/baselines__terrier_BM25_noqe.out.gz",
    ],
    "passages_jsonl": ["ikat/2023/2023_train_topics_psg_text.jsonl", "ikat/2023/2023_test_topics_psg_text.jsonl"],
    "crowd_passages": [
        f"crowd/cast2020_snippets_lajewska2023/group-{g}_batch-{b}_paragraph_regular.csv.gz"
        for g in "ABCDE"
        for b in range(1, 6)
    ],
    "cast2022_topics": [
        "cast/2022/2022_evaluation_topics_tree_v1.0.json",
        "cast/2022/2022_evaluation_topics_flattened_duplicated_v1.0.json",
    ],
    "clef_queries": ["clef_ehealth_2018/clef2018_queries_task1_task4.txt", "topics.txt", "topics_narrative.txt"],
    "responses": [
        *(f"rag/trec_rag_2024/baseline_rag24.test_{m}_top20.jsonl.fixed.gz" for m in ("gpt-4o", "command-r-plus")),
        "rag/ikat_2024_cone_rag/automatic_responses.json.gz",
        "rag/ikat_2024_cone_rag/manual_responses.json",
    ],
    "nuggets": [
        "rag/trec_rag_2024/nugget_assignment.20241108.jl.gz",
        "rag/trec_rag_2025/rag25-dev-nuggets.jsonl",
        "rag/ikat_2024_cone_rag/gold_nuggets_human.json",
        "rag/ikat_2024_cone_rag/gold_nuggets_human_deduplicated.json",
        "rag/ikat_2024_cone_rag/gold_nuggets_llm.json.gz",
    ],
    "citation_support": ["rag/trec_rag_2024/final.citation_judgments_without_prediction.20241025.jsonl"],
}

# Real files no kind reads, and what they are taken for.
NOT_READ = {
    "cast/2022/2022_evaluation_topics_turn_ids.json": "a CAsT 2022 turn ids file",
    "runs/cast2019_decaf/exp1.trec_eval.txt": "trec_eval output",
    "trec_dd_meta/trec-all-2016-evals.csv.gz": "a CSV file (header: , run, iteration, topic",
}


def _real(shared_data: Path, name: str) -> Path:
    if name == IKAT_2025:
        return DATA / name
    return CLEF_2021 / name if name.startswith("topics") else shared_data / name


@pytest.mark.parametrize(("kind", "name"), [(k, n) for k, names in READ_BY_KIND.items() for n in names])
def test_every_real_file_is_taken_for_a_format_its_kind_reads(shared_data, kind, name):
    sniffed = sniff.sniff_path(_real(shared_data, name))
    assert sniffed is not None and sniffed.formats & set(registry.formats_of(kind)), sniffed


@pytest.mark.parametrize(("name", "looks"), NOT_READ.items())
def test_real_files_no_kind_reads_are_named_for_what_they_are(shared_data, name, looks):
    sniffed = sniff.sniff_path(shared_data / name)
    assert sniffed is not None and not sniffed.formats
    assert sniffed.looks.startswith(looks)


@pytest.mark.parametrize(
    ("name", "looks"),
    [
        ("ikat/2023/2023_test_topics.json", "an iKAT 2023 topics file (topics with a 'ptkb' and 'turns')"),
        ("ikat/2024/2024_test_topics.json", "an iKAT 2024 topics file (topics with a 'ptkb' and 'turns')"),
        (IKAT_2025, "an iKAT 2025 topics file (topics with a 'ptkb' list and 'responses')"),
        (
            "ikat/2023/2023_test_topics_psg_text.jsonl",
            "an iKAT passage texts JSONL file (doc_id, passage_id, passage_text)",
        ),
    ],
)
def test_ikat_files_are_named_with_their_year(shared_data, name, looks):
    assert sniff.sniff_path(_real(shared_data, name)).looks == looks


def test_the_ikat_ptkb_judgments_are_qrels_over_statement_numbers_with_ikat_turn_ids(shared_data):
    sniffed = sniff.sniff_path(shared_data / "ikat/2023/ptkb_rel_nist")
    assert sniffed is not None and sniffed.formats == {"trec_qrels", "ikat_ptkb_qrels"}
    assert sniffed.id_scheme == "ikat" and sniffed.qids[0] == "9-1_3"
    assert sniffed.looks == "an iKAT PTKB relevance file (turn, 0, statement number, 0|1)"


def test_qrels_with_cast_2022_branch_ids_are_told_apart_from_cast_2019_to_2021_ids():
    head = sniff.Head(b"132_1-1 0 MARCO_1 2\n132_1-3 0 MARCO_2 0\n", complete=True)
    sniffed = sniff.sniff(head)
    assert sniffed is not None and sniffed.id_scheme == "cast2022" and sniffed.qids == ("132_1-1", "132_1-3")
    plain = sniff.sniff(sniff.Head(b"31_1 Q0 CAR_1 1\n", complete=True))
    assert plain is not None and plain.formats == {"trec_qrels"} and not plain.id_scheme


@pytest.mark.parametrize(
    ("content", "looks"),
    [
        (b"", "an empty file"),
        (gzip.compress(b"\n \n"), "an empty file"),
        (b"\xff\xfeh\x00i\x00", "a UTF-16 text file"),
        (b"%PDF-1.7\n", "a PDF document"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "a PNG image"),
        (b"P1\tx\x00y\n", "a binary file (it contains NUL bytes)"),
        (b'<?xml version="1.0"?>\n<!-- c -->\n<collection><doc/></collection>', "an XML file with root element"),
        (b"<!DOCTYPE html>\n<html><body>Not found</body></html>", "an HTML page"),
        (b"<top>\n<num> Number: 301\n<title> x\n</top>\n", "TREC SGML topics"),
        (b'{"132": ["1-1", "1-3"], "133": ["1-1"]}', "a CAsT 2022 turn ids file"),
        (b'{"a": 1, "b": 2}\n{"a": 3, "b": 4}\n', "JSON Lines of objects with keys 'a', 'b'"),
        (b"[1, 2, 3]", "a JSON list of int values"),
        (b"[]", "an empty JSON list"),
        (b'"HITId","WorkerId","Answer.x"\n"1","w","y"\n', "an MTurk batch CSV without Input.passage_id"),
    ],
)
def test_files_of_no_format_ecast_reads_are_named(content, looks):
    sniffed = sniff.sniff(sniff.read_head(io.BytesIO(content)))
    assert sniffed is not None and not sniffed.formats and sniffed.looks.startswith(looks), sniffed


def test_archives_are_named_also_inside_gzip(tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("qrels.txt", "31_1 0 MARCO_1 1\n")
    assert sniff.sniff(sniff.read_head(io.BytesIO(buffer.getvalue()))).looks.startswith("a ZIP archive")
    member = tmp_path / "qrels.txt"
    member.write_text("31_1 0 MARCO_1 1\n")
    tgz = tmp_path / "qrels.tar.gz"
    with tarfile.open(tgz, "w:gz") as archive:
        archive.add(member, arcname="qrels.txt")
    assert sniff.sniff_path(tgz).looks == "a tar archive inside a gzip file"


@pytest.mark.parametrize(
    ("content", "fmt"),
    [
        # A file of a format the kind reads, with bad lines: the parser, not the sniffer, reports them.
        (b"31_1 0 MARCO_1 1\n31_1 0 MARCO_2\n31_2 0 MARCO_3 x\n31_2 0 MARCO_4 2\n", "trec_qrels"),
        (b"MARCO_3\tok\nno tab here\n\tempty id\n", "passages_tsv"),
        (b'{"id": "a", "text": "x"}\nnope\n{"x": 1}\n', "passages_jsonl"),
        (b'{"id": "a", "text": "x"}', "passages_jsonl"),
        (b'[{"number": 1, "turn": [{"number": "x"}]}]', "cast_topics_json"),
        (b'[{"number": 1, "turn": [}]', "cast_topics_json"),
        (b"turn_id,manual paraphrase,raw paraphrase\n1_1,a,b\n", "ecast_csv"),
        (b"\xef\xbb\xbfcurrent_turn\trelevant_turn\n10_2\t10_1\n", "castur_tsv"),
    ],
)
def test_a_file_of_a_readable_format_with_bad_rows_is_left_to_its_parser(content, fmt):
    sniffed = sniff.sniff(sniff.read_head(io.BytesIO(content)))
    assert sniffed is not None and fmt in sniffed.formats, sniffed


def test_passage_lines_of_four_words_are_not_taken_for_qrels():
    content = "".join(f"MARCO_{i}\tpassage number {i}\n" for i in range(1, 6)).encode()
    assert sniff.sniff(sniff.read_head(io.BytesIO(content))).formats == {"passages_tsv"}


def test_plain_text_of_no_known_shape_is_left_to_the_parser():
    assert sniff.sniff(sniff.read_head(io.BytesIO(b"Hello,\nthis is a letter.\n"))) is None


class _CountingReader(io.BytesIO):
    def __init__(self, data: bytes):
        super().__init__(data)
        self.read_bytes = 0

    def read(self, size: int | None = -1) -> bytes:
        chunk = super().read(size)
        self.read_bytes += len(chunk)
        return chunk


def test_the_head_is_bounded_for_plain_and_gzip_files_however_big_they_are():
    line = b"MARCO_1\tsome passage text that repeats\n"
    plain = _CountingReader(line * 200_000)  # 8 MB
    head = sniff.read_head(plain, limit=4096)
    assert len(head.data) == 4096 and not head.complete and plain.read_bytes <= 4097
    packed = _CountingReader(gzip.compress(line * 2_000_000))  # 80 MB inflated, a few hundred kB packed
    head = sniff.read_head(packed, limit=4096)
    assert len(head.data) == 4096 and head.gzipped and not head.complete
    assert packed.read_bytes < 100_000
    small = sniff.read_head(io.BytesIO(gzip.compress(line)), limit=4096)
    assert small.data == line and small.complete


def test_a_truncated_gzip_file_is_left_to_the_reader_which_names_it_corrupt():
    broken = gzip.compress(b"".join(b"P%d\tpassage %d\n" % (i, i) for i in range(2000)))[:-30]
    head = sniff.read_head(io.BytesIO(broken))
    assert not head.complete and sniff.sniff(head).formats == {"passages_tsv"}


def test_the_passage_keys_are_the_ones_the_corpus_import_reads():
    assert (sniff.ID_KEYS, sniff.TEXT_KEYS) == (passages.ID_KEYS, passages.TEXT_KEYS)
    assert sniff.IKAT_KEYS == passages.IKAT_KEYS


def test_the_registry_lists_the_formats_of_each_kind_and_refuses_unknown_ones():
    assert registry.formats_of("clef_queries") == ("clef_queries_xml", "clef_topics_xml")
    assert registry.formats_of("qrels") == ("trec_qrels",) and registry.formats_of("nope") == ()
    assert [k.name for k in registry.readers_of("trec_run")] == ["run"]
    kind = registry.ImportKind("x", "X", lambda ctx: None, formats=("no_such_format",))
    with pytest.raises(ValueError, match="unknown format"):
        registry.register(kind)
    assert registry.get("x") is None


def test_sniffing_loads_neither_django_nor_celery():
    code = "import sys, ecast.imports.sniff; assert not {'django', 'celery'} & set(sys.modules), sys.modules"
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)


def test_a_responses_tsv_is_told_from_utterance_labels_and_passages():
    text = "turn\trun\tresponse\n1_1\tr1\tThe answer is yes.\n1_2\tr1\tIt depends on the season.\n"
    sniffed = sniff.sniff(sniff.Head(text.encode(), complete=True))
    assert sniffed is not None and sniffed.formats == {"responses_tsv"}
    labels = "31_1\tWhat is throat cancer?\tSE\n31_2\tIs it treatable?\tFT\n"
    assert sniff.sniff(sniff.Head(labels.encode(), complete=True)).formats == {"utterance_labels_tsv"}
