"""The inputs both codes are given: data files in the layouts the scripts read (Python 3.7 too).

Everything here is deterministic, so the original and this project (and a
test) build byte-identical inputs.
"""

import json
import os
import random
import re

from .common import float32_round

MRPC_ROWS = [
    (
        "1",
        "He said the foodservice pie business doesn't fit the company's long-term growth "
        "strategy.",
        "The foodservice pie business does not fit our long-term growth strategy, he said.",
    ),
    (
        "0",
        "Magnarelli said Racicot hated the Iraqi regime and looked forward to using his long "
        "years of training in the war.",
        'His wife said he was "100 percent behind George Bush" '
        "and looked forward to using his years of training in the war.",
    ),
    (
        "1",
        "The dollar was at 116.92 yen against the yen, flat on the session.",
        "The dollar was flat at 116.92 yen.",
    ),
    (
        "0",
        "Caf\u00e9 owners in Z\u00fcrich met on Tuesday; \u6771\u4eac was mentioned twice.",
        "Nobody mentioned Tokyo at the meeting of supercalifragilisticexpialidocious owners.",
    ),
    ("1", "Shares of Genentech rose $1.61 to $59.70.", "Genentech shares rose 2.8 percent."),
    (
        "0",
        "The tech-heavy Nasdaq composite index fell 3.99, or 0.25 percent, to 1,616.77.",
        "The broad Standard & Poor's 500 Index fell 0.44 points.",
    ),
    ("1", "A BIG \u00c9CLAIR  with spaces?", "na\u00efve r\u00e9sum\u00e9 co\u00f6perate"),
]


def write_mrpc(directory, rows_by_split):
    os.makedirs(directory, exist_ok=True)
    for split, rows in rows_by_split.items():
        test = split == "test"
        with open(
            os.path.join(directory, split + ".tsv"), "w", encoding="utf-8", newline="\n"
        ) as f:
            f.write(("index" if test else "Quality") + "\t#1 ID\t#2 ID\t#1 String\t#2 String\n")
            for i, (label, a, b) in enumerate(rows):
                f.write(f"{i if test else label}\t{1000 + i}\t{2000 + i}\t{a}\t{b}\n")


TRICKY_EXTRA = "supercalifragilisticexpialidociouslyantidisestablishmentarianism " * 3 + "x" * 250


def write_cased_vocab(source, path):
    """`source`'s vocabulary, the same size, with every tenth word piece of letters
    capitalised: a vocabulary that reads as cased (this project refuses
    --do_lower_case=False with an uncased one) and keeps every id in range."""
    with open(source, encoding="utf-8") as f:
        tokens = f.read().split("\n")
    cased = [
        token.capitalize() if index % 10 == 0 and token.isalpha() else token
        for index, token in enumerate(tokens)
    ]
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(cased))


def tricky_rows(lines):
    """Test rows of hard text: each line paired with the line three further on."""
    # TSV cells cannot hold tabs or line breaks, and csv readers differ on NUL.
    texts = [re.sub("[\t\r]", " ", line).replace("\x00", "") for line in lines if line.strip()]
    texts.append(TRICKY_EXTRA)
    return [("0", t, texts[(i + 3) % len(texts)]) for i, t in enumerate(texts)]


