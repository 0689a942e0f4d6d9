"""The permutations demo on a slice of real CAsT 2020 data (topics, crowd passage texts, qrels, annotations)."""

import io

import pytest

from ecast.models import Passage
from evaluation.models import PermutationExperiment, PermutationResult
from evaluation.permutations import demo as permutations_demo

pytestmark = pytest.mark.django_db


def test_demo_derives_classes_from_cast_2020_annotations_and_runs_a_scored_experiment(
    shared_data, settings, tmp_path, monkeypatch
):
    settings.ECAST_CACHE_DIR = tmp_path
    monkeypatch.setenv("ECAST_SHARED_DATA", str(shared_data))
    coll = permutations_demo.build_collection(
        name=permutations_demo.DEMO_COLLECTION, data_dir=shared_data, topics=["81", "84"]
    )
    assert Passage.objects.filter(passage_id__startswith="MARCO_").exists()
    out = io.StringIO()
    permutations_demo.load(stdout=out)
    turns = {t.turn_id: t for t in coll.turns.all()}
    # 84: 3 depends on 1 and 2 → PT of 2, which becomes an SE block head; 6 has no dependency → SE.
    assert "".join(turns[f"84_{n}"].utterance_class for n in range(1, 7)) == "SESEPTFTFTSE"
    assert turns["84_3"].depends_on == turns["84_2"]
    exp = PermutationExperiment.objects.get(name=permutations_demo.DEMO_EXPERIMENT)
    assert exp.status == "succeeded" and exp.scored_at is not None
    assert PermutationResult.objects.filter(permutation__experiment=exp, mean__gt=0).exists()
    assert "experiment" in out.getvalue()
    permutations_demo.load(stdout=out)  # idempotent
    assert PermutationExperiment.objects.filter(name=permutations_demo.DEMO_EXPERIMENT).count() == 1
