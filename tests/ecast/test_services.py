"""Dataset services: collections and paraphrase curation keep history, pairs and validation."""

import pytest
from django.core.exceptions import ValidationError

from ecast import selectors, services
from ecast.models import Collection, Paraphrase
from tests import factories


@pytest.fixture
def turn2(small_collection):
    return small_collection.turns.get(turn_id="1_2")


@pytest.fixture
def pair(turn2):
    return services.paraphrase_add(
        turn=turn2, manual_text="Can throat cancer be treated?", raw_text="Can it be treated?"
    )


def test_it_creates_and_updates_a_collection(db):
    c = services.collection_create(name=" CAsT 2020 ", year=2020, relevance_threshold=2)
    assert c.name == "CAsT 2020" and c.relevance_threshold == 2
    services.collection_update(collection=c, relevance_threshold=1, corpus_note="MS MARCO v1")
    c.refresh_from_db()
    assert (c.relevance_threshold, c.corpus_note) == (1, "MS MARCO v1")


def test_it_refuses_a_duplicate_collection_name_and_a_bad_threshold(db):
    services.collection_create(name="A")
    with pytest.raises(ValidationError):
        services.collection_create(name="A")
    with pytest.raises(ValidationError, match="between 0 and 4"):
        services.collection_create(name="B", relevance_threshold=7)
    assert Collection.objects.count() == 1


def test_add_creates_a_linked_manual_raw_pair(pair, turn2, admin_user):
    manual, raw = pair
    assert (manual.kind, raw.kind) == ("manual", "raw")
    assert manual.pair_id == raw.pk and raw.pair_id == manual.pk
    assert manual.origin == raw.origin == "added" and manual.status == "candidate"


def test_first_turns_reuse_the_manual_text_as_raw(small_collection):
    turn1 = small_collection.turns.get(turn_id="1_1")
    manual, raw = services.paraphrase_add(turn=turn1, manual_text="What  is laryngeal cancer?")
    assert raw.text == manual.text == "What is laryngeal cancer?"


def test_later_turns_need_a_raw_paraphrase(turn2):
    with pytest.raises(ValidationError, match="raw"):
        services.paraphrase_add(turn=turn2, manual_text="Can throat cancer be treated?")
    assert not Paraphrase.objects.exists()


def test_approve_and_reject_change_only_the_status_of_the_whole_pair(pair):
    manual, raw = pair
    assert services.paraphrase_approve(paraphrase=manual).status == "approved"
    raw.refresh_from_db()
    assert raw.status == "approved"
    assert services.paraphrase_reject(paraphrase=raw).status == "rejected"
    manual.refresh_from_db()
    assert manual.status == "rejected" and manual.is_current and manual.text == "Can throat cancer be treated?"
    services.paraphrase_reset(paraphrase=manual)
    assert set(Paraphrase.objects.values_list("status", flat=True)) == {"candidate"}


def test_deciding_an_edited_pair_reaches_the_partners_current_version(pair):
    manual, raw = pair
    new_raw = services.paraphrase_edit(paraphrase=raw, text="Can it be cured?")
    services.paraphrase_approve(paraphrase=manual)
    new_raw.refresh_from_db()
    raw.refresh_from_db()
    assert new_raw.status == "approved" and raw.status == "candidate"  # the retired version keeps its status


def test_bulk_status_decides_pairs_in_one_go_and_counts_them(turn2):
    a = services.paraphrase_add(turn=turn2, manual_text="Can throat cancer be treated?", raw_text="Can it?")
    b = services.paraphrase_add(turn=turn2, manual_text="Is throat cancer curable?", raw_text="Curable?")
    c = services.paraphrase_add(turn=turn2, manual_text="Can throat cancer be cured?", raw_text="Cured?")
    services.paraphrase_approve(paraphrase=b[0])
    chosen = Paraphrase.objects.filter(pk__in=[a[0].pk, a[1].pk, b[1].pk])
    assert services.paraphrase_bulk_status(paraphrases=chosen, status="approved") == {"pairs": 2, "paraphrases": 2}
    status = dict(Paraphrase.objects.values_list("pk", "status"))
    assert [status[p.pk] for p in (*a, *b, *c)] == ["approved"] * 4 + ["candidate"] * 2
    with pytest.raises(ValidationError, match="status must be one of"):
        services.paraphrase_bulk_status(paraphrases=chosen, status="deleted")
    assert services.paraphrase_bulk_status(paraphrases=Paraphrase.objects.none(), status="rejected") == {
        "pairs": 0,
        "paraphrases": 0,
    }


def test_edit_creates_a_new_row_keeps_the_old_one_and_relinks_the_pair(pair, admin_user):
    manual, raw = pair
    services.paraphrase_approve(paraphrase=manual)
    new = services.paraphrase_edit(paraphrase=manual, text="Is throat cancer treatable today?", user=admin_user)
    manual.refresh_from_db()
    raw.refresh_from_db()
    assert new.pk != manual.pk
    assert (new.origin, new.edited_from_id, new.is_current, new.status) == ("edited", manual.pk, True, "approved")
    assert manual.is_current is False and manual.text == "Can throat cancer be treated?"
    assert new.pair_id == raw.pk and raw.pair_id == new.pk
    assert new.provenance["edit"] == {"from_id": manual.pk, "from_origin": "added", "by": "admin1"}
    assert new.created_by == admin_user


def test_the_history_chain_lists_every_version_oldest_first(pair):
    manual, _ = pair
    v2 = services.paraphrase_edit(paraphrase=manual, text="Version two")
    v3 = services.paraphrase_edit(paraphrase=v2, text="Version three")
    for member in (manual, v2, v3):
        assert [p.text for p in selectors.paraphrase_history(paraphrase=member)] == [
            "Can throat cancer be treated?",
            "Version two",
            "Version three",
        ]