SQUAD_CONTEXTS = [
    "The Normans (Norman: Nourmands; French: Normands; Latin: Normanni) were the people who "
    "in the 10th and 11th centuries gave their name to Normandy, a region in France. They were "
    'descended from Norse ("Norman" comes from "Norseman") raiders and pirates from Denmark, '
    "Iceland and Norway who, under their leader Rollo, agreed to swear fealty to King Charles "
    "III of West Francia. Through generations of assimilation and mixing with the native "
    "Frankish and Roman-Gaulish populations, their descendants would gradually merge with the "
    "Carolingian-based cultures of West Francia.",
    "Z\u00fcrich's caf\u00e9 culture\u202fflourished in the 1890s; the Caf\u00e9 Od\u00e9on "
    "opened in 1911.  Its regulars included Albert Einstein, James Joyce and Lenin.\tTokyo "
    "(\u6771\u4eac\u90fd) hosts a similar scene, with \u55ab\u8336\u5e97 kissaten serving "
    "siphon-brewed coffee since the 1950s. Supercalifragilisticexpialidocious pastries cost "
    "3,50 CHF (about $3.80).",
    "\u0130stanbul's STRASSE and Stra\u00dfe meet at the \ufb01rst caf\u00e9 \u200b near "
    "ZERO\u200bWIDTH signs, \u00c5ngstr\u00f6m-scale \U0001f600 emoji and "
    "\u0627\u0644\u0639\u0631\u0628\u064a\u0629 text; na\u0131ve \u0301accents "
    "and [UNK]-like words such as xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
    " end here. The \u0130stanbul caf\u00e9 opened in 1923.",
]
SQUAD_QUESTIONS = [
    [
        ("In what country is Normandy located?", "France"),
        ("When were the Normans in Normandy?", "10th and 11th centuries"),
        ("Who was the Norse leader?", "Rollo"),
        ("What did the descendants merge with?", "Carolingian-based cultures"),
        ("Who gave their name to the moon?", None),
        # answer_start points at another word: training skips the question
        ("Where were the raiders from?", "Denmark", "Iceland"),
    ],
    [
        ("When did the Caf\u00e9 Od\u00e9on open?", "1911"),
        ("Who were regulars?", "Albert Einstein, James Joyce and Lenin"),
        ("What do kissaten serve?", "siphon-brewed coffee"),
        ("How much do the pastries cost?", "3,50 CHF"),
        ("What is the capital of Mars?", None),
    ],
    [
        ("Which city has a STRASSE?", "\u0130stanbul's"),
        (
            "What scale is mentioned, along with emoji and Arabic text and accents and more words "
            "than the query limit allows?",
            "\u00c5ngstr\u00f6m-scale",
        ),
        ("When did the caf\u00e9 open?", "1923"),
        ("What is first?", "\ufb01rst caf\u00e9"),
        ("Where are the zero-width signs?", "ZERO\u200bWIDTH signs"),
    ],
]


def write_squad(path, version_2):
    paragraphs, qid = [], 0
    for context, questions in zip(SQUAD_CONTEXTS, SQUAD_QUESTIONS):
        qas = []
        for question, answer, *where in questions:
            qid += 1
            if answer is None and not version_2:
                continue
            qa = {"id": f"q{qid}", "question": question, "answers": []}
            if answer is not None:
                start = context.index(where[0] if where else answer)
                qa["answers"] = [{"text": answer, "answer_start": start}]
            if version_2:
                qa["is_impossible"] = answer is None
            qas.append(qa)
        paragraphs.append({"context": context, "qas": qas})
    doc = {
        "version": "v2.0" if version_2 else "1.1",
        "data": [{"title": "T", "paragraphs": paragraphs}],
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False)


SQUAD_FLAGS = [
    "--max_seq_length=48",
    "--doc_stride=16",
    "--max_query_length=12",
    "--max_answer_length=10",
    "--predict_batch_size=4",
]


SQUAD_POST_CASES = [
    # (name, version_2, do_lower_case, n_best_size, max_answer_length, threshold, spread)
    ("v1_lower", False, True, 20, 10, 0.0, 3.0),
    ("v1_cased_nbest3", False, False, 3, 5, 0.0, 3.0),
    ("v2_lower", True, True, 20, 10, 0.0, 3.0),
    ("v2_threshold", True, True, 20, 30, -1.5, 6.0),
    ("v2_cased_threshold", True, False, 7, 4, 2.0, 1.0),
]


