"""iKAT PTKB relevance as assessments of a PTKB companion collection: the two published files import with their
counts, export back to the same lines, compare in the agreement report with scikit-learn's κ, and a statement run
is scored as pytrec_eval scores it."""

from __future__ import annotations

import re
import time

import pytest
import pytrec_eval
from sklearn.metrics import cohen_kappa_score

from ecast.imports.formats.qrels import read_qrels
from ecast.imports.formats.runs import read_run
from ecast.imports.services import import_file
from ecast.models import Collection, Conversation, ImportJob, PtkbStatement, Turn
from evaluation import services
from evaluation.agreement import selectors as asel
from evaluation.models import Qrel, QrelsVersion, Run
from evaluation.selectors import per_turn_scores, score_means
from judging.relevance import selectors as jsel
from tests.ecast.imports.conftest import ok

pytestmark = pytest.mark.django_db


def _version(job: ImportJob) -> QrelsVersion:
    return QrelsVersion.objects.get(pk=job.counts["version_id"])


def test_both_published_files_import_into_the_ptkb_companion_with_their_counts(ikat2023, ptkb_nist, ptkb_org):
    started = time.perf_counter()
    nist = ok("ptkb_qrels", ptkb_nist)
    org = ok("ptkb_qrels", ptkb_org)
    seconds = time.perf_counter() - started

    companion = Collection.objects.get(ptkb_of=ikat2023)
    assert nist.collection == org.collection == companion and companion.name == "iKAT 2023 PTKB"
    assert companion.relevance_threshold == 1
    # The companion mirrors the topics: 36 conversations, 427 turns, 363 statements, the same ids and texts.
    assert Conversation.objects.filter(collection=companion).count() == 36
    assert Turn.objects.filter(collection=companion).count() == 427
    assert PtkbStatement.objects.filter(conversation__collection=companion).count() == 363
    mirrored = Turn.objects.get(collection=companion, turn_id="9-1_3")
    original = Turn.objects.get(collection=ikat2023, turn_id="9-1_3")
    assert (mirrored.raw_utterance, mirrored.manual_rewrite) == (original.raw_utterance, original.manual_rewrite)

    assert (nist.counts["judgments"], nist.counts["relevant"], nist.counts["turns"]) == (1030, 224, 98)
    assert (org.counts["judgments"], org.counts["relevant"], org.counts["turns"]) == (1158, 182, 112)
    assert [v.name for v in QrelsVersion.objects.filter(collection=companion)] == ["ptkb_rel_nist", "ptkb_rel_org"]
    assert not Qrel.objects.filter(version__collection=ikat2023).exists()
    print(f"\nPTKB import: NIST + organisers in {seconds:.3f} s ({nist.counts} / {org.counts})")


def test_a_reimport_of_the_same_file_changes_nothing(ikat2023, ptkb_nist):
    first = ok("ptkb_qrels", ptkb_nist)
    again = ok("ptkb_qrels", ptkb_nist)
    assert again.counts["version_id"] == first.counts["version_id"]
    assert (again.counts["turns_changed"], again.counts["version_created"]) == (0, 0)
    assert Qrel.objects.filter(version_id=first.counts["version_id"]).count() == 1030


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("99-9_1 0 1 1", "unknown turn 99-9_1 in iKAT 2023 (import its topics)"),
        (
            "9-1_1 0 42 1",
            "unknown PTKB statement '42' for 9-1_1 (its user has statements 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)",
        ),
        ("9-1_1 0 3 2", "PTKB relevance is 0 or 1, got 2"),
    ],
)
def test_a_bad_line_fails_the_import_with_file_line_and_reason_and_writes_nothing(
    ikat2023, ptkb_nist, tmp_path, line, reason
):
    lines = ptkb_nist.read_text().splitlines()
    lines.insert(7, line)
    path = tmp_path / "ptkb_rel_bad"
    path.write_text("\n".join(lines) + "\n")
    job = import_file(kind="ptkb_qrels", path=path)
    assert job.status == ImportJob.Status.FAILED
    assert [(e["file"], e["line"], e["reason"]) for e in job.errors] == [("ptkb_rel_bad", 8, reason)]
    assert not Collection.objects.filter(ptkb_of=ikat2023).exists() and not Qrel.objects.exists()


def test_the_export_of_an_imported_assessment_gives_back_the_files_lines(ikat2023, ptkb_nist, ptkb_org):
    for path in (ptkb_nist, ptkb_org):
        version = _version(ok("ptkb_qrels", path))
        exported = [f"{q} 0 {s} {g}" for q, s, g in jsel.qrels_export_rows(version=version, aggregation="majority")]
        original = path.read_text().splitlines()
        # NIST's file is in turn, then string order of statement numbers, which the export keeps line for line;
        # the organisers' file lists statements numerically, so only the order differs.
        assert sorted(exported) == sorted(original) and len(exported) == len(original)
        if path == ptkb_nist:
            assert exported == original


