"""Writes the demo NER set (train.txt, dev.txt, test.txt) in CoNLL layout.

Sentences come from hand-written templates whose slots are filled from
small pools of invented or common names, so every tag is known by
construction. The same seed always gives the same files:

    python demo_data/ner/make_ner_data.py demo_data/ner
"""

import os
import random
import sys

SEED = 2026
SPLITS = (("train.txt", 400), ("dev.txt", 100), ("test.txt", 100))
SENTENCES_PER_DOCUMENT = 10


def _names(text):
    return [name.strip() for name in text.split(",")]


# Names invented or common; several words make one multi-word entity.
POOLS = {
    "PER": _names(
        "Anna Lindqvist, Tomas Okafor, Maren Quist, Oskar Brennan, Lidia Moreau, "
        "Rafael Castellano, Priya Raman, Kwame Mensah, Ingrid Haddad, Mateo Ferreira, "
        "Yusuf Demir, Elena Novak, Henrik Ashby, Sofia Vermeulen, Dmitri Kowalski, "
        "Amara Eze, Lucas Marlowe, Hana Sato, Felix Delacroix, Noor Khalil, Brennan, "
        "Okafor, Lindqvist, Castellano, Haddad, Marlowe, Sato"
    ),
    "LOC": _names(
        "Lisbon, Nairobi, Oslo, Hollinford, Kyoto, Valparaiso, Tasmania, Brittany, "
        "New Harwick, Port Elmsley, Lake Corran, Mount Ferris, Eastbridge, Sardinia, "
        "Patagonia, Bavaria, Quebec, Marrakesh"
    ),
    "ORG": _names(
        "Harwick United, Northgate Bank, Meridian Airlines, Ferris Motors, "
        "Hollinford Gazette, Bluewater Energy, Atlas Shipping, Kestrel Software, "
        "Pinecrest University, Elmsley Rovers, Corran Water Board, Vantor Group, "
        "Sable Pharmaceuticals, Redfern Athletic"
    ),
    "MISC": _names(
        "Norwegian, Japanese, Portuguese, Kenyan, French, Chilean, Bavarian, Olympic, "
        "Harvest Festival, Spring Regatta, Corran Cup, Winter Games"
    ),
}

# {TYPE} is a slot; {N} a small number.
TEMPLATES = [
    "{PER} , a spokesman for {ORG} , said talks in {LOC} would resume on Monday .",
    "{ORG} shares rose {N} percent in {LOC} after the {MISC} market opened .",
    "{PER} scored twice as {ORG} beat {ORG} {N} - {N} in {LOC} .",
    "The {MISC} delegation arrived in {LOC} on Tuesday .",
    "{PER} told reporters that {ORG} would open an office in {LOC} .",
    "Police in {LOC} said {PER} was released without charge .",
    "{PER} won the {MISC} title after beating {PER} in straight sets .",
    "{ORG} said it had hired {PER} as chief executive .",
    "Rain delayed the {MISC} in {LOC} for {N} hours .",
    "{PER} ( {MISC} ) beat {PER} ( {MISC} ) {N} - {N} .",
    "Flights from {LOC} to {LOC} were cancelled by {ORG} .",
    "The {MISC} government asked {ORG} to explain the delay .",
    "{PER} will lead the {MISC} team at the {MISC} in {LOC} .",
    "Analysts at {ORG} expect prices in {LOC} to fall by {N} percent .",
    "{PER} and {PER} met in {LOC} to discuss the merger of {ORG} and {ORG} .",
    "The meeting ended without agreement .",
    "Prices were unchanged in late trading .",
    "Officials said the road would reopen within {N} days .",
    "It was the first win of the season for the visitors .",
]


def _fill(template, rng):
    """Returns [(word, tag)] for one template, slots tagged in IOB2."""
    pairs = []
    for slot in template.split():
        if slot == "{N}":
            pairs.append((str(rng.randint(1, 12)), "O"))
        elif slot.startswith("{") and slot.endswith("}"):
            entity_type = slot[1:-1]
            for i, word in enumerate(rng.choice(POOLS[entity_type]).split()):
                pairs.append((word, ("B-" if i == 0 else "I-") + entity_type))
        else:
            pairs.append((slot, "O"))
    return pairs


def _roll_call(rng):
    """A long sentence (a list of attendees), longer than a short window."""
    names = rng.sample(POOLS["PER"][:20], rng.randint(6, 10))
    pairs = [("Those", "O"), ("attending", "O"), ("in", "O")]
    pairs += _fill("{LOC}", rng) + [("included", "O")]
    for i, name in enumerate(names):
        if i:
            pairs.append(("and" if i == len(names) - 1 else ",", "O"))
        pairs += [
            (word, ("B-" if j == 0 else "I-") + "PER") for j, word in enumerate(name.split())
        ]
    return pairs + [(".", "O")]


def sentences(rng, count):
    """`count` tagged sentences, about one in fifteen a long roll call."""
    return [
        _roll_call(rng) if rng.random() < 1 / 15 else _fill(rng.choice(TEMPLATES), rng)
        for _ in range(count)
    ]


def write(path, tagged):
    with open(path, "w", encoding="utf-8") as f:
        for i, sentence in enumerate(tagged):
            if i % SENTENCES_PER_DOCUMENT == 0:
                f.write("-DOCSTART- O\n\n")
            f.writelines(f"{word} {tag}\n" for word, tag in sentence)
            f.write("\n")


def main(output_dir):
    rng = random.Random(SEED)
    for name, count in SPLITS:
        write(os.path.join(output_dir, name), sentences(rng, count))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
