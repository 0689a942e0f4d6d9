"""A file in a format the chosen kind cannot read fails with one sentence — what it looks like and what the kind
reads — the same on the import page, the REST API and ``import_data``, and nothing is written."""

from __future__ import annotations

import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from ecast.imports.services import import_file
from ecast.models import Collection, ImportJob, Passage, Turn
from evaluation.models import Qrel, Run
from tests.ecast.imports.conftest import GPT4_LABELS, ok

pytestmark = pytest.mark.django_db

TOPICS_READS = "the “CAsT topics JSON (2019/2020/2021)” import reads CAsT 2019–2021 topics JSON"
TREE = "cast/2022/2022_evaluation_topics_tree_v1.0.json"


def _refused(kind, path, **kw) -> str:
    job = import_file(kind=kind, path=path, **kw)
    assert job.status == ImportJob.Status.FAILED
    assert len(job.errors) == 1 and job.errors[0]["line"] is None and job.errors[0]["file"] == path.name, job.errors
    assert not Turn.objects.exists() and not Passage.objects.exists() and not Qrel.objects.exists()
    return job.errors[0]["reason"]


@pytest.mark.parametrize(
    ("kind", "name", "message"),
    [
        (
            "cast_topics",
            TREE,
            "This looks like a CAsT 2022 tree topics file (turns with 'participant'/'parent'), which the “CAsT 2022 "
            f"topics JSON (tree or flattened)” import reads; {TOPICS_READS} (a list of topics, each with 'number' and "
            "'turn').",
        ),
        (
            "cast_topics",
            "cast/2022/2022_evaluation_topics_flattened_duplicated_v1.0.json",
            "This looks like a CAsT 2022 flattened topics file (branch-aware turn numbers such as '1-1'), which the "
            f"“CAsT 2022 topics JSON (tree or flattened)” import reads; {TOPICS_READS}",
        ),
        (
            "cast_topics",
            "ikat/2023/2023_test_topics.json",
            "This looks like an iKAT 2023 topics file (topics with a 'ptkb' and 'turns'), which the “iKAT topics JSON "
            f"(2023–2025)” import reads; {TOPICS_READS}",
        ),
        (
            "cast_topics",
            "ikat/2024/2024_test_topics.json",
            "This looks like an iKAT 2024 topics file (topics with a 'ptkb' and 'turns'), which the “iKAT topics JSON "
            f"(2023–2025)” import reads; {TOPICS_READS}",
        ),
        (
            "ikat_topics",
            "cast/2020/2020_manual_evaluation_topics_v1.0.json",
            "This looks like CAsT topics JSON, which the “CAsT topics JSON (2019/2020/2021)” import reads; the “iKAT "
            "topics JSON (2023–2025)” import reads iKAT 2023–2025 topics JSON (a list of topics, each with a 'ptkb' "
            "and 'turns' or, 2025, 'responses').",
        ),
        (
            "passages_tsv",
            "ikat/2023/2023_train_topics_psg_text.jsonl",
            "This looks like an iKAT passage texts JSONL file (doc_id, passage_id, passage_text), which the “Passages "
            "JSONL” import reads; the “Passages TSV (id<TAB>text)” import reads passages TSV (id<TAB>text).",
        ),
        (
            "qrels",
            "runs/cast2019_decaf/exp1.run.gz",
            "This looks like a TREC run (qid Q0 docid rank score tag), which the “Run: TREC (qid Q0 docid rank score "
            "tag) or PyTerrier CSV (qid,docno,score,rank)” import reads; the “Qrels (qid iter docid grade)” import "
            "reads TREC qrels (qid iter docid grade).",
        ),
        (
            "run",
            "cast/2020/2020qrels.txt",
            "This looks like TREC qrels (qid iter docid grade), which the “Qrels (qid iter docid grade)” import "
            "reads; the “Run: TREC (qid Q0 docid rank score tag) or PyTerrier CSV (qid,docno,score,rank)” import "
            "reads TREC runs (qid Q0 docid rank score tag) or PyTerrier results CSV (qid,docno,score[,rank]).",
        ),
        (
            "passages_tsv",
            "ecast/ECAsT.csv",
            "This looks like the ECAsT paraphrase CSV, which the “ECAsT paraphrase CSV” import reads; the “Passages "
            "TSV (id<TAB>text)” import reads passages TSV (id<TAB>text).",
        ),
        (
            "cast_topics",
            "clef_ehealth_2018/clef2018_queries_task1_task4.txt",
            "This looks like CLEF eHealth queries XML (<queries><query>…), which the “CLEF eHealth topics XML, "
            f"2016–2018 and 2021 (ad hoc turns)” import reads; {TOPICS_READS}",
        ),
        (
            "qrels",
            "runs/cast2019_decaf/exp1.trec_eval.txt",
            "This looks like trec_eval output (measure, qid or 'all', value), which ecast cannot import; the “Qrels "
            "(qid iter docid grade)” import reads TREC qrels (qid iter docid grade).",
        ),
        (
            "clef_queries",
            "cast/2019/evaluation_topics_annotated_resolved_v1.0.tsv",
            "This looks like a TSV of turn ids and texts (turn_id<TAB>text), which the “CAsT 2019 resolved "
            "rewrites TSV” import reads; the “CLEF eHealth topics XML, 2016–2018 and "
            "2021 (ad hoc turns)” import reads CLEF eHealth 2016–2018 queries XML (<queries><query><id>…</id><en>…"
            "</en>) or CLEF eHealth 2021 topics XML (<topics><topic><id>…</id><query>…</query>).",
        ),
    ],
)
def test_a_real_file_of_another_format_gets_one_message(shared_data, kind, name, message):
    reason = _refused(kind, shared_data / name, collection=Collection.objects.create(name="CAsT 2020", year=2020))
    assert reason.startswith(message), reason


