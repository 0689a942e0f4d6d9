"""A curator imports the NIST nugget file through the import page: the page offers the response-level kinds with
their help, and the job page shows what was written and links to it."""

from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile

from ecast.models import ImportJob
from tests import factories


def test_the_nugget_file_imported_through_the_page_shows_its_counts_and_links(
    admin_client, shared_data, django_capture_on_commit_callbacks
):
    coll = factories.collection("TREC RAG 2024", 2024)
    page = admin_client.get("/imports/").content.decode()
    assert "Nuggets: nuggetizer JSONL (with or without assignments) or iKAT 2024 nugget JSON" in page
    assert "Citation support judgments: TREC RAG 2024 JSONL" in page
    assert "iKAT nuggets keep their 1" in page  # the kind's help, under the options field
    upload = SimpleUploadedFile(
        "nugget_assignment.20241108.jl.gz",
        (shared_data / "rag/trec_rag_2024/nugget_assignment.20241108.jl.gz").read_bytes(),
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            "/imports/",
            {"kind": "nuggets", "file": upload, "collection": coll.pk, "options": "create_turns=true"},
        )
    assert response.status_code == 302
    job = ImportJob.objects.get()
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors[:3]
    html = admin_client.get(response["Location"]).content.decode()
    for label, value in (("nuggets", 298), ("vital", 203), ("labels_written", 13158), ("responses_created", 927)):
        assert f'<th>{label}</th><td class="num">{value}</td>' in html
    assert f'href="/collections/{coll.pk}/"' in html
