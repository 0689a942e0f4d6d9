"""Real crowd data (CAsT-snippets 2020 MTurk batches): import, and the app's agreement equals statsmodels'."""

from __future__ import annotations

import ast
import gzip
import io

import numpy as np
import pandas as pd
import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from judging.models import Campaign, Rating
from judging.rating import selectors
from judging.rating.crowd import CrowdImportError, confidence_of, crowd_campaign_import

pytestmark = pytest.mark.django_db
LEVELS = ["very_low", "low", "medium", "high", "very_high"]


@pytest.fixture
def crowd_files(shared_data):
    folder = shared_data / "crowd" / "cast2020_snippets_lajewska2023"
    return sorted(folder.glob("group-A_batch-*_paragraph_regular.csv.gz"))[:3]


def _oracle_table(files):
    """Independent reading with pandas: item × worker confidence level → statsmodels' count table."""
    frames = [pd.read_csv(f, compression="gzip") for f in files]
    df = pd.concat(frames)

    def level(cell):
        conf = ast.literal_eval(cell)[0]["answer_confidence"]
        return LEVELS.index(next(k for k, v in conf.items() if v)) + 1

    df["score"] = df["Answer.taskAnswers"].map(level)
    wide = df.groupby(["Input.turn_id", "Input.passage_id"])["score"].apply(list)
    assert wide.map(len).eq(3).all()
    table, _ = aggregate_raters(np.array(wide.tolist()), n_cat=None)
    # aggregate_raters only makes columns for observed values; pad to the five levels.
    cats = sorted(set(df["score"]))
    full = np.zeros((len(wide), 5), dtype=int)
    for j, c in enumerate(cats):
        full[:, c - 1] = table[:, j]
    return full, wide


def test_the_crowd_import_agreement_equals_statsmodels_on_the_same_table(crowd_files):
    campaign = crowd_campaign_import(paths=crowd_files, name="snippets")
    table, wide = _oracle_table(crowd_files)
    assert campaign.items.count() == len(wide) and Rating.objects.filter(campaign=campaign).count() == 3 * len(wide)
    report = selectors.campaign_agreement(campaign=campaign, n_boot=20)
    rep = report["measures"]["answer_confidence"]
    assert rep["n_items"] == len(wide)
    assert rep["kappa_raw"] == pytest.approx(fleiss_kappa(table, method="fleiss"), abs=1e-12)
    # ECAsT filter by hand: ≥ 40% agreement (2 of 3), groups 1–2 / 3 / 4–5.
    kept = [s for s in wide if max(s.count(x) for x in s) / 3 >= 0.4]
    grouped = np.array([[sum(1 for x in s if x <= 2), s.count(3), sum(1 for x in s if x >= 4)] for s in kept])
    assert rep["n_kept"] == len(kept)
    assert rep["kappa_grouped"] == pytest.approx(fleiss_kappa(grouped, method="fleiss"), abs=1e-12)
    assert rep["n_labelled"] == sum(1 for s in wide if len(set(s)) == 1)


def test_workers_become_pseudonymous_accounts_that_cannot_log_in(crowd_files, client):
    campaign = crowd_campaign_import(paths=crowd_files[:1], name="snippets1")
    users = get_user_model().objects.filter(username__startswith="crowd-worker_")
    assert users.exists() and not users.filter(is_active=True).exists()
    assert not any(u.has_usable_password() for u in users)
    assert not users.filter(groups__isnull=False).exists()
    assert campaign.rater_statuses.filter(external_id__startswith="worker_").count() == users.count()
    assert campaign.status == Campaign.Status.CLOSED


def test_a_bad_row_names_file_and_line_and_writes_nothing(tmp_path, crowd_files):
    with gzip.open(crowd_files[0], "rt", encoding="utf-8", newline="") as fh:
        text = fh.read()
    pattern = '""medium"":True'
    assert pattern in text
    broken = text.replace(pattern, '""medium"":False', 1)
    cell_line = text[: text.index(pattern)].count("\n") + 1
    bad = tmp_path / "bad.csv"
    bad.write_text(broken, encoding="utf-8")
    with pytest.raises(CrowdImportError) as exc:
        crowd_campaign_import(paths=[bad], name="bad")
    err = exc.value.errors[0]
    assert err["file"] == "bad.csv" and 2 <= err["line"] <= cell_line and "exactly one level" in err["reason"]
    assert not Campaign.objects.exists() and not Rating.objects.exists()


def test_confidence_levels_map_to_one_to_five():
    cell = (
        "[{'answer_confidence': {'high': False, 'low': False, 'medium': False, 'very_high': True, 'very_low': False}}]"
    )
    assert confidence_of(cell) == 5
    with pytest.raises(ValueError, match="readable"):
        confidence_of("[{not python")


def test_the_management_command_imports_a_directory_and_reports_kappa(crowd_files, tmp_path):
    folder = tmp_path / "crowd"
    folder.mkdir()
    (folder / crowd_files[0].name).write_bytes(crowd_files[0].read_bytes())
    out = io.StringIO()
    call_command("import_crowd_campaign", str(folder), "--name", "cmd", stdout=out)
    assert "Fleiss kappa" in out.getvalue() and Campaign.objects.filter(name="cmd").exists()
    with pytest.raises(CommandError, match="already exists|nothing imported"):
        call_command("import_crowd_campaign", str(folder), "--name", "cmd", stdout=out, stderr=io.StringIO())