def test_turn_rewrites_are_not_taken_for_passages(shared_data):
    reason = _refused("passages_tsv", shared_data / "cast/2019/evaluation_topics_annotated_resolved_v1.0.tsv")
    assert reason.startswith(
        "This looks like a TSV of turn ids and texts (turn_id<TAB>text), which the “CAsT 2019 resolved rewrites TSV” "
        "import reads; the “Passages TSV (id<TAB>text)” import reads"
    ), reason


@pytest.mark.parametrize("kind", ["qrels", "passages_tsv", "run"])
def test_a_tsv_of_gpt4_response_labels_is_refused_and_no_import_is_suggested_for_it(tmp_path, kind):
    path = tmp_path / "relevance_judgement-gpt4.txt"
    path.write_text(GPT4_LABELS, encoding="utf-8")
    reason = _refused(kind, path)
    assert reason.startswith(
        "This looks like a TSV file with 4 tab-separated columns (header: conv_id, turn_id, run_id, gpt4-label), "
        "which ecast cannot import; "
    ), reason
    assert "Passages" not in reason.split(";")[0]


@pytest.mark.parametrize(
    ("kind", "content", "message"),
    [
        ("qrels", b"", "The file is empty; the “Qrels (qid iter docid grade)” import reads TREC qrels"),
        ("passages_tsv", b'<?xml version="1.0"?>\n<collection/>\n', "This looks like an XML file with root element"),
        ("run", b"PK\x03\x04\x14\x00\x00\x00", "This looks like a ZIP archive (or an Office document), which ecast"),
        ("cast_topics", b"\x00\x01\x02binary", "This looks like a binary file (it contains NUL bytes), which ecast"),
    ],
)
def test_an_empty_binary_or_unknown_xml_file_gets_one_message(tmp_path, kind, content, message):
    path = tmp_path / "upload.dat"
    path.write_bytes(content)
    assert _refused(kind, path).startswith(message)


def _cast2022_qrels(shared_data, tmp_path):
    """Qrels lines for the real CAsT 2022 turn ids (the 2022 qrels file itself is not public on GitHub)."""
    ids = json.loads((shared_data / "cast/2022/2022_evaluation_topics_turn_ids.json").read_text())
    path = tmp_path / "2022qrels.txt"
    path.write_text("".join(f"{t}_{n} 0 MARCO_{i} 1\n" for t, ns in ids.items() for i, n in enumerate(ns)))
    return path