def test_the_export_page_serves_the_ikat_format(ikat2023, ptkb_nist, admin_client):
    version = _version(ok("ptkb_qrels", ptkb_nist))
    response = admin_client.get(f"/judging/relevance/admin/versions/{version.pk}/qrels/")
    text = b"".join(response.streaming_content).decode()
    assert text.splitlines() == ptkb_nist.read_text().splitlines()
    assert all(re.fullmatch(r"\d+-\d+_\d+ 0 \d+ [01]", line) for line in text.splitlines())
    sidecar = admin_client.get(f"/judging/relevance/admin/versions/{version.pk}/sidecar/").json()
    assert sidecar["format"] == "iKAT PTKB relevance: turn_id 0 statement_number 0|1"
    assert sorted(sidecar["grade_scale"]) == ["0", "1"] and sidecar["counts"]["rows"] == 1030


def test_agreement_between_nist_and_the_organisers_is_scikit_learns_kappa(ikat2023, ptkb_nist, ptkb_org, admin_client):
    a, b = _version(ok("ptkb_qrels", ptkb_nist)), _version(ok("ptkb_qrels", ptkb_org))
    report = asel.agreement_report(a=a, b=b)

    nist, org = read_qrels(ptkb_nist), read_qrels(ptkb_org)
    keys = sorted({(q, s) for q in nist for s in nist[q]} & {(q, s) for q in org for s in org[q]})
    expected = cohen_kappa_score([nist[q][s] for q, s in keys], [org[q][s] for q, s in keys])
    assert report["items"] == len(keys) and not report["graded"]
    assert report["kappa"]["value"] == pytest.approx(expected, abs=1e-12)
    assert report["collection"]["name"] == "iKAT 2023 PTKB"
    # The page shows the same κ for the two versions of the companion.
    page = admin_client.get(f"/evaluation/agreement/?a={a.pk}&b={b.pk}").content.decode()
    assert f"{expected:.3f}" in page
    print(
        f"\niKAT 2023 PTKB κ NIST vs organisers (imported versions): {report['kappa']['value']:.4f} over "
        f"{report['items']} statements; exact {report['exact']:.4f}; overlap {report['binary']['overlap']:.4f}"
    )


def _statement_run(companion: Collection, turn_ids: list[str]) -> str:
    """A ranking of each turn's PTKB statements by words shared with its manual rewrite (ties: statement number)."""
    lines = []
    for turn in Turn.objects.filter(collection=companion, turn_id__in=turn_ids).order_by("turn_id"):
        words = set(re.findall(r"\w+", turn.manual_rewrite.lower()))
        statements = PtkbStatement.objects.filter(conversation=turn.conversation).order_by("number")
        for rank, s in enumerate(
            sorted(statements, key=lambda s: (-len(words & set(re.findall(r"\w+", s.text.lower()))), s.number)), 1
        ):
            lines.append(f"{turn.turn_id} Q0 {s.number} {rank} {100 - rank} overlap")
    return "\n".join(lines) + "\n"


def test_a_statement_run_is_scored_as_pytrec_eval_scores_it(ikat2023, ptkb_nist, tmp_path, admin_client):
    version = _version(ok("ptkb_qrels", ptkb_nist))
    companion = version.collection
    qrels = read_qrels(ptkb_nist)
    turn_ids = sorted(qrels)[:12]
    path = tmp_path / "overlap.run"
    path.write_text(_statement_run(companion, turn_ids))
    run = Run.objects.get(pk=ok("run", path, collection=companion).counts["run_id"])

    services.scores_compute_for_version(version=version)

    wanted = {"nDCG@3": "ndcg_cut_3", "AP": "map", "P@3": "P_3", "RR": "recip_rank"}
    evaluator = pytrec_eval.RelevanceEvaluator({q: qrels[q] for q in turn_ids}, set(wanted.values()), relevance_level=1)
    expected = evaluator.evaluate(read_run(path))
    for measure, name in wanted.items():
        stored = per_turn_scores(run=run, version=version, measure=measure)
        assert {q: stored[q] for q in turn_ids} == pytest.approx({q: expected[q][name] for q in turn_ids}, abs=1e-9)
    # Judged turns the run leaves out count as 0, as in trec_eval -c: the mean is over all 98 judged turns.
    mean = score_means(version=version, measures=["nDCG@3"])[run.pk]["nDCG@3"]
    assert mean == pytest.approx(sum(expected[q]["ndcg_cut_3"] for q in turn_ids) / 98, abs=1e-9)
    # The leaderboard of the PTKB version lists the statement run with that mean.
    page = admin_client.get(f"/evaluation/?version={version.pk}").content.decode()
    assert ">overlap<" in page and f">{mean:.4f}<" in page


def test_a_passage_qrels_file_is_refused_with_one_message(ikat2023, shared_data):
    job = import_file(kind="ptkb_qrels", path=shared_data / "cast/2020/2020qrels.txt")
    assert job.status == ImportJob.Status.FAILED and len(job.errors) == 1
    assert job.errors[0]["reason"].startswith(
        "This looks like TREC qrels (qid iter docid grade), which the “Qrels (qid iter docid grade)” import reads"
    )
