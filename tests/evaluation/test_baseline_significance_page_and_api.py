"""Every run against a baseline on the compare page and in the API: the stored per-turn scores, tested and corrected
as scipy and statsmodels do when called directly."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from evaluation import services
from evaluation.selectors import per_turn_scores
from tests.evaluation.helpers import add_run, build

pytestmark = pytest.mark.django_db

# A third run, so that Holm's correction over the two runs compared with "weak" changes the p-values.
MIDDLE = {"1_1": ["d3", "d1"], "1_2": ["x2", "d4"], "2_1": ["d6"], "2_2": ["d8"]}


@pytest.fixture
def scored():
    coll, version, runs = build()
    runs["middle"] = add_run(coll, "middle", MIDDLE)
    services.scores_compute_for_version(version=version)
    return coll, version, runs


def _expected(version, runs, *, measure="nDCG@3", method="holm"):
    """{run: (p, corrected p, reject)} by scipy ttest_rel and statsmodels multipletests on the stored scores."""
    base = per_turn_scores(run=runs["weak"], version=version, measure=measure)
    names = ["middle", "strong"]
    raw = []
    for name in names:
        mine = per_turn_scores(run=runs[name], version=version, measure=measure)
        turns = sorted(set(mine) & set(base))
        raw.append(sps.ttest_rel([mine[t] for t in turns], [base[t] for t in turns]).pvalue)
    reject, corrected, _, _ = multipletests(raw, alpha=0.05, method=method)
    return {n: (float(p), float(c), bool(r)) for n, p, c, r in zip(names, raw, corrected, reject, strict=True)}


def test_the_compare_page_offers_the_baseline_form_with_its_defaults(admin_client, scored):
    coll, version, runs = scored
    html = admin_client.get(reverse("evaluation-compare"), {"version": version.pk}).content.decode()
    assert "Every run against a baseline" in html
    assert re.search(r'<option value="holm" selected>Holm</option>', html)
    assert re.search(r'<option value="t" selected>paired t-test', html)
    assert re.search(r'name="alpha" value="0.05"', html)
    assert re.search(r'value="nDCG@3"[^>]*checked', html)
    assert "baseline-result" not in html


def test_the_compare_page_shows_every_run_against_the_baseline_with_holm_corrected_p(admin_client, scored):
    coll, version, runs = scored
    q = {"version": version.pk, "baseline": runs["weak"].pk, "measures": "nDCG@3", "test": "t", "correction": "holm"}
    resp = admin_client.get(reverse("evaluation-compare"), {**q, "alpha": "0.05"})
    assert resp.status_code == 200
    html = resp.content.decode()
    table = html[html.index('id="baseline-result"') :]
    expected = _expected(version, runs)
    assert expected["middle"][1] != expected["middle"][0]  # the correction changed something
    for name in ("middle", "strong"):
        p, corrected, reject = expected[name]
        row = re.search(rf"<tr><td>{name}</td><td>nDCG@3</td>(.*?)</tr>", table).group(1)
        cells = re.findall(r'data-value="([^"]*)">([^<]*)<', row)
        assert cells[0] == (repr(p), f"{p:.4f}" if p >= 1e-4 else "< 0.0001")
        assert cells[1] == (repr(corrected), f"{corrected:.4f}" if corrected >= 1e-4 else "< 0.0001")
        assert ("<strong>yes</strong>" in row) == reject
    assert "Against <strong>weak</strong>" in table and "Holm correction" in table


def test_the_compare_page_names_a_bad_parameter_and_answers_400(admin_client, scored):
    coll, version, runs = scored
    q = {"version": version.pk, "baseline": runs["weak"].pk, "measures": "nDCG@3", "alpha": "1.5"}
    resp = admin_client.get(reverse("evaluation-compare"), q)
    assert resp.status_code == 400
    html = resp.content.decode()
    assert "baseline-result" not in html
    assert '<p class="error">Alpha: Ensure this value is less than or equal to 1.0.</p>' in html
    resp = admin_client.get(reverse("evaluation-compare"), {**q, "alpha": "1", "test": "sign"})
    html = resp.content.decode()
    assert resp.status_code == 400
    assert '<p class="error">Alpha: must lie strictly between 0 and 1</p>' in html
    assert '<p class="error">Test: Select a valid choice. sign is not one of the available choices.</p>' in html


@pytest.mark.parametrize("method", ["bonferroni", "holm", "holm-sidak", "fdr_bh"])
def test_the_api_returns_the_table_with_statsmodels_corrections(admin_api, scored, method):
    coll, version, runs = scored
    q = {"version": version.pk, "baseline": runs["weak"].pk, "measures": "nDCG@3,AP", "correction": method}
    resp = admin_api.get(reverse("api-eval-significance-baseline"), q)
    assert resp.status_code == 200, resp.content
    data = resp.json()
    assert data["baseline"] == "weak" and data["test"] == "t" and data["alpha"] == 0.05
    assert [(r["measure"], r["run"]) for r in data["rows"]] == [
        ("nDCG@3", "middle"),
        ("nDCG@3", "strong"),
        ("AP", "middle"),
        ("AP", "strong"),
    ]
    for measure in ("nDCG@3", "AP"):
        expected = _expected(version, runs, measure=measure, method=method)
        got = {r["run"]: (r["pvalue"], r["corrected"], r["reject"]) for r in data["rows"] if r["measure"] == measure}
        assert got == expected
    strong = data["rows"][1]
    assert (strong["better"], strong["worse"]) == (3, 0) and strong["mean"] > strong["baseline_mean"]


@pytest.mark.parametrize(
    "change,field",
    [
        ({"test": "sign"}, "test"),
        ({"correction": "sidak-ish"}, "correction"),
        ({"alpha": "0"}, "alpha"),
        ({"alpha": "x"}, "alpha"),
        ({"measures": "bogus@3"}, "measures"),
        ({"measures": "ERR@10"}, "measures"),
        ({"baseline": "999999"}, "baseline"),
        ({"baseline": ""}, "baseline"),
    ],
)
def test_the_api_refuses_a_bad_parameter_with_400_naming_it(admin_api, scored, change, field):
    coll, version, runs = scored
    q = {"version": version.pk, "baseline": runs["weak"].pk, **change}
    resp = admin_api.get(reverse("api-eval-significance-baseline"), q)
    assert resp.status_code == 400, resp.content
    assert resp.json()[field]  # the parameter names its own list of reasons


def test_the_api_refuses_a_baseline_from_another_collection(admin_api, scored):
    coll, version, runs = scored
    other_coll, _, other_runs = build(name="Other")
    q = {"version": version.pk, "baseline": other_runs["weak"].pk}
    resp = admin_api.get(reverse("api-eval-significance-baseline"), q)
    assert resp.status_code == 400 and "baseline" in resp.json()


def test_only_admins_reach_the_baseline_api(anon_api, rater_api, assessor_api, scored):
    coll, version, runs = scored
    url = reverse("api-eval-significance-baseline")
    q = {"version": version.pk, "baseline": runs["weak"].pk}
    assert anon_api.get(url, q).status_code == 401
    assert rater_api.get(url, q).status_code == 403
    assert assessor_api.get(url, q).status_code == 403


def test_raters_cannot_open_the_baseline_table_on_the_compare_page(rater_client, scored):
    coll, version, runs = scored
    q = {"version": version.pk, "baseline": runs["weak"].pk}
    assert rater_client.get(reverse("evaluation-compare"), q).status_code == 403