def test_qrels_with_cast_2022_turn_ids_are_refused_until_such_turns_exist(shared_data, tmp_path):
    path = _cast2022_qrels(shared_data, tmp_path)
    coll = Collection.objects.create(name="CAsT 2020", year=2020)
    reason = _refused("qrels", path, collection=coll)
    assert reason == (
        "This looks like TREC qrels (qid iter docid grade) with CAsT 2022 turn ids such as 132_1-1, and no turn has "
        "such an id in CAsT 2020 (import its CAsT 2022 topics first, with “CAsT 2022 topics JSON (tree or "
        "flattened)”); the “Qrels (qid iter docid grade)” import reads TREC qrels (qid iter docid grade) of turns "
        "already imported, or of any ids with the option "
        "create_turns=true (each id a single-turn conversation)."
    )
    adhoc = Collection.objects.create(name="CAsT 2022 ad hoc", year=2022)
    job = ok("qrels", path, collection=adhoc, options={"create_turns": "true"})
    assert job.counts["turns"] == 205
    # The turns exist now (ad hoc), so a second version and a run of the same ids are read as usual.
    ok("qrels", path, collection=adhoc, options={"version": "again"})
    run = tmp_path / "2022.run"
    run.write_text("132_1-1 Q0 MARCO_0 1 9.5 bm25\n132_1-3 Q0 MARCO_1 1 9.0 bm25\n")
    assert ok("run", run, collection=adhoc).counts["turns"] == 2
    elsewhere = import_file(kind="run", path=run, collection=Collection.objects.create(name="CAsT 2021", year=2021))
    assert elsewhere.status == ImportJob.Status.FAILED and len(elsewhere.errors) == 1
    assert "and no turn has such an id in CAsT 2021" in elsewhere.errors[0]["reason"]
    assert not Run.objects.exclude(collection=adhoc).exists()


def test_the_ikat_ptkb_judgments_are_refused_as_qrels_until_the_ikat_topics_are_imported(shared_data):
    reason = _refused("qrels", shared_data / "ikat/2023/ptkb_rel_nist")
    assert reason.startswith(
        "This looks like an iKAT PTKB relevance file (turn, 0, statement number, 0|1), and no turn has such an id "
        "in any collection (import its iKAT topics first, with “iKAT topics JSON (2023–2025)”)"
    )


def test_a_file_of_the_right_format_keeps_its_per_line_errors(shared_data, tmp_path):
    lines = (shared_data / "cast/2019/2019qrels.txt").read_text().splitlines(keepends=True)[:10]
    lines[3] = "31_1 Q0 CAR_x\n"
    lines[6] = "31_1 Q0 CAR_y high\n"
    path = tmp_path / "qrels.txt"
    path.write_text("".join(lines))
    job = import_file(kind="qrels", path=path)
    assert [(e["line"], e["reason"]) for e in job.errors] == [
        (4, "expected 4 columns 'qid iter docid grade', found 3"),
        (7, "grade 'high' is not an integer"),
    ]


def _upload(path) -> SimpleUploadedFile:
    return SimpleUploadedFile(path.name, path.read_bytes(), content_type="application/octet-stream")


def test_the_api_refuses_the_upload_at_once_with_the_same_message(admin_api, shared_data):
    response = admin_api.post(
        "/api/imports/", {"kind": "cast_topics", "file": _upload(shared_data / TREE)}, format="multipart"
    )
    assert response.status_code == 400
    body = response.json()
    assert body["status"] == "failed" and len(body["errors"]) == 1
    assert body["errors"][0]["reason"].startswith("This looks like a CAsT 2022 tree topics file")
    assert body["errors"][0]["file"] == "2022_evaluation_topics_tree_v1.0.json" and body["errors"][0]["line"] is None
    assert not ImportJob.objects.get(pk=body["id"]).stored_path  # refused before the upload was stored


def test_the_job_page_shows_the_message_as_a_sentence(admin_client, shared_data):
    response = admin_client.post("/imports/", {"kind": "cast_topics", "file": _upload(shared_data / TREE)})
    assert response.status_code == 302
    html = admin_client.get(response["Location"]).content.decode()
    assert 'id="file-error"' in html and 'id="error-table"' not in html
    assert (
        "This looks like a CAsT 2022 tree topics file (turns with &#x27;participant&#x27;/&#x27;parent&#x27;)" in html
    )


def test_import_data_prints_the_message_and_fails(shared_data):
    err = io.StringIO()
    with pytest.raises(CommandError, match="failed with 1 error"):
        call_command("import_data", "cast_topics", str(shared_data / TREE), stderr=err)
    assert err.getvalue().startswith(
        "2022_evaluation_topics_tree_v1.0.json: This looks like a CAsT 2022 tree topics file (turns with "
        "'participant'/'parent'), which the “CAsT 2022 topics JSON (tree or flattened)” import reads;"
    )
