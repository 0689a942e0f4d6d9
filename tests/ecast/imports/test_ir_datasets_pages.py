"""Import by ir_datasets id from the import page, the REST API and import_data."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from ecast.models import Collection, ImportJob, Turn
from evaluation.models import Qrel

pytestmark = pytest.mark.django_db


def test_the_import_page_offers_cast_ids_and_imports_the_judged_2020_subset(
    admin_client, ir_datasets_home, django_capture_on_commit_callbacks
):
    html = admin_client.get("/imports/").content.decode()
    assert "From ir_datasets" in html and str(ir_datasets_home) in html and "Downloads are off" in html
    assert '<option value="trec-cast/v1/2020/judged">' in html and '<option value="trec-cast/v1/2019">' in html
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post("/imports/", {"irds-dataset": "trec-cast/v1/2020/judged"})
    assert response.status_code == 302
    page = admin_client.get(response["Location"]).content.decode()
    assert "trec-cast/v1/2020/judged" in page and "passage texts not imported" in page
    job = ImportJob.objects.get()
    assert job.status == ImportJob.Status.SUCCEEDED and job.collection.name == "CAsT 2020"
    assert Turn.objects.filter(collection=job.collection).count() == 208
    assert Qrel.objects.filter(turn__collection=job.collection).count() == job.counts["qrels"] > 40000


def test_the_import_page_shows_the_missing_file_of_a_dataset(
    admin_client, ir_datasets_home, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post("/imports/", {"irds-dataset": "trec-cast/v0/train/judged"})
    page = admin_client.get(response["Location"]).content.decode()
    assert "train_topics_mod.qrel is missing from the local ir_datasets cache" in page
    assert not Turn.objects.exists()


def test_the_api_imports_a_dataset_id_and_refuses_one_without_its_kind(
    admin_api, ir_datasets_home, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_api.post(
            "/api/imports/", {"kind": "ir_datasets", "dataset": "trec-cast/v1/2019/judged"}, format="multipart"
        )
    assert response.status_code == 202, response.content
    detail = admin_api.get(response.json()["url"]).json()
    assert detail["status"] == "succeeded" and detail["collection"] == "CAsT 2019"
    assert detail["file_name"] == "trec-cast/v1/2019/judged" and detail["counts"]["turns_created"] == 173
    refused = admin_api.post("/api/imports/", {"kind": "qrels", "dataset": "trec-cast/v1/2019"}, format="multipart")
    assert refused.status_code == 400 and "dataset" in refused.json()
    missing = admin_api.post("/api/imports/", {"kind": "ir_datasets"}, format="multipart")
    assert missing.status_code == 400 and "dataset" in missing.json()


def test_import_data_takes_a_dataset_id(ir_datasets_home):
    out = io.StringIO()
    call_command("import_data", "ir_datasets", "trec-cast/v1/2019", "--collection", "Y1", stdout=out)
    assert "succeeded into Y1" in out.getvalue()
    assert Turn.objects.filter(collection__name="Y1").count() == 479
    err = io.StringIO()
    with pytest.raises(CommandError, match="1 error"):
        call_command("import_data", "ir_datasets", "no/such/dataset", "--collection", "Y2", stderr=err)
    assert "ir_datasets has no dataset 'no/such/dataset'" in err.getvalue()
    assert not Collection.objects.filter(name="Y2").exists()
