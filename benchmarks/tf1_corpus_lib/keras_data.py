"""Tiny data for the corpus's tf.keras-in-TF-1.x repositories (data.py's convention: each
writer takes the copy's root and writes what the repository reads)."""

import json
import os
import random

from .data import _write

# The Census Income columns as cloudml-samples' census code reads them (its util.py's
# _CSV_COLUMNS), with values of its categorical columns' categories.
_CENSUS_CATEGORIES = {
    "workclass": ["Private", "Self-emp-not-inc", "Local-gov", "State-gov", "Federal-gov"],
    "education": ["Bachelors", "HS-grad", "Masters", "Some-college"],
    "marital_status": ["Married-civ-spouse", "Never-married", "Divorced", "Widowed"],
    "occupation": ["Adm-clerical", "Exec-managerial", "Sales", "Tech-support", "Craft-repair"],
    "relationship": ["Husband", "Wife", "Not-in-family", "Own-child", "Unmarried"],
    "race": ["White", "Black", "Asian-Pac-Islander", "Other"],
    "gender": ["Male", "Female"],
    "native_country": ["United-States", "Mexico", "India", "Germany", "Canada"],
}


def _census_rows(count, seed):
    """Rows of the cleaned Census CSV (commas without spaces, no trailing period), the
    income bracket following age and hours so that there is something to learn."""
    rng = random.Random(seed)
    rows = []
    for _ in range(count):
        age = rng.randint(18, 80)
        hours = rng.randint(10, 70)
        education_num = rng.randint(5, 16)

        def pick(column):
            return rng.choice(_CENSUS_CATEGORIES[column])

        rich = age > 40 and hours > 40 or education_num > 13
        values = [
            age,
            pick("workclass"),
            rng.randint(20000, 400000),
            pick("education"),
            education_num,
            pick("marital_status"),
            pick("occupation"),
            pick("relationship"),
            pick("race"),
            pick("gender"),
            rng.choice([0, 0, 0, 2174, 14084]),
            rng.choice([0, 0, 0, 1902]),
            hours,
            pick("native_country"),
            ">50K" if rich else "<=50K",
        ]
        rows.append(",".join(str(v) for v in values) + "\n")
    return "".join(rows)


def census_tf_keras(root):
    """GoogleCloudPlatform/cloudml-samples, census/tf-keras: the two CSV files its util.py
    downloads into tempfile.gettempdir()/census_data when they are not there, already
    cleaned as it cleans them; the step's TMPDIR is census/tf-keras/tmp."""
    folder = "census/tf-keras/tmp/census_data"
    _write(root, f"{folder}/adult.data.csv", _census_rows(64, 41))
    _write(root, f"{folder}/adult.test.csv", _census_rows(16, 42))


def notebook_script(root, notebook, script):
    """A notebook's code cells, in order, as one script beside it (what `jupyter nbconvert
    --to script` makes of it), its shell and magic lines (`!pip install ...`, `%...`),
    which are IPython's and not Python's, left as comments."""
    with open(os.path.join(root, notebook), encoding="utf-8") as f:
        cells = json.load(f)["cells"]
    parts = []
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        source = cell["source"]
        text = "".join(source) if isinstance(source, list) else source
        lines = [
            "# " + line if line.lstrip().startswith(("!", "%")) else line
            for line in text.splitlines()
        ]
        parts.append("\n".join(lines))
    folder = os.path.dirname(notebook)
    _write(root, os.path.join(folder, script), "\n\n\n".join(parts) + "\n")


def tf_docs_keras_guide(root):
    """tensorflow/docs: the TF 1.x Keras guide (site/en/r1/guide/keras.ipynb) as a script;
    it makes its own random data."""
    notebook_script(root, "site/en/r1/guide/keras.ipynb", "keras.py")


# The characters of keras-bert's load_and_predict demo's sentences (it looks each token up
# in the vocabulary, so every one of them must be there).
_KERAS_BERT_DEMO_TEXT = (
    "数学是利用符号语言研究数量、结构、变化以及空间等概念的一门学科"
    "数学是利用符号语言研究數量、结构、变化以及空间等概念的一門学科。"
    "从某种角度看屬於形式科學的一種。任何一个希尔伯特空间都有一族标准正交基。"
)


def keras_bert_demo(root):
    """CyberZHG/keras-bert: a tiny Chinese BERT folder (bert_config.json, bert_model.ckpt
    with the pre-training heads, vocab.txt holding every character of the demo's
    sentences) that demo/load_model/load_and_predict.py takes as its argument."""
    from .data import SPECIAL, bert_checkpoint, tiny_bert_config

    characters = sorted(set(_KERAS_BERT_DEMO_TEXT))
    vocab = SPECIAL + [f"[unused{i}]" for i in range(5)] + characters
    _write(root, "tiny/vocab.txt", "\n".join(vocab) + "\n")
    config = tiny_bert_config(vocab_size=len(vocab))
    _write(root, "tiny/bert_config.json", json.dumps(config, indent=1))
    bert_checkpoint(root, "tiny/bert_model.ckpt", config)
