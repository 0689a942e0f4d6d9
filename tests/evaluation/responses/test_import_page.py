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


def test_an_admin_without_a_fitting_collection_makes_one_and_comes_back_with_it_chosen(admin_client):
    from ecast.models import Collection

    page = admin_client.get("/imports/").content.decode()
    assert 'id="new-collection-link" href="/collections/?next=/imports/#new-collection"' in page
    form = admin_client.get("/collections/", {"next": "/imports/?kind=responses"}).content.decode()
    assert 'id="new-collection-back"' in form and 'name="next" value="/imports/?kind=responses"' in form
    resp = admin_client.post(
        "/collections/",
        {"name": "TREC RAG 2024", "year": 2024, "relevance_threshold": 1, "next": "/imports/?kind=responses"},
    )
    coll = Collection.objects.get(name="TREC RAG 2024")
    assert resp.status_code == 302 and resp["Location"] == f"/imports/?kind=responses&collection={coll.pk}"
    back = admin_client.get(resp["Location"]).content.decode()
    assert f'<option value="{coll.pk}" selected>TREC RAG 2024</option>' in back
    assert '<option value="responses" selected>' in back
    # Only a page of this site is a way back.
    resp = admin_client.post(
        "/collections/", {"name": "Other", "relevance_threshold": 1, "next": "https://elsewhere.example/"}
    )
    assert resp.status_code == 302 and resp["Location"] == f"/collections/{Collection.objects.get(name='Other').pk}/"
