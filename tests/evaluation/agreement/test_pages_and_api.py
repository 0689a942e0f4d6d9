"""The agreement page, its item CSV and JSON API: defaults, numbers and their links, empty states, caching,
permissions."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse
from django.utils import timezone
from sklearn.metrics import cohen_kappa_score

from ecast.models import Collection
from evaluation.agreement import selectors as asel
from evaluation.models import Qrel, QrelsVersion
from tests import factories
from tests.evaluation.agreement.helpers import GRADES_A, GRADES_B, build_pair
from tests.evaluation.helpers import build

pytestmark = pytest.mark.django_db

PAGE = reverse("evaluation-agreement")
ITEMS = reverse("evaluation-agreement-items")
API = reverse("api-eval-agreement")


@pytest.fixture
def pair():
    return build_pair()


def _csv(resp) -> list[dict[str, str]]:
    text = resp.content.decode()
    return list(csv.DictReader(io.StringIO("\n".join(li for li in text.splitlines() if not li.startswith("#")))))


def test_it_defaults_to_the_original_against_its_newest_derived_version(admin_client, pair):
    coll, original, derived, _ = pair
    factories.qrels_version(coll, "imported second")
    resp = admin_client.get(PAGE, {"collection": coll.pk})
    assert resp.status_code == 200
    assert resp.context["a"] == original and resp.context["b"] == derived


def test_a_version_picked_on_one_side_gets_a_sensible_partner(admin_client, pair):
    coll, original, derived, _ = pair
    only_a = admin_client.get(PAGE, {"a": derived.pk}).context
    assert (only_a["a"], only_a["b"]) == (derived, original)
    only_b = admin_client.get(PAGE, {"b": original.pk}).context
    assert (only_b["a"], only_b["b"]) == (derived, original)


def test_the_page_shows_kappa_as_scikit_learn_computes_it_with_its_interval(admin_client, pair):
    coll, original, derived, _ = pair
    html = admin_client.get(PAGE, {"a": original.pk, "b": derived.pk}).content.decode()
    kappa = cohen_kappa_score(GRADES_A, GRADES_B, weights="linear", labels=[0, 1, 2, 3, 4])
    assert f'id="kappa-value">{kappa:.3f}<' in html
    assert "linear-weighted" in html and "95% CI" in html and "Fleiss, Cohen &amp; Everitt" in html
    assert "9 item(s) judged in both" in html and ">1</a> only in B" in html


def test_each_confusion_cell_links_to_a_csv_of_its_items(admin_client, pair):
    coll, original, derived, _ = pair
    html = admin_client.get(PAGE, {"a": original.pk, "b": derived.pk}).content.decode()
    link = f"{ITEMS}?a={original.pk}&amp;b={derived.pk}&amp;ga=2&amp;gb=0"
    assert link in html
    rows = _csv(admin_client.get(ITEMS, {"a": original.pk, "b": derived.pk, "ga": 2, "gb": 0}))
    assert [(r["turn_id"], r["item_id"], r["grade_a"], r["grade_b"]) for r in rows] == [("1_1", "d1", "2", "0")]
    binary = _csv(admin_client.get(ITEMS, {"a": original.pk, "b": derived.pk, "binary": 1, "ga": 1, "gb": 0}))
    assert [r["item_id"] for r in binary] == ["d1"]  # threshold 1: only d1 lost its relevance


def test_the_item_csv_holds_every_pair_or_one_topic_or_the_items_one_side_judged(admin_client, pair):
    coll, original, derived, _ = pair
    q = {"a": original.pk, "b": derived.pk}
    resp = admin_client.get(ITEMS, q)
    assert resp["Content-Type"].startswith("text/csv")
    text = resp.content.decode()
    assert f"# A=original (qrels version {original.pk})" in text and "# relevance_threshold=1" in text
    rows = _csv(resp)
    assert len(rows) == 9 and rows[0].keys() >= {"topic", "turn_id", "item_id", "grade_a", "grade_b", "same_grade"}
    assert [r["item_id"] for r in _csv(admin_client.get(ITEMS, {**q, "topic": "2"}))] == ["d6", "d7", "d8"]
    only_b = _csv(admin_client.get(ITEMS, {**q, "only": "b"}))
    assert [(r["item_id"], r["grade_a"], r["grade_b"]) for r in only_b] == [("x1", "", "4")]


def test_item_csv_cells_are_spreadsheet_safe(admin_client, pair):
    coll, original, derived, _ = pair
    turn = coll.turns.get(turn_id="2_2")
    for v in (original, derived):
        factories.qrels(v, {turn.turn_id: {"=HYPERLINK(1)": 1}})
    text = admin_client.get(ITEMS, {"a": original.pk, "b": derived.pk, "topic": "2"}).content.decode()
    assert ",'=HYPERLINK(1)," in text


def test_topics_where_kappa_is_undefined_show_a_dash_and_why(admin_client, pair):
    coll, original, derived, _ = pair
    html = admin_client.get(PAGE, {"a": original.pk, "b": derived.pk}).content.decode()
    row = html[html.index('data-topic="3"') :].split("</tr>")[0]
    assert "—" in row and "chance agreement is 100%, so κ is 0/0" in row
    assert f"{ITEMS}?a={original.pk}&amp;b={derived.pk}&amp;topic=3" in row


def test_kendall_tau_and_the_swapped_runs_come_from_the_leaderboard_means(admin_client, pair):
    coll, original, derived, runs = pair
    from scipy.stats import kendalltau

    from evaluation.selectors import leaderboard

    report = asel.agreement_report(a=original, b=derived)
    ma = {r["run"]: r["headline"] for r in leaderboard(version=original, measures=["nDCG@3"])}
    mb = {r["run"]: r["headline"] for r in leaderboard(version=derived, measures=["nDCG@3"])}
    names = sorted(ma)
    assert report["ranking"]["tau"] == pytest.approx(kendalltau([ma[n] for n in names], [mb[n] for n in names])[0])
    assert report["ranking"]["swapped"], "the re-judging reorders the runs"
    html = admin_client.get(PAGE, {"a": original.pk, "b": derived.pk}).content.decode()
    s = report["ranking"]["swapped"][0]
    assert f'id="tau-value">{report["ranking"]["tau"]:.3f}<' in html
    assert f"{s['a_x']:.4f}</a> &gt; " in html and f"{s['b_x']:.4f}</a> &lt; " in html
    assert f"/evaluation/runs/{runs[s['x']].pk}/?version={derived.pk}" in html


def test_a_measure_without_stored_scores_says_what_to_do(admin_client, pair):
    coll, original, derived, _ = pair
    html = admin_client.get(PAGE, {"a": original.pk, "b": derived.pk, "measure": "P@10"}).content.decode()
    assert "No P@10 scores are stored" in html and "full recompute" in html
    assert admin_client.get(PAGE, {"a": original.pk, "b": derived.pk, "measure": "nope@@"}).status_code == 404


def test_a_collection_with_one_version_gets_an_empty_state_with_links(admin_client):
    coll, original, _ = build(name="Only original")
    html = admin_client.get(PAGE, {"collection": coll.pk}).content.decode()
    assert 'id="agreement-empty"' in html and "has one qrels version" in html
    assert reverse("relevance-admin") in html and reverse("imports") in html


def test_without_any_qrels_the_page_says_where_to_import_them(admin_client):
    Collection.objects.all().delete()
    html = admin_client.get(PAGE).content.decode()
    assert "No collection has qrels yet" in html and reverse("imports") in html


def test_the_same_version_twice_is_refused_with_a_reason(admin_client, admin_api, pair):
    coll, original, derived, _ = pair
    html = admin_client.get(PAGE, {"a": original.pk, "b": original.pk}).content.decode()
    assert "pick two different qrels versions" in html
    resp = admin_api.get(API, {"a": original.pk, "b": original.pk})
    assert resp.status_code == 400 and "pick two different" in resp.json()["detail"]


def test_versions_of_two_collections_are_refused(admin_api, pair):
    coll, original, derived, _ = pair
    _, other, _ = build(name="Elsewhere")
    resp = admin_api.get(API, {"a": original.pk, "b": other.pk})
    assert resp.status_code == 400 and "different collections" in resp.json()["detail"]


def test_the_api_returns_the_report_the_page_shows(admin_api, pair):
    coll, original, derived, _ = pair
    data = admin_api.get(API, {"a": original.pk, "b": derived.pk}).json()
    report = asel.agreement_report(a=original, b=derived)
    assert data["kappa"] == report["kappa"] and data["confusion"] == report["confusion"]
    assert data["binary"]["overlap"] == report["binary"]["overlap"]
    assert [t["topic"] for t in data["topics"]] == ["1", "2", "3"]
    assert data["ranking"]["tau"] == report["ranking"]["tau"] and data["ranking"]["measure"] == "nDCG@3"
    assert data["a"] == {"id": original.pk, "name": "original"} and data["threshold"] == 1
    assert admin_api.get(API, {"a": original.pk, "b": derived.pk, "measure": "nope@@"}).status_code == 400
    assert admin_api.get(API, {"a": original.pk}).status_code == 400
    assert admin_api.get(API, {"a": original.pk, "b": 99_999}).status_code == 404


def test_the_item_report_is_cached_until_either_version_changes(pair):
    coll, original, derived, _ = pair
    first = asel.item_agreement(a=original, b=derived)
    again = asel.item_agreement(a=original, b=derived)
    assert not first["cached"] and again["cached"] and again["kappa"] == first["kappa"]
    # A judgment written the way the judging services write it: the row changes, the version's updated_at moves.
    row = Qrel.objects.get(version=derived, turn__turn_id="2_1", passage_id="d7")
    row.grade = 0
    row.save(update_fields=["grade"])
    QrelsVersion.objects.filter(pk=derived.pk).update(updated_at=timezone.now())
    derived.refresh_from_db()
    changed = asel.item_agreement(a=original, b=derived)
    assert not changed["cached"] and changed["kappa"]["value"] < first["kappa"]["value"]
    # A new row counts even when nothing touched the version.
    for v in (derived, original):
        factories.qrels(v, {"2_2": {"d8b": 1}})
    assert asel.item_agreement(a=original, b=derived)["items"] == 10


@pytest.mark.parametrize("url", [PAGE, ITEMS])
def test_raters_and_assessors_cannot_open_the_page_or_its_csv(url, rater_client, pair):
    coll, original, derived, _ = pair
    assert rater_client.get(url, {"a": original.pk, "b": derived.pk}).status_code == 403


def test_assessors_cannot_open_the_page(assessor_client, pair):
    assert assessor_client.get(PAGE).status_code == 403
    assert assessor_client.get(ITEMS).status_code == 403


def test_anonymous_visitors_are_sent_to_log_in(client, pair):
    for url in (PAGE, ITEMS):
        resp = client.get(url)
        assert resp.status_code == 302 and "/accounts/login/" in resp["Location"]


def test_the_api_is_for_admins_only(anon_api, rater_api, assessor_api, admin_api, pair):
    coll, original, derived, _ = pair
    q = {"a": original.pk, "b": derived.pk}
    assert anon_api.get(API, q).status_code == 401
    assert rater_api.get(API, q).status_code == 403
    assert assessor_api.get(API, q).status_code == 403
    assert admin_api.get(API, q).status_code == 200


def test_the_evaluation_pages_link_to_the_agreement_report(admin_client, pair):
    html = admin_client.get(reverse("evaluation-leaderboard")).content.decode()
    assert f'href="{PAGE}?collection=' in html


def test_a_derived_version_is_said_to_keep_its_parents_judgments(admin_client, pair):
    coll, original, derived, _ = pair
    page = admin_client.get(PAGE, {"a": original.pk, "b": derived.pk}).content.decode()
    assert "was derived from original and keeps its judgments" in page
    assert "1 judgment(s) only in original + new" in page  # x1, judged only in B
    turn = Qrel.objects.filter(version=original).first().turn
    other = factories.qrels_version(coll, "second assessor", {turn.turn_id: {"d1": 1}})
    page = admin_client.get(PAGE, {"a": original.pk, "b": other.pk}).content.decode()
    assert "was derived from" not in page


def test_a_binary_assessment_against_graded_grades_is_compared_on_relevance(admin_client, admin_api, pair):
    coll, original, _, _ = pair
    graded = list(Qrel.objects.filter(version=original).select_related("turn").order_by("turn__turn_id", "passage_id"))
    crowd_says: dict[str, dict[str, int]] = {}
    for q in graded:  # the crowd says "relevant" exactly where the grade is 1 or more
        crowd_says.setdefault(q.turn.turn_id, {})[q.passage_id] = int(q.grade >= 1)
    crowd = factories.qrels_version(coll, "crowd", crowd_says)

    page = admin_client.get(PAGE, {"a": original.pk, "b": crowd.pk}).content.decode()
    data = admin_api.get(API, {"a": original.pk, "b": crowd.pk}).json()

    assert "relevant or not: A is graded and cut at grade ≥" in page
    assert data["mixed"] and data["scale_a"] == [0, 1, 2, 3, 4] and data["scale_b"] == [0, 1]
    cut = coll.relevance_threshold
    a = [int(q.grade >= cut) for q in graded]
    b = [int(q.grade >= 1) for q in graded]
    assert data["kappa"]["value"] == pytest.approx(cohen_kappa_score(a, b))
    assert data["binary"]["relevant_b"] == sum(b)


def test_each_binarised_cell_links_to_exactly_the_items_it_counts_when_the_shared_items_are_binary(pair):
    # A grades 0–3 overall, but the items B judged are ones A graded 0 or 1: the report reads both sides as binary,
    # and the CSV behind each cell must cut A the same way (not at the collection's threshold 2).
    coll, original, _, _ = pair
    Collection.objects.filter(pk=coll.pk).update(relevance_threshold=2)
    flipped: dict[str, dict[str, int]] = {}
    for q in Qrel.objects.filter(version=original, grade__lte=1).select_related("turn"):
        flipped.setdefault(q.turn.turn_id, {})[q.passage_id] = 1 - q.grade
    second = factories.qrels_version(coll, "second assessor", flipped)
    original.refresh_from_db()

    report = asel.agreement_report(a=original, b=second)

    assert not report["graded"] and report["binary"]["cut_a"] == report["binary"]["cut_b"] == 1
    for ga, row in enumerate(report["binary"]["confusion"]):
        for gb, count in enumerate(row):
            items = asel.agreement_items(a=original, b=second, grade_a=ga, grade_b=gb, binary=True)
            assert len(items) == count
    assert sum(map(sum, report["binary"]["confusion"])) == report["items"] > 0


def _llm_like(original):
    """A version made from ``original`` that holds only its own labels: grade 0 for 1_1's three passages."""
    v = factories.qrels_version(
        original.collection, "llm: judge", {"1_1": {"d1": 0, "d2": 0, "d3": 0}}, parent=original
    )
    from evaluation import services

    services.scores_compute_for_version(version=v, measures=["nDCG@3"])
    return v


