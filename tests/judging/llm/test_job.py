"""The LLM judge job: labels land in "llm: <model>" with prompt and provenance per label, batch by batch, and the
job resumes where a dead worker left it."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from ecast.core import jobs
from ecast.models import JobRecovery
from evaluation.models import Qrel, QrelsVersion
from judging.llm import judge, services
from judging.models import LlmJudgeJob, LlmLabel
from tests import factories
from tests.judging.llm.helpers import TEXTS, judged_collection

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup():
    return judged_collection()


@pytest.fixture
def start(django_capture_on_commit_callbacks):
    """Create a job and run what its commit queues (the eager task), as after a real commit."""

    def run(coll, version, model, **kw):
        with django_capture_on_commit_callbacks(execute=True):
            job = services.llm_judge_job_create(collection=coll, source_version=version, model=str(model), **kw)
        job.refresh_from_db()
        return job

    return run


def test_a_job_labels_every_judged_pair_with_text_into_its_own_version(setup, start, tiny_causal):
    coll, original, _ = setup
    human_before = list(Qrel.objects.filter(version=original).values_list("turn_id", "passage_id", "grade", "source"))
    job = start(coll, original, tiny_causal, params={"batch_size": 3})
    job.refresh_from_db()
    assert (job.status, job.progress_done, job.progress_total) == ("succeeded", 7, 7)
    llm = job.target_version
    assert llm.name == f"llm: {tiny_causal.name}" and llm.parent_id == original.pk
    rows = Qrel.objects.filter(version=llm)
    assert sorted(rows.values_list("passage_id", flat=True)) == sorted(TEXTS)  # d8 (no text) left out
    assert set(rows.values_list("source", flat=True)) == {"llm"}
    # The human version is untouched: nothing mixed in.
    after = list(Qrel.objects.filter(version=original).values_list("turn_id", "passage_id", "grade", "source"))
    assert after == human_before
    assert job.seconds > 0


def test_every_label_stores_its_prompt_grade_distribution_and_provenance(setup, start, tiny_causal):
    coll, original, _ = setup
    job = start(coll, original, tiny_causal, revision="r1", params={"max_passage_tokens": 40})
    labels = list(LlmLabel.objects.filter(job=job).select_related("turn"))
    assert len(labels) == 7
    grades = dict(Qrel.objects.filter(version=job.target_version).values_list("passage_id", "grade"))
    for label in labels:
        assert label.grade == grades[label.passage_id]
        assert sum(label.probabilities) == pytest.approx(1.0)
        assert label.grade == max(judge.GRADES, key=lambda g: (label.probabilities[g], -g))
        assert f"Question: {label.turn.raw_utterance}" in label.prompt
        assert label.prompt.endswith(judge.ANSWER_PREFIX)
        assert label.provenance["model"] == tiny_causal.name
        assert label.provenance["revision"] == "r1"
        assert label.provenance["params"]["max_passage_tokens"] == 40
        assert label.provenance["prompt_version"] == judge.PROMPT_VERSION
    # The earlier turns of the conversation are shown: 1_2's prompt carries 1_1's utterance.
    second = next(lb for lb in labels if lb.turn.turn_id == "1_2")
    assert "Conversation so far: a\n" in second.prompt


def test_a_second_job_with_the_same_model_gets_a_numbered_version(setup, start, tiny_causal):
    coll, original, _ = setup
    start(coll, original, tiny_causal)
    second = start(coll, original, tiny_causal, limit=2)
    assert second.target_version.name == f"llm: {tiny_causal.name} #2"
    assert Qrel.objects.filter(version=second.target_version).count() == 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model": "/nowhere/model"}, "model: /nowhere/model: not 'smollm'"),
        ({"params": {"batch_size": 0}}, "params.batch_size: 0 is outside 1..256"),
        ({"params": {"temperature": 1}}, "unknown parameter 'temperature'"),
        ({"limit": 0}, "limit: at least 1 pair"),
    ],
)
def test_bad_requests_are_refused_and_write_nothing(setup, start, tiny_causal, kwargs, message):
    coll, original, _ = setup
    versions = QrelsVersion.objects.count()
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        services.llm_judge_job_create(collection=coll, source_version=original, **{"model": str(tiny_causal), **kwargs})
    assert QrelsVersion.objects.count() == versions and not LlmJudgeJob.objects.exists()


def test_an_llm_version_cannot_be_the_human_side_of_another_job(setup, start, tiny_causal):
    coll, original, _ = setup
    job = start(coll, original, tiny_causal)
    with pytest.raises(ValidationError, match="holds LLM labels"):
        start(coll, job.target_version, tiny_causal)


def test_a_version_without_passage_texts_is_refused_with_what_to_do(setup, start, tiny_causal):
    coll, _, _ = setup
    empty = factories.qrels_version(coll, "no texts", {coll.turns.first().turn_id: {"unknown": 1}})
    with pytest.raises(ValidationError, match="import the passage texts"):
        start(coll, empty, tiny_causal)


def test_a_job_killed_mid_way_resumes_after_its_last_committed_batch(setup, start, tiny_causal, monkeypatch, settings):
    coll, original, _ = setup
    seen: list[list[str]] = []
    real = judge.Judge.label

    def dying(self, pairs):
        seen.append([p.passage_id for p in pairs])
        if len(seen) == 2:
            raise SystemExit("worker killed")  # not an Exception: nothing marks the job failed, as with SIGKILL
        return real(self, pairs)

    monkeypatch.setattr(judge.Judge, "label", dying)
    with pytest.raises(SystemExit):
        start(coll, original, tiny_causal, params={"batch_size": 3})
    job = LlmJudgeJob.objects.get()
    assert (job.status, job.progress_done) == ("running", 3)  # the first batch committed, the second died
    assert Qrel.objects.filter(version=job.target_version).count() == 3
    # The sweeper finds it silent and queues it again; only the four unlabelled pairs are sent to the model.
    jobs.heartbeat_beat(services.KIND, job.pk)
    from datetime import UTC, datetime, timedelta

    later = datetime.now(tz=UTC) + timedelta(seconds=settings.ECAST_JOB_STALE_SECONDS + 5)
    actions = jobs.sweep_once(now=later)
    assert [a["job"] for a in actions if a["kind"] == services.KIND] == [job.pk]
    job.refresh_from_db()
    assert (job.status, job.progress_done) == ("succeeded", 7)
    first, _, *resumed = seen
    assert sorted(first + [p for batch in resumed for p in batch]) == sorted(TEXTS)
    assert LlmLabel.objects.filter(job=job).count() == 7
    assert JobRecovery.objects.filter(kind=services.KIND, job_id=job.pk).exists()


def test_a_model_that_cannot_load_fails_the_job_with_the_reason(setup, start, tiny_causal, tmp_path):
    coll, original, _ = setup
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{}")
    job = start(coll, original, broken)
    job.refresh_from_db()
    assert job.status == "failed" and "cannot load causal model" in job.error