GLUE_FILES = {
    "cola": {
        "train.tsv": "gj04\t1\t\tOur friends won't buy this analysis.\n"
        "gj04\t0\t*\tThey drank the pub.\n",
        "dev.tsv": "cj99\t1\t\tThe sailors rode the breeze clear of the rocks.\n",
        "test.tsv": "index\tsentence\n0\tBill whistled past the house.\n"
        "1\tZ\u00fcrich \u6771\u4eac caf\u00e9.\n",
    },
    "mnli": {
        "train.tsv": "index\tpromptID\tpairID\tgenre\ts1b\ts2b\ts1p\ts2p\tsentence1"
        "\tsentence2\tlabel1\tgold_label\n"
        "0\t31193\t31193n\tgovernment\t(a)\t(b)\t(A)\t(B)\tConceptually cream "
        "skimming has two basic dimensions.\tProduct and geography are what make "
        "cream skimming work.\tneutral\tneutral\n",
        "dev_matched.tsv": "index\tpromptID\tpairID\tgenre\ts1b\ts2b\ts1p\ts2p\tsentence1"
        "\tsentence2\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label\n"
        "0\t63735\t63735n\tslate\t(a)\t(b)\t(A)\t(B)\tThe new rights are "
        "nice enough\tEveryone really likes the newest benefits\tneutral"
        "\tentailment\tneutral\tneutral\tneutral\tneutral\n",
        "test_matched.tsv": "index\tpromptID\tpairID\tgenre\ts1b\ts2b\ts1p\ts2p"
        "\tsentence1\tsentence2\n"
        "0\t31493\t31493\ttravel\t(a)\t(b)\t(A)\t(B)\tHierbas, ans "
        "seco, ans dulce.\tHierbas is a name worth looking out for.\n",
    },
    "mrpc": None,
    "xnli": {
        "multinli/multinli.train.zh.tsv": "premise\thypo\tlabel\n"
        "\u4ed6\u8bf4\u4e86\tA\tcontradictory\n"
        "\u597d\tB\tentailment\n",
        "xnli.dev.tsv": "language\tgold_label\ts1b\ts2b\ts1p\ts2p\tsentence1\tsentence2"
        "\tpromptID\tpairID\n"
        "en\tneutral\t(a)\t(b)\t(A)\t(B)\tHe said\tShe said\t1\t1\n"
        "zh\tentailment\t(a)\t(b)\t(A)\t(B)\t\u4ed6\u8bf4\t\u5979\u8bf4"
        "\t2\t2\n",
    },
}


def write_glue(data):
    """The four tasks of the original's run_classifier, each in its own layout, under data/."""
    for task, files in GLUE_FILES.items():
        if files is None:
            write_mrpc(
                os.path.join(data, task),
                {"train": MRPC_ROWS, "dev": MRPC_ROWS[:3], "test": MRPC_ROWS[3:]},
            )
            continue
        for name, text in files.items():
            path = os.path.join(data, task, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)


FEATURE_LINES = [
    "Who was Jim Henson ? ||| Jim Henson was a puppeteer",
    "Caf\u00e9 Z\u00fcrich \u6771\u4eac na\u00efve r\u00e9sum\u00e9",
    "supercalifragilisticexpialidocious and a very long sentence that will surely be "
    "truncated because it goes on and on and on and on with many many words",
    "A BIG \u00c9CLAIR ||| with tabs\tinside",
    "a|||b",
    "",
    "  spaced ||| out  ",
    "x ||| y ||| z",
]


def write_feature_input(path):
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(FEATURE_LINES) + "\n")


def softmax_logits():
    """2,000 rows of 2 float32-exact logits, the same under any Python."""
    rng = random.Random(0)
    return [[float32_round(rng.gauss(0.0, 0.1)) for _ in range(2)] for _ in range(2000)]


def synthetic_logits(unique_id, length, spread):
    """Start and end logits of one SQuAD feature, float32-exact, seeded by its unique_id."""
    rng = random.Random(unique_id)
    return [[float32_round(rng.gauss(0.0, spread)) for _ in range(length)] for _ in range(2)]
