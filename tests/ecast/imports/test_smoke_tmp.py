import pytest, time
from ecast.imports.services import import_file
from tests.ecast.imports.conftest import ok
from ecast.models import *
from evaluation.models import *

@pytest.mark.django_db
def test_smoke(shared_data):
    c = shared_data / "cast"
    t=time.time()
    j = ok("cast_topics", c/"2019/train_topics_v1.0.json", options={"resolved_tsv": str(c/"2019/train_topic_sample_annotated_resolved_v1.0.tsv")})
    print(j.counts, j.collection)
    j = ok("cast_topics", c/"2019/evaluation_topics_v1.0.json", options={"resolved_tsv": str(c/"2019/evaluation_topics_annotated_resolved_v1.0.tsv")})
    print(j.counts)
    for f in ["2020/2020_automatic_evaluation_topics_v1.0.json","2020/2020_manual_evaluation_topics_v1.0_extended.json","2021/2021_manual_evaluation_topics_v1.0.json"]:
        print(ok("cast_topics", c/f).counts)
    print(Turn.objects.count(), time.time()-t)
    j = ok("ecast_csv", shared_data/"ecast/ECAsT.csv"); print(j.counts, time.time()-t)
    j = ok("ecast_csv", shared_data/"ecast/ECAsT.csv"); print(j.counts, time.time()-t)
    print(ok("qrels", c/"2019/2019qrels.txt").counts, time.time()-t)
    print(ok("run", shared_data/"runs/cast2019_decaf/exp1.run.gz").counts, time.time()-t)
    print(ok("run", shared_data/"runs/cast2020_decaf/exp5.run.gz").counts, time.time()-t)
    print(ok("utterance_labels", shared_data/"utterance_labels/mele2021_test_set.tsv").counts)
    j = import_file(kind="utterance_labels", path=shared_data/"utterance_labels/mele2021_training_set.tsv")
    print(j.status, len(j.errors), j.errors[:2])
    print(ok("utterance_labels", shared_data/"utterance_labels/mele2021_training_set.tsv", options={"skip_unknown":"true"}).counts)
    print(ok("castur", shared_data/"utterance_labels/CAsTUR.tsv").counts)
    print(ok("crowd_passages", shared_data/"crowd/cast2020_snippets_lajewska2023").counts, time.time()-t)
