"""A tiny labelled collection with passage texts and qrels, for permutation experiment tests."""

from tests import factories

CONVERSATIONS = {
    # topic: [(utterance, class)]
    "1": [
        ("What is throat cancer?", "SE"),
        ("Is it treatable?", "FT"),
        ("Tell me about lung cancer.", "SE"),
        ("What are its symptoms?", "PT"),
        ("How is it diagnosed?", "PT"),
    ],
    "2": [
        ("Tell me about honey bees.", "SE"),
        ("Why are they dying?", "FT"),
        ("What about bumblebees?", "SE"),
        ("Where do they nest?", "PT"),
    ],
}

PASSAGES = {
    "P1": "Throat cancer is cancer that develops in the throat (pharynx) or voice box (larynx).",
    "P2": "Throat cancer is treatable with radiation therapy, surgery and chemotherapy when found early.",
    "P3": "Lung cancer is a cancer that begins in the lungs and most often occurs in people who smoke.",
    "P4": "Symptoms of lung cancer include a cough that does not go away and coughing up blood.",
    "P5": "Lung cancer is diagnosed with imaging tests, sputum cytology and a tissue biopsy.",
    "P6": "Honey bees are flying insects that live in colonies and produce honey and beeswax.",
    "P7": "Honey bees are dying because of pesticides, mites and loss of habitat.",
    "P8": "Bumblebees are large hairy bees; bumblebee queens nest in abandoned rodent burrows in the ground.",
    "P9": "Cats are small carnivorous mammals that are often kept as pets.",
}

QRELS = {
    "1_1": {"P1": 4, "P2": 1},
    "1_2": {"P2": 3},
    "1_3": {"P3": 4},
    "1_4": {"P4": 3, "P3": 1},
    "1_5": {"P5": 4},
    "2_1": {"P6": 4},
    "2_2": {"P7": 4},
    "2_3": {"P8": 2},
    "2_4": {"P8": 3},
}


def labelled_collection(name="Perm mini", classes=True):
    coll = factories.collection_with_turns(
        name=name, year=2020, conversations={t: [u for u, _ in turns] for t, turns in CONVERSATIONS.items()}
    )
    if classes:
        for conv in coll.conversations.all():
            for turn, (_, cls) in zip(conv.turns.order_by("number"), CONVERSATIONS[conv.topic_id], strict=True):
                turn.utterance_class = cls
                turn.save()
    factories.passages(PASSAGES, source="test")
    version = factories.qrels_version(coll, "original", QRELS)
    return coll, version
