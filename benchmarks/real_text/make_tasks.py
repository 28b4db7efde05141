"""Writes the three real-text tasks of benchmarks/grouping_accuracy.py from WordNet 3.0.

    python benchmarks/real_text/make_tasks.py [--wordnet_dir=/usr/share/wordnet]

WordNet's glosses and example sentences are English written by lexicographers,
of natural lengths (Debian's package wordnet-base installs the database in
/usr/share/wordnet). Three tasks, each a `train` and a `dev` file in this
directory (see README.md here):

  senses/   sentence pairs (run_classifier --task_name=custom, TSV): a
            definition and an example sentence of a word that has several
            senses; label 1 when the example is of that sense, 0 when it is
            of another sense of the same word.
  domains/  single sentences with unbalanced labels (custom, TSV): a noun's
            definition and the lexicographer file its sense is filed under
            (person, artifact, plant, animal, location, food), drawn as
            often as WordNet has them (instances left out), so the largest
            class is about 18 times the smallest.
  names/    named entities (run_ner.py, CoNLL layout, IOB2): definitions and
            examples that mention the capitalised names WordNet lists as
            instances, tagged PER, LOC, ORG or MISC by the lexicographer
            file of the instance.

Deterministic (random.Random(2026)); running it again writes the same files.
"""

import argparse
import collections
import os
import random
import re

HERE = os.path.dirname(os.path.abspath(__file__))
POS_FILES = {"n": "data.noun", "v": "data.verb", "a": "data.adj", "r": "data.adv"}
DOMAINS = {"18": "person", "06": "artifact", "20": "plant", "05": "animal", "15": "location"}
DOMAINS["13"] = "food"
NAME_TYPES = {"18": "PER", "15": "LOC", "14": "ORG"}
SIZES = {"senses": (3200, 800), "domains": (3200, 800), "names": (2400, 600)}

Synset = collections.namedtuple(
    "Synset", ["offset", "lexfile", "pos", "lemmas", "definition", "examples", "instance"]
)


def read_synsets(wordnet_dir):
    """Every synset of the four data files, in file order."""
    synsets = []
    for pos, name in POS_FILES.items():
        with open(os.path.join(wordnet_dir, name), encoding="latin-1") as f:
            for line in f:
                if line.startswith("  "):
                    continue
                head, _, gloss = line.partition(" | ")
                fields = head.split()
                count = int(fields[3], 16)
                lemmas = [re.sub(r"\(.*\)$", "", w) for w in fields[4 : 4 + 2 * count : 2]]
                pointers = fields[4 + 2 * count + 1 :]
                parts = [p.strip() for p in gloss.strip().split(";")]
                definition = parts[0]
                examples = [p.strip('"') for p in parts[1:] if p.startswith('"')]
                instance = "@i" in pointers
                synsets.append(
                    Synset(fields[0], fields[1], pos, lemmas, definition, examples, instance)
                )
    return synsets


def clean(text):
    return " ".join(text.replace("\t", " ").split())


def split_by_key(items, key, dev_share, rng):
    """Train and dev items with no key in both (a word's senses stay on one side)."""
    keys = sorted({key(item) for item in items})
    rng.shuffle(keys)
    dev_keys = set(keys[: int(len(keys) * dev_share)])
    train = [item for item in items if key(item) not in dev_keys]
    dev = [item for item in items if key(item) in dev_keys]
    return train, dev


def sense_pairs(synsets, rng):
    """(word, definition, example, label): one positive and one negative per example."""
    by_word = collections.defaultdict(list)
    for synset in synsets:
        if synset.instance:
            continue
        for lemma in synset.lemmas:
            by_word[(lemma.lower(), synset.pos)].append(synset)
    pairs = []
    for (word, _), senses in sorted(by_word.items()):
        if len(senses) < 2:
            continue
        for synset in senses:
            if not synset.examples:
                continue
            example = rng.choice(synset.examples)
            other = rng.choice([s for s in senses if s.offset != synset.offset])
            pairs.append((word, synset.definition, example, 1))
            pairs.append((word, other.definition, example, 0))
    return pairs