def test_a_version_made_from_a_but_not_a_copy_is_not_said_to_keep_its_judgments(admin_client, admin_api, pair):
    coll, original, derived, _ = pair
    llm = _llm_like(original)
    html = admin_client.get(PAGE, {"a": original.pk, "b": llm.pk}).content.decode()
    assert "keeps its judgments" not in html and "agree by construction" not in html
    assert "llm: judge was made from original but does not hold all of its judgments" in html
    data = admin_api.get(API, {"a": original.pk, "b": llm.pk}).json()
    assert data["derived"] is False and data["made_from_a"] is True and data["only_a"] == 6
    # the copy still says it: it holds every judgment of original
    copy = admin_client.get(PAGE, {"a": original.pk, "b": derived.pk}).content.decode()
    assert "was derived from original and keeps its judgments" in copy


def test_a_model_that_labelled_every_item_of_a_is_said_to_have_graded_them_on_its_own(admin_client, admin_api, pair):
    coll, original, derived, _ = pair
    grades = {(t, p): g for t, p, g in original.qrels.values_list("turn__turn_id", "passage_id", "grade")}
    relabelled = {}
    for (turn_id, passage), grade in grades.items():
        relabelled.setdefault(turn_id, {})[passage] = 4 - grade
    llm = factories.qrels_version(coll, "llm: every item", relabelled, parent=original)
    llm.qrels.update(source=Qrel.Source.LLM)
    html = admin_client.get(PAGE, {"a": original.pk, "b": llm.pk}).content.decode()
    assert "llm: every item holds a model's labels of original's items" in html
    assert "keeps its judgments" not in html and "agree except where" not in html
    data = admin_api.get(API, {"a": original.pk, "b": llm.pk}).json()
    assert data["relabelled"] is True and data["derived"] is False and data["only_a"] == 0