def test_an_old_version_cannot_be_edited_or_approved(pair):
    manual, _ = pair
    services.paraphrase_edit(paraphrase=manual, text="Newer text")
    with pytest.raises(ValidationError, match="current version"):
        services.paraphrase_edit(paraphrase=manual, text="Another")
    with pytest.raises(ValidationError, match="current version"):
        services.paraphrase_approve(paraphrase=manual)


def test_an_edit_must_change_the_text_and_not_be_empty(pair):
    manual, _ = pair
    with pytest.raises(ValidationError, match="unchanged"):
        services.paraphrase_edit(paraphrase=manual, text="  Can throat cancer be   treated? ")
    with pytest.raises(ValidationError, match="empty"):
        services.paraphrase_edit(paraphrase=manual, text="   ")
    assert Paraphrase.objects.count() == 2


def test_turn_page_groups_pairs_and_marks_repeats(turn2, pair):
    factories.paraphrase(turn2, "Is throat cancer curable?", kind="manual")
    page = selectors.turn_page(turn=turn2)
    assert len(page.pairs) == 2
    manual_row, raw_row = page.pairs[0]
    assert manual_row.paraphrase.kind == "manual" and raw_row.paraphrase.kind == "raw"
    assert page.pairs[1][1] is None  # an unpaired manual paraphrase
    assert ("throat", "cancer") in page.repeated
    assert '<mark class="repeat">throat cancer</mark>' in manual_row.highlighted
    assert [t.turn_id for t in page.history] == ["1_1"]
    assert page.previous_turn.turn_id == "1_1" and page.next_turn.turn_id == "1_3"


def test_an_edited_pair_keeps_its_place_on_the_turn_page(turn2, pair):
    second = services.paraphrase_add(turn=turn2, manual_text="Is throat cancer curable?", raw_text="Is it curable?")
    manual = services.paraphrase_edit(paraphrase=pair[0], text="Is there a treatment for throat cancer?")
    raw = services.paraphrase_edit(paraphrase=pair[1], text="Is there a treatment for it?")
    page = selectors.turn_page(turn=turn2)
    rows = [(m.paraphrase.pk, r.paraphrase.pk) for m, r in page.pairs]
    assert rows == [(manual.pk, raw.pk), (second[0].pk, second[1].pk)]
    assert [p.undecided for p in page.pairs] == [True, True]


def test_after_a_decision_the_next_undecided_pair_follows_in_page_order_after_edits(turn2, pair):
    second = services.paraphrase_add(turn=turn2, manual_text="Is throat cancer curable?", raw_text="Is it curable?")
    third = services.paraphrase_add(turn=turn2, manual_text="How is throat cancer treated?", raw_text="How then?")
    # Both members of the first and second pairs edited: every current row of theirs is newer than the third's.
    services.paraphrase_edit(paraphrase=second[0], text="Can throat cancer be cured?")
    second_edited = services.paraphrase_edit(paraphrase=second[1], text="Can it be cured?")
    services.paraphrase_edit(paraphrase=pair[0], text="Is there a treatment for throat cancer?")
    services.paraphrase_edit(paraphrase=pair[1], text="Is there a treatment for it?")
    decided = services.paraphrase_approve(paraphrase=second_edited)
    # The page reads first, second, third: after the second pair comes the third, not the first.
    assert selectors.curation_next(paraphrase=decided) == (turn2, third[0])


def test_the_next_turn_after_a_conversation_is_the_first_turn_of_the_next_one(small_collection):
    last = small_collection.turns.get(turn_id="1_3")
    assert selectors.turn_page(turn=last).next_turn.turn_id == "2_1"


def test_search_matches_paraphrase_text_or_utterance_and_filters(small_collection, pair):
    manual, raw = pair
    assert set(selectors.paraphrase_search(q="treated")) == {manual, raw}
    assert list(selectors.paraphrase_search(q="treated", kind="raw")) == [raw]
    # "treatable" is only in the turn's raw utterance: both paraphrases of that turn match.
    assert set(selectors.paraphrase_search(q="TREATABLE")) == {manual, raw}
    services.paraphrase_edit(paraphrase=manual, text="Cure for throat cancer?")
    assert list(selectors.paraphrase_search(q="be treated")) == [raw]
    assert manual in selectors.paraphrase_search(q="be treated", include_history=True)


def test_turn_page_reports_diversity_before_and_after_curation(turn2):
    a = factories.paraphrase(turn2, "Is throat cancer treatable?", kind="manual")
    factories.paraphrase(turn2, "Is throat cancer treatable?", kind="manual")
    assert selectors.turn_page(turn=turn2).self_bleu_now == pytest.approx(100.0)
    services.paraphrase_edit(paraphrase=a, text="Can doctors cure a tumour of the larynx?")
    page = selectors.turn_page(turn=turn2)
    assert page.self_bleu_before == pytest.approx(100.0)
    assert page.self_bleu_now < 20


def test_provenance_summaries_name_the_producer():
    generated = {"stage": "paraphrase", "backend": "t5", "model": "m/x", "seed": 3, "job": 9, "source": "r"}
    assert selectors.provenance_summary(generated) == "paraphrase · backend=t5 · model=m/x · seed=3 · job 9 · from r_i"
    imported = {"source": "ECAsT.csv", "line": 18, "format": "ECAsT CSV"}
    assert selectors.provenance_summary(imported) == "ECAsT CSV: ECAsT.csv line 18"
    assert selectors.provenance_summary({}) == ""