def write_tsv(path, header, rows):
    with open(path, "w", encoding="utf-8") as f:
        f.write("\t".join(header) + "\n")
        for row in rows:
            f.write("\t".join(clean(str(value)) for value in row) + "\n")


def make_senses(synsets, out_dir, rng):
    pairs = sense_pairs(synsets, rng)
    train, dev = split_by_key(pairs, lambda p: p[0], 0.2, rng)
    rng.shuffle(train)
    rng.shuffle(dev)
    n_train, n_dev = SIZES["senses"]
    header = ("definition", "example", "label")
    write_tsv(os.path.join(out_dir, "train.tsv"), header, [p[1:] for p in train[:n_train]])
    write_tsv(os.path.join(out_dir, "dev.tsv"), header, [p[1:] for p in dev[:n_dev]])


def make_domains(synsets, out_dir, rng):
    items = [
        (s.offset, s.definition, DOMAINS[s.lexfile])
        for s in synsets
        if s.pos == "n" and s.lexfile in DOMAINS and not s.instance
    ]
    rng.shuffle(items)
    n_train, n_dev = SIZES["domains"]
    header = ("definition", "label")
    write_tsv(os.path.join(out_dir, "train.tsv"), header, [i[1:] for i in items[:n_train]])
    dev = items[n_train : n_train + n_dev]
    write_tsv(os.path.join(out_dir, "dev.tsv"), header, [i[1:] for i in dev])


def name_lexicon(synsets):
    """Capitalised instance names -> PER/LOC/ORG/MISC; names of two types are left out."""
    types = collections.defaultdict(set)
    for synset in synsets:
        if not synset.instance:
            continue
        kind = NAME_TYPES.get(synset.lexfile, "MISC")
        for lemma in synset.lemmas:
            words = tuple(lemma.split("_"))
            if all(w[:1].isupper() for w in words):
                types[words].add(kind)
    return {words: kinds.pop() for words, kinds in types.items() if len(kinds) == 1}


def tokenize_words(text):
    return re.findall(r"[A-Za-z0-9]+(?:[-'][A-Za-z0-9]+)*|[^\sA-Za-z0-9]", text)


def tag_words(words, lexicon, longest):
    tags = ["O"] * len(words)
    i = 0
    while i < len(words):
        for size in range(min(longest, len(words) - i), 0, -1):
            kind = lexicon.get(tuple(words[i : i + size]))
            if kind:
                tags[i] = "B-" + kind
                for j in range(i + 1, i + size):
                    tags[j] = "I-" + kind
                i += size
                break
        else:
            i += 1
    return tags


def make_names(synsets, out_dir, rng):
    lexicon = name_lexicon(synsets)
    longest = max(len(words) for words in lexicon)
    sentences = []
    for synset in synsets:
        for text in [synset.definition] + synset.examples:
            words = tokenize_words(text)
            if 3 <= len(words) <= 60:
                tags = tag_words(words, lexicon, longest)
                if any(tag != "O" for tag in tags):
                    sentences.append((synset.offset, words, tags))
    train, dev = split_by_key(sentences, lambda s: s[0], 0.2, rng)
    rng.shuffle(train)
    rng.shuffle(dev)
    n_train, n_dev = SIZES["names"]
    for name, part in (("train.txt", train[:n_train]), ("dev.txt", dev[:n_dev])):
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            for _, words, tags in part:
                for word, tag in zip(words, tags):
                    f.write(f"{word} {tag}\n")
                f.write("\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wordnet_dir", default="/usr/share/wordnet")
    parser.add_argument("--out_dir", default=HERE)
    args = parser.parse_args()
    synsets = read_synsets(args.wordnet_dir)
    for task, make in (("senses", make_senses), ("domains", make_domains), ("names", make_names)):
        out_dir = os.path.join(args.out_dir, task)
        os.makedirs(out_dir, exist_ok=True)
        make(synsets, out_dir, random.Random(2026))
        print("wrote", out_dir)


if __name__ == "__main__":
    main()