def test_an_undefined_kappa_shows_undefined_and_why_not_zero_with_an_interval(admin_client, pair):
    coll, original, derived, _ = pair
    llm = _llm_like(original)
    html = admin_client.get(PAGE, {"a": original.pk, "b": llm.pk}).content.decode()
    assert 'id="kappa-value">undefined<' in html and 'id="kappa-ci"' not in html
    assert "κ undefined: B gave all 3 item(s) grade 0" in html
    assert "0.000 (95% CI 0.000 to 0.000)" not in html.replace("</span>", "").replace('<span id="kappa-ci">', "")


def test_kendall_tau_uses_the_turns_both_versions_judged_and_says_how_many(admin_client, pair):
    coll, original, derived, _ = pair
    llm = _llm_like(original)  # judges one turn (1_1) of original's five
    report = asel.agreement_report(a=original, b=llm, measure="nDCG@3")["ranking"]
    assert (report["shared_turns"], report["turns_a"], report["turns_b"]) == (1, 5, 1)
    assert report["tau"] is None
    html = admin_client.get(PAGE, {"a": original.pk, "b": llm.pk, "measure": "nDCG@3"}).content.decode()
    assert 'id="tau-value">undefined<' in html
    assert "τ undefined: only 1 turn was judged in both versions" in html
    assert "original judges 5 turn(s) and llm: judge 1: the runs are compared on the 1 turn(s) both judged" in html
    # a copy judges the same turns: all five are shared and the means are the leaderboard's
    full = asel.agreement_report(a=original, b=derived, measure="nDCG@3")["ranking"]
    assert (full["shared_turns"], full["restricted"]) == (5, False)


