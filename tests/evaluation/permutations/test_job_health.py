"""A permutation experiment whose worker died shows its last heartbeat and the retry on its page and in the status
API the page polls."""

from __future__ import annotations

import pytest

from evaluation.models import PermutationExperiment
from evaluation.permutations.services import KIND
from tests import factories
from tests.job_health_helpers import (  # noqa: F401 - fresh_cache is a fixture
    assert_api_health,
    assert_no_health,
    assert_page_health,
    fresh_cache,
    recovered,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]


@pytest.fixture
def running_experiment() -> PermutationExperiment:
    coll = factories.collection(name="Perm health")
    return PermutationExperiment.objects.create(
        collection=coll,
        name="e",
        qrels_version=factories.qrels_version(coll),
        status=PermutationExperiment.Status.RUNNING,
        chunks_total=4,
        chunks_done=1,
    )


def test_experiment_status_api_reports_last_heartbeat_and_retries_after_worker_loss(admin_api, running_experiment):
    beat = recovered(KIND, running_experiment.pk)
    data = admin_api.get(f"/api/permutations/experiments/{running_experiment.pk}/").json()
    assert (data["status"], data["chunks_done"]) == ("running", 1)
    assert_api_health(data, beat)


def test_experiment_status_api_of_an_experiment_never_recovered_has_empty_health(admin_api, running_experiment):
    assert_no_health(admin_api.get(f"/api/permutations/experiments/{running_experiment.pk}/").json())


def test_experiment_page_shows_last_heartbeat_and_retries(admin_client, running_experiment):
    recovered(KIND, running_experiment.pk)
    assert_page_health(admin_client.get(f"/permutations/{running_experiment.pk}/").content.decode())


def test_done_experiment_still_shows_the_retries_it_had(admin_client, running_experiment):
    recovered(KIND, running_experiment.pk)
    running_experiment.status = PermutationExperiment.Status.DONE
    running_experiment.save()
    html = admin_client.get(f"/permutations/{running_experiment.pk}/").content.decode()
    assert "Retried after worker loss (1×)" in html
