"""Generation pages and API: admin-only access, job creation through the form and the API, reports, test sets."""

from __future__ import annotations

import json
import sys
from html.parser import HTMLParser

import pytest
from django.test import Client
from django.urls import reverse

from ecast.generation import services, testsets
from ecast.models import GenerationJob, Paraphrase, TestSet
from ecast.pipeline.bleu import corpus_bleu
from tests import factories

pytestmark = pytest.mark.django_db

RULE_ONLY = {"cqr": {"backend": "rule"}, "paraphrase": {"backend": "t5", "params": {}}, "cr": {"backend": "rule"}}

PAGES = [
    ("generation-jobs", {}),
    ("generation-backends", {}),
    ("generation-diversity", {}),
    ("generation-cr-report", {}),
    ("generation-test-sets", {}),
]
APIS = ["api-generation-jobs", "api-generation-backends", "api-generation-diversity", "api-generation-test-sets"]


def _client(user=None):
    c = Client()
    if user is not None:
        c.force_login(user)
    return c


@pytest.mark.parametrize(("name", "kwargs"), PAGES)
def test_pages_are_admin_only(rater, assessor, admin_user, small_collection, name, kwargs):
    url = reverse(name, kwargs=kwargs)
    assert _client().get(url).status_code == 302  # to login
    assert _client(rater).get(url).status_code == 403
    assert _client(assessor).get(url).status_code == 403
    assert _client(admin_user).get(url).status_code == 200


@pytest.mark.parametrize("name", APIS)
def test_apis_are_admin_only(anon_api, rater_api, assessor_api, admin_api, name):
    url = reverse(name)
    assert anon_api.get(url).status_code == 401
    assert rater_api.get(url).status_code == 403
    assert assessor_api.get(url).status_code == 403
    assert admin_api.get(url).status_code == 200


def test_job_actions_are_admin_only(rater_api, rater_client, small_collection):
    job = services.generation_job_create(collection=small_collection)
    for name in ("api-generation-job-detail", "api-generation-job-cancel", "api-generation-job-retry"):
        assert rater_api.post(reverse(name, args=[job.pk])).status_code == 403
    assert rater_client.post(reverse("generation-job-cancel", args=[job.pk])).status_code == 403
    job.refresh_from_db()
    assert job.status == "queued"