def test_response_sets_of_different_kinds_are_never_paired_and_a_mismatched_pick_says_why(db, admin_client):
    from evaluation.models import ResponseLabelSet
    from tests.evaluation.responses.helpers import small_scene

    s = small_scene()
    nls, cls = s["nugget_set"], s["citation_set"]
    url = reverse("evaluation-agreement")
    # One set of each kind: no pair to default to, and no mismatched pair shown as if it were one.
    page = admin_client.get(url, {"collection": s["collection"].pk}).content.decode()
    assert 'id="response-agreement-empty"' in page and 'id="response-picker"' not in page
    page = admin_client.get(url, {"rb": cls.pk}).content.decode()
    assert f"nothing to compare &#x27;{cls.name}&#x27; with: no other set of Responses scene labels citation" in page
    assert '<option value="" selected>— choose —</option>' in page and 'id="response-items"' not in page
    llm = ResponseLabelSet.objects.create(
        collection=s["collection"], name="llm nuggets", kind="nuggets", source="llm", bank=s["bank"]
    )
    page = admin_client.get(url, {"collection": s["collection"].pk}).content.decode()
    assert f'<option value="{nls.pk}" selected>' in page and f'<option value="{llm.pk}" selected>' in page
    assert '<optgroup label="Nugget assignment">' in page and '<optgroup label="Citation support">' in page
    page = admin_client.get(url, {"ra": nls.pk, "rb": cls.pk}).content.decode()
    error = page.split('id="response-agreement-error">')[1].split("</p>")[0]
    assert "nothing to compare" in error and "no item is labelled in both" in error
    assert f'href="?ra={nls.pk}&amp;rb={llm.pk}#response-agreement">llm nuggets</a>' in page