def test_the_form_starts_a_job_that_runs_and_lists_its_pairs(
    admin_client, small_collection, tiny_t5, django_capture_on_commit_callbacks
):
    data = {
        "collection": small_collection.pk,
        "conversations": "1",
        "turns": "",
        "cqr_backend": "rule",
        "paraphrase_backend": "t5",
        "paraphrase_model": str(tiny_t5),
        "cr_backend": "rule",
        "source_r": "on",
        "source_m": "on",
        "num_return_sequences": 2,
        "top_k": 50,
        "top_p": 0.95,
        "temperature": 1.0,
        "max_new_tokens": 16,
        "min_similarity": "",
        "seed": 5,
        "chunk_size": 2,
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(reverse("generation-jobs"), data)
    job = GenerationJob.objects.get()
    assert response.status_code == 302 and response.url == reverse("generation-job-detail", args=[job.pk])
    assert job.progress_total == 3 and job.status == "succeeded"  # tasks run eagerly in tests
    page = admin_client.get(response.url).content.decode()
    assert "3 / 3 turns done" in page
    assert reverse("turn-detail", args=[job.turns.first().turn_id]) in page
    progress = admin_client.get(reverse("job-progress", args=["generation", job.pk])).json()
    assert progress["done"] == 3 and progress["detail"]["pending"] == 0 and progress["percent"] == 100.0


def test_the_form_reports_a_missing_t5_model_and_creates_nothing(admin_client, small_collection):
    data = {
        "collection": small_collection.pk,
        "cqr_backend": "rule",
        "paraphrase_backend": "t5",
        "cr_backend": "rule",
        "source_m": "on",
        "num_return_sequences": 2,
        "top_k": 50,
        "top_p": 0.9,
        "temperature": 1,
        "max_new_tokens": 16,
        "seed": 0,
        "chunk_size": 5,
    }
    response = admin_client.post(reverse("generation-jobs"), data)
    assert response.status_code == 200
    assert "needs params.model" in response.content.decode()
    assert not GenerationJob.objects.exists()


def test_the_api_creates_a_job_and_reports_progress(
    admin_api, small_collection, tiny_t5, django_capture_on_commit_callbacks
):
    body = {
        "collection": small_collection.pk,
        "selection": {"turns": ["2_2"]},
        "seed": 1,
        "config": {"paraphrase": {"backend": "t5", "params": {"model": str(tiny_t5), "num_return_sequences": 2}}},
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_api.post(reverse("api-generation-job-create"), body, format="json")
    assert response.status_code == 201, response.content
    job_id = response.json()["id"]
    detail = admin_api.get(reverse("api-generation-job-detail", args=[job_id])).json()
    assert detail["progress"]["total"] == 1 and detail["status"] == "succeeded"
    bad = admin_api.post(
        reverse("api-generation-job-create"), {**body, "config": {"cqr": {"backend": "x"}}}, format="json"
    )
    assert bad.status_code == 400 and "cqr" in bad.json()


def test_backends_page_says_which_backends_are_usable(admin_client, admin_api):
    rows = {r["name"]: r for r in admin_api.get(reverse("api-generation-backends")).json()}
    assert set(rows) == {
        "rule",
        "anaphora",
        "entity_removal",
        "t5",
        "smollm",
        "openai",
        "imported",
        "raw",
        "best",
        "adapter",
    }
    assert rows["imported"]["stages"] == rows["raw"]["stages"] == rows["best"]["stages"] == ["cqr"]
    assert rows["rule"]["usable"] is True and rows["rule"]["stages"] == ["cqr", "paraphrase", "cr"]
    assert rows["anaphora"]["usable"] is True and rows["anaphora"]["stages"] == ["cr"]
    assert rows["entity_removal"]["stages"] == ["cr"] and "Entity Removal" in rows["entity_removal"]["description"]
    assert rows["smollm"]["usable"] is True and "SmolLM2" in rows["smollm"]["reason"]
    assert "usable here" in admin_client.get(reverse("generation-backends")).content.decode().lower()


def test_the_backends_page_tells_model_status_without_importing_torch_or_loading_a_model(admin_client, monkeypatch):
    from ecast.pipeline import hf

    touched: list[str] = []

    def refuse(name):
        def call(*args, **kwargs):
            touched.append(name)
            raise AssertionError(f"{name} called by the status page")

        return call

    for name in ("_torch", "load_seq2seq", "load_causal", "load_smollm"):
        monkeypatch.setattr(hf, name, refuse(name))
    # As in a fresh web process: torch not imported yet (the page must not import it to name the device).
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    page = admin_client.get(reverse("generation-backends"))
    assert page.status_code == 200 and touched == []
    text = page.content.decode()
    assert "SmolLM2-135M-Instruct.Q4_1.gguf" in text and "device cpu" in text
    assert "torch" not in sys.modules


def test_the_backends_page_says_cuda_when_an_nvidia_driver_is_loaded(admin_client, monkeypatch, tmp_path):
    from ecast.pipeline import hf

    driver = tmp_path / "version"
    driver.write_text("NVRM version: 550\n")
    monkeypatch.setattr(hf, "NVIDIA_DRIVER", str(driver))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert "device cuda" in admin_client.get(reverse("generation-backends")).content.decode()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert "device cuda" not in admin_client.get(reverse("generation-backends")).content.decode()


def _generated(turn, text, source, status="candidate"):
    return Paraphrase.objects.create(
        turn=turn,
        kind="manual",
        text=text,
        status=status,
        origin="generated",
        provenance={"source_text": source, "source": "m", "job": 0},
    )


def test_diversity_report_compares_generated_and_edited_versions(admin_client, small_collection):
    t1, t2 = small_collection.turns.order_by("id")[:2]
    a = _generated(t1, "What is cancer of the throat?", "What is throat cancer?")
    _generated(t2, "Can throat cancer be treated?", "Is throat cancer treatable?")
    _generated(t2, "Junk", "Is throat cancer treatable?", status="rejected")
    edited = Paraphrase.objects.create(
        turn=t1,
        kind="manual",
        text="Explain laryngeal malignancy",
        origin="edited",
        edited_from=a,
        provenance=a.provenance,
    )
    a.is_current = False
    a.save()
    csv_text = admin_client.get(reverse("generation-diversity") + "?format=csv").content.decode()
    lines = csv_text.strip().splitlines()
    assert lines[0] == "collection,paraphrases,edited,para_auto,para_diverse,change_pct"
    refs = ["What is throat cancer?", "Is throat cancer treatable?"]
    auto = corpus_bleu(["What is cancer of the throat?", "Can throat cancer be treated?"], refs)
    diverse = corpus_bleu([edited.text, "Can throat cancer be treated?"], refs)
    assert lines[1].startswith(f"Mini,2,1,{auto:.2f},{diverse:.2f},")
    assert lines[2].startswith("All,2,1,")


def test_cr_report_has_the_table9_baselines_over_every_turn(admin_client, small_collection):
    turns = list(small_collection.turns.order_by("conversation_id", "number"))
    for t in turns:
        t.manual_rewrite = t.raw_utterance.replace("it", "throat cancer").replace("they", "bees")
        t.save()
    response = admin_client.get(reverse("generation-cr-report") + f"?collection={small_collection.pk}&format=csv")
    rows = response.content.decode().strip().splitlines()
    expected = corpus_bleu([t.manual_rewrite for t in turns], [t.raw_utterance for t in turns])
    assert rows[0].startswith("# Turns: every turn with a manual rewrite, turn 1 included")
    assert rows[1] == "collection,system,turns,bleu,job,paper"
    assert rows[2] == f"Mini,Original manual,6,{expected:.2f},,44.72"  # a 2020 collection: the paper's CAsT 2020 figure
    assert rows[3].startswith("Mini,Entity removal,6,")


def test_the_context_removal_page_is_one_table_in_the_base_layout(admin_client, small_collection):
    response = admin_client.get(reverse("generation-cr-report") + f"?collection={small_collection.pk}")
    html = response.content.decode()
    assert response.status_code == 200 and len(html) < 30_000, len(html)  # it was 1.5 MB: 1,378 copies of the table
    assert html.count("<table") == 1 and html.count('<table id="cr">') == 1 and html.count("ECAsT Table 9") == 1
    assert html.lstrip().lower().startswith("<!doctype html>") and "<title>Context removal · ecast</title>" in html
    assert '<header class="topbar">' in html and html.count("<main>") == 1 and html.rstrip().endswith("</html>")
    assert "Original manual" in html and "Entity removal" in html
    assert "{%" not in html and "{{" not in html


def test_test_sets_use_each_paraphrase_once_and_export_cast_json(admin_client, admin_api, small_collection):
    for t in small_collection.turns.all():
        for i in range(4):
            factories.paraphrase(t, f"{t.turn_id} raw paraphrase {i}", kind="raw", status="approved")
    response = admin_api.post(
        reverse("api-generation-test-set-create"),
        {"collection": small_collection.pk, "kind": "raw", "n_sets": 3, "seed": 11},
        format="json",
    )
    assert response.status_code == 201, response.content
    sets = TestSet.objects.order_by("index")
    assert [s.name for s in sets] == ["Rr_1 (seed 11)", "Rr_2 (seed 11)", "Rr_3 (seed 11)"]
    used = [i.paraphrase_id for s in sets for i in s.items.all()]
    assert len(used) == 18 and len(set(used)) == 18
    exported = admin_client.get(reverse("generation-test-set-export", args=[sets[0].pk])).json()
    assert [t["number"] for t in exported] == [1, 2]
    first = exported[0]["turn"][0]
    assert first["raw_utterance"].startswith("1_1 raw paraphrase") and "manual_rewritten_utterance" not in first
    again = testsets.test_sets_create(collection=small_collection, kind="raw", n_sets=1, seed=11)
    assert again[0].index == 4
    assert admin_client.get(reverse("generation-test-set-detail", args=[sets[0].pk])).status_code == 200


def test_manual_test_sets_fill_the_manual_field_and_fall_back_to_the_original(small_collection):
    t = small_collection.turns.get(turn_id="1_2")
    p = factories.paraphrase(t, "Can throat cancer be cured?", kind="manual", status="approved")
    (ts,) = testsets.test_sets_create(collection=small_collection, kind="manual", n_sets=1)
    exported = testsets.test_set_export(test_set=ts)
    turn2 = exported[0]["turn"][1]
    assert turn2 == {"number": 2, "manual_rewritten_utterance": "Can throat cancer be cured?", "paraphrase_id": p.pk}
    assert exported[0]["turn"][0]["manual_rewritten_utterance"] == "What is throat cancer?"
    assert ts.parameters["fallback_turns"] == []


def test_job_list_shows_jobs(admin_client, small_collection):
    services.generation_job_create(collection=small_collection, name="my job")
    assert "my job" in admin_client.get(reverse("generation-jobs")).content.decode()
    assert json.loads(json.dumps(True))


def test_every_write_and_export_endpoint_is_admin_only(
    rater, assessor, rater_api, assessor_api, anon_api, small_collection
):
    factories.paraphrase(small_collection.turns.first(), "p", kind="raw", status="approved")
    (ts,) = testsets.test_sets_create(collection=small_collection, kind="raw", n_sets=1)
    posts = [
        (reverse("api-generation-job-create"), {"collection": small_collection.pk}),
        (reverse("api-generation-test-set-create"), {"collection": small_collection.pk, "kind": "raw"}),
    ]
    gets = [
        reverse("api-generation-test-set-export", args=[ts.pk]),
        reverse("api-generation-cr-report", args=[small_collection.pk]),
    ]
    for api, code in ((anon_api, 401), (rater_api, 403), (assessor_api, 403)):
        for url, body in posts:
            assert api.post(url, body, format="json").status_code == code
        for url in gets:
            assert api.get(url).status_code == code
    for user in (rater, assessor):
        c = _client(user)
        assert c.get(reverse("generation-test-set-export", args=[ts.pk])).status_code == 403
        assert c.get(reverse("generation-test-set-detail", args=[ts.pk])).status_code == 403
        assert (
            c.post(reverse("generation-test-sets"), {"collection": small_collection.pk, "kind": "raw"}).status_code
            == 403
        )
    assert not GenerationJob.objects.exists() and TestSet.objects.count() == 1


class _FieldBlocks(HTMLParser):
    """The job form's field blocks: for each ``div.field``, the ids and aria-describedby of its inputs and the text
    of each element inside it that has an id."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks: list[dict] = []
        self.depth: list[bool] = []  # for each open div: does it open a field block
        self.texts: list[tuple[str, dict]] = []  # (id, block) of the element whose text is being read

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "div":
            is_field = "field" in (a.get("class") or "").split()
            self.depth.append(is_field)
            if is_field:
                self.blocks.append({"inputs": {}, "texts": {}})
        inside = any(self.depth)
        if not inside:
            return
        block = self.blocks[-1]
        if tag in ("input", "select", "textarea") and a.get("id"):
            block["inputs"][a["id"]] = a.get("aria-describedby") or ""
        elif tag in ("span", "small") and a.get("id"):
            block["texts"][a["id"]] = ""
            self.texts.append((a["id"], block))

    def handle_endtag(self, tag):
        if tag == "div" and self.depth:
            self.depth.pop()
        elif tag in ("span", "small") and self.texts:
            self.texts.pop()

    def handle_data(self, data):
        if self.texts:
            ident, block = self.texts[-1]
            block["texts"][ident] += data


def test_each_generation_field_has_its_help_under_it_and_named_by_its_input(admin_client, small_collection):
    from ecast.generation.forms import GenerationJobForm

    html = admin_client.get(reverse("generation-jobs")).content.decode()
    assert "{#" not in html and "#}" not in html  # no template comment leaks onto the page
    parser = _FieldBlocks()
    parser.feed(html)
    form = GenerationJobForm()
    with_help = [name for name, field in form.fields.items() if field.help_text]
    assert {"conversations", "turns", "min_similarity", "cr_backend"} <= set(with_help)
    for name in with_help:
        (block,) = [b for b in parser.blocks if f"id_{name}" in b["inputs"]]
        described = block["inputs"][f"id_{name}"].split()
        assert f"id_{name}_helptext" in described, name
        # the help the input points to sits in the input's own block and says that field's help, no other's
        assert " ".join(block["texts"][f"id_{name}_helptext"].split()) == " ".join(
            str(form.fields[name].help_text).split()
        )
    turns = next(b for b in parser.blocks if "id_turns" in b["inputs"])["texts"]["id_turns_helptext"]
    assert "81_2" in turns and "every turn" in turns


def test_the_generation_forms_stage_fields_are_labelled_in_words_under_their_stage(admin_client, small_collection):
    html = admin_client.get(reverse("generation-jobs")).content.decode()
    assert "Cqr model" not in html and "Cr revision" not in html and "Paraphrase model" not in html
    assert html.count(">Model<") >= 3 and html.count(">Revision<") >= 3


def test_a_job_page_links_to_its_candidates_and_the_search_shows_that_job_s_only(
    admin_client, admin_api, small_collection
):
    from ecast.generation.tasks import generation_job_dispatch_task
    from ecast.models import Paraphrase

    config = {
        "cqr": {"backend": "rule"},
        "paraphrase": {"backend": "rule", "params": {"num_return_sequences": 2}, "sources": ["r", "m"]},
        "cr": {"backend": "anaphora"},
        "clean": {"min_similarity": None},
    }
    jobs = []
    for seed in (1, 2):
        job = services.generation_job_create(collection=small_collection, config=config, seed=seed)
        generation_job_dispatch_task(job.pk)
        jobs.append(job)
    first = jobs[0]
    page = admin_client.get(reverse("generation-job-detail", args=[first.pk])).content.decode()
    link = f"{reverse('paraphrase-search')}?job={first.pk}&amp;status=candidate&amp;kind=manual"
    assert link in page and "review its candidates" in page
    mine = Paraphrase.objects.filter(provenance__job=first.pk, kind="manual", status="candidate")
    assert mine.exists() and Paraphrase.objects.exclude(provenance__job=first.pk).filter(origin="generated").exists()
    found = admin_client.get(reverse("paraphrase-search"), {"job": first.pk, "status": "candidate", "kind": "manual"})
    text = found.content.decode()
    assert f"{mine.count()} paraphrase" in text and f"generation job #{first.pk}" in text
    assert all(p.text.replace("'", "&#x27;") in text for p in mine)
    api = admin_api.get(reverse("api-paraphrase-list"), {"job": first.pk, "kind": "manual", "status": "candidate"})
    assert {r["id"] for r in api.json()["results"]} == set(mine.values_list("pk", flat=True))
    # a pair is decided whole, so each row shows the raw partner the curator approves with it
    assert all(f"its raw partner: {p.pair.text}".replace("'", "&#x27;") in text for p in mine)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(None, "–"), (12.4, "12 s"), (75.6, "about 1 min 16 s"), (120, "about 2 min"), (7260, "about 2 h 1 min")],
)
def test_an_eta_reads_in_minutes_once_it_passes_one(seconds, text):
    from ecast.core.progress import eta_text

    assert eta_text(seconds) == text


def test_the_job_page_says_which_cqr_best_chose_and_why(admin_client, small_collection):
    config = {
        "cqr": {"backend": "best"},
        "paraphrase": {"backend": "rule", "params": {"num_return_sequences": 1}},
        "cr": {"backend": "anaphora"},
        "clean": {"min_similarity": None},
    }
    job = services.generation_job_create(collection=small_collection, config=config, seed=0)
    chosen = job.config["cqr"]["params"]
    page = admin_client.get(reverse("generation-job-detail", args=[job.pk])).content.decode()
    assert f"CQR “best” used <strong>{chosen['use']}</strong>: {chosen['why']}" in page
    listing = admin_client.get(reverse("generation-jobs")).content.decode()
    assert f"best ({chosen['use']})" in listing
