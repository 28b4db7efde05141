"""Tiny data in each repository's own format, written into its copy before it runs.

Every writer takes the copy's root and writes the files the repository's
README says it reads, small enough that a pipeline runs in seconds. The
text is made from a fixed word list, so both sides read the same bytes.
"""

import json
import os
import random
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# A Python with sentencepiece, for the repositories whose tokenizer is a SentencePiece
# model (tf1_corpus.py sets it to the TF 1.15 side's interpreter).
SENTENCEPIECE_PYTHON = None

WORDS = (
    "the a film story actor plot music scene city river london paris maria john "
    "good bad great dull funny sad long short new old bright dark quick slow "
    "loves hates sees makes lives walks in on at with from to and but not very"
).split()
PERSONS = ["maria", "john", "anna", "peter"]
PLACES = ["london", "paris", "berlin", "madrid"]


def _save_random_variables(prefix, shapes, ones=()):
    """A checkpoint at `prefix` of {name: shape}, seeded normal values of deviation 0.02 (the
    names ending in one of `ones`, a layer norm's scale, all ones), without a meta graph."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.RandomState(7)
    with tf.Graph().as_default():
        variables = [
            tf.compat.v1.Variable(
                np.ones(shape, np.float32)
                if name.endswith(ones)
                else rng.normal(0, 0.02, shape).astype(np.float32),
                name=name,
            )
            for name, shape in shapes.items()
        ]
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            tf.compat.v1.train.Saver(variables).save(session, prefix, write_meta_graph=False)


def _write(root, relative, text, mode="w"):
    path = os.path.join(root, relative)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, mode, encoding=None if "b" in mode else "utf-8") as f:
        f.write(text)
    return path


def sentences(count, seed, low=4, high=9, words=WORDS):
    rng = random.Random(seed)
    return [
        " ".join(rng.choice(words) for _ in range(rng.randint(low, high))) for _ in range(count)
    ]


def labelled(count, seed):
    """(sentence, label 0/1) pairs whose label a model can learn: 'good' words or not."""
    rng = random.Random(seed)
    out = []
    for text in sentences(count, seed):
        label = rng.randint(0, 1)
        out.append(((("great good " if label else "dull bad ") + text), label))
    return out


def tagged(count, seed):
    """[(word, tag)] sentences in the IOB scheme: persons and places among other words."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        sentence = []
        for _ in range(rng.randint(4, 8)):
            kind = rng.random()
            if kind < 0.2:
                sentence.append((rng.choice(PERSONS), "B-PER"))
            elif kind < 0.35:
                sentence.append((rng.choice(PLACES), "B-LOC"))
                if rng.random() < 0.3:
                    sentence.append(("city", "I-LOC"))
            else:
                sentence.append((rng.choice(WORDS[:30]), "O"))
        out.append(sentence)
    return out


def glove_lines(words, dim, seed):
    rng = random.Random(seed)
    return "".join(
        word + " " + " ".join(f"{rng.uniform(-1, 1):.5f}" for _ in range(dim)) + "\n"
        for word in words
    )


# ---------------------------------------------------------------------------
# Per repository


def rt_polarity(root):
    """dennybritz/cnn-text-classification-tf: one sentence a line, .pos and .neg files."""
    pairs = labelled(60, 1)
    _write(root, "data/tiny/rt-polarity.pos", "".join(t + "\n" for t, y in pairs if y))
    _write(root, "data/tiny/rt-polarity.neg", "".join(t + "\n" for t, y in pairs if not y))


def tf_ner_example(root):
    """guillaumegenthial/tf_ner: {train,testa,testb}.{words,tags}.txt (its example set is
    kept) and the GloVe text file build_glove.py reads, 300 numbers a word."""
    example = os.path.join(root, "data", "example")
    words = set()
    for name in ("train", "testa", "testb"):
        with open(os.path.join(example, f"{name}.words.txt"), encoding="utf-8") as f:
            words.update(f.read().split())
    _write(example, "glove.840B.300d.txt", glove_lines(sorted(words)[::2], 300, 2))


def conll_sequence_tagging(root):
    """guillaumegenthial/sequence_tagging: data/test.txt ("word TAG" lines, a blank line
    between sentences) and a 300-number GloVe file under data/glove.6B/."""
    text = "".join("".join(f"{w} {t}\n" for w, t in sentence) + "\n" for sentence in tagged(30, 3))
    _write(root, "data/test.txt", text)
    vocab = sorted(set(WORDS) | set(PERSONS) | set(PLACES))
    _write(root, "data/glove.6B/glove.6B.300d.txt", glove_lines(vocab[::2], 300, 4))


CNEWS_LABELS = ["体育", "财经", "房产", "家居", "教育", "科技", "时尚", "时政", "游戏", "娱乐"]


def cnews(root):
    """gaussic/text-classification-cnn-rnn: data/cnews/cnews.{train,val,test}.txt, each line
    "label<TAB>text" with the ten labels of its THUCNews subset (characters are tokens)."""
    rng = random.Random(5)
    chars = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动"
    for name, count in (("train", 60), ("val", 20), ("test", 20)):
        lines = []
        for i in range(count):
            label = CNEWS_LABELS[i % len(CNEWS_LABELS)]
            body = "".join(rng.choice(chars) for _ in range(rng.randint(20, 60)))
            lines.append(f"{label}\t{label}{body}\n")
        _write(root, f"data/cnews/cnews.{name}.txt", "".join(lines))


def json_lines(root, relative, rows):
    _write(root, relative, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))


def _byte_symbols():
    """GPT-2's byte-level alphabet: the printable Latin-1 bytes stand for themselves, every
    other byte for the code point 256 + its rank among them."""
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), 256)]
    symbols = {}
    extra = 0
    for byte in range(256):
        if byte in kept:
            symbols[byte] = chr(byte)
        else:
            symbols[byte] = chr(256 + extra)
            extra += 1
    return symbols


def gpt2_tiny_model(root, name="tiny", n_ctx=1024, n_embd=16, n_layer=2):
    """models/<name>/: hparams.json, encoder.json (the 256 byte symbols and <|endoftext|>),
    vocab.bpe (no merges) and a checkpoint of GPT-2's variables with random weights, plus a
    text file to fine-tune on (data/tiny.txt)."""
    symbols = _byte_symbols()
    encoder = {symbol: byte for byte, symbol in symbols.items()}
    encoder["<|endoftext|>"] = 256
    hparams = {"n_vocab": 257, "n_ctx": n_ctx, "n_embd": n_embd, "n_head": 2, "n_layer": n_layer}
    model_dir = os.path.join(root, "models", name)
    _write(model_dir, "hparams.json", json.dumps(hparams))
    _write(model_dir, "encoder.json", json.dumps(encoder))
    _write(model_dir, "vocab.bpe", "#version: 0.2\n\n")
    shapes = {"model/wpe": [n_ctx, n_embd], "model/wte": [257, n_embd]}
    for layer in range(n_layer):
        block = f"model/h{layer}"
        for norm in ("ln_1", "ln_2"):
            shapes[f"{block}/{norm}/g"] = [n_embd]
            shapes[f"{block}/{norm}/b"] = [n_embd]
        for scope, n_in, n_out in (
            ("attn/c_attn", n_embd, 3 * n_embd),
            ("attn/c_proj", n_embd, n_embd),
            ("mlp/c_fc", n_embd, 4 * n_embd),
            ("mlp/c_proj", 4 * n_embd, n_embd),
        ):
            shapes[f"{block}/{scope}/w"] = [1, n_in, n_out]
            shapes[f"{block}/{scope}/b"] = [n_out]
    shapes["model/ln_f/g"] = [n_embd]
    shapes["model/ln_f/b"] = [n_embd]
    _save_random_variables(os.path.join(model_dir, "model.ckpt"), shapes, ones=("/g",))
    _write(root, "data/tiny.txt", "\n".join(sentences(400, 8)) + "\n")


def gpt2_simple_example(root):
    """minimaxir/gpt-2-simple: the tiny model and text of gpt2_tiny_model, and its README's
    Python example as a script (fine-tune, then generate), on them, with few steps."""
    gpt2_tiny_model(root)
    _write(
        root,
        "readme_example.py",
        "import gpt_2_simple as gpt2\n\n"
        "sess = gpt2.start_tf_sess()\n"
        'gpt2.finetune(sess, "data/tiny.txt", model_name="tiny", steps=4, save_every=2,\n'
        "              sample_every=100, print_every=1, combine=100)\n"
        "gpt2.generate(sess, length=8, seed=1)\n",
    )


CHARS = "我们在北京上海广州工作学习生活他她是的了和中国人民大学公司银行今天明天天气很好"
ZH_PERSONS = ["张伟", "王芳", "李娜", "刘洋"]
ZH_PLACES = ["北京", "上海", "广州", "深圳"]
ZH_ORGS = ["中国银行", "人民大学"]


def zh_tagged(count, seed):
    """[(character, tag)] Chinese sentences in the IOB scheme (PER, LOC, ORG)."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        sentence = []
        for _ in range(rng.randint(3, 6)):
            kind = rng.random()
            if kind < 0.5:
                sentence += [(c, "O") for c in rng.choice(CHARS) + rng.choice(CHARS)]
                continue
            entity, label = (
                (rng.choice(ZH_PERSONS), "PER")
                if kind < 0.7
                else (rng.choice(ZH_PLACES), "LOC")
                if kind < 0.9
                else (rng.choice(ZH_ORGS), "ORG")
            )
            sentence += [(c, ("B-" if i == 0 else "I-") + label) for i, c in enumerate(entity)]
        out.append(sentence)
    return out


def _char_tag_lines(sentences_, separator):
    return "".join("".join(f"{c}{separator}{t}\n" for c, t in s) + "\n" for s in sentences_)


def zh_ner_tf(root):
    """Determined22/zh-NER-TF: data_path/{train_data,test_data}, "char tag" lines, a blank
    line between sentences (its word2id.pkl is kept)."""
    _write(root, "data_path/train_data", _char_tag_lines(zh_tagged(40, 11), "\t"))
    _write(root, "data_path/test_data", _char_tag_lines(zh_tagged(12, 12), "\t"))


def chinese_ner(root):
    """zjy-ucas/ChineseNER: data/example.{train,dev,test} ("char tag" lines, blank line
    between sentences) and wiki_100.utf8, 100-number character vectors."""
    for name, count, seed in (("train", 40, 13), ("dev", 12, 14), ("test", 12, 15)):
        _write(root, f"data/example.{name}", _char_tag_lines(zh_tagged(count, seed), " "))
    chars = sorted(set(CHARS + "".join(ZH_PERSONS + ZH_PLACES + ZH_ORGS)))
    _write(root, "wiki_100.utf8", glove_lines(chars[::2], 100, 16))


def sf_crime(root):
    """jiegzhan/multi-class-text-classification-cnn-rnn: data/train.csv.zip (a CSV of the
    Kaggle crime data's columns, Category and Descript among them) and a CSV of Descript
    lines to predict ('|'-separated), and tiny_config.json: its training_config.json with
    smaller batches evaluated every 2 steps."""
    import io
    import zipfile

    rng = random.Random(17)
    categories = ["LARCENY/THEFT", "ASSAULT", "VANDALISM"]
    rows = ["Dates,Category,Descript,DayOfWeek"]
    for i in range(90):
        category = categories[i % 3]
        words = " ".join(rng.choice(WORDS).upper() for _ in range(rng.randint(3, 7)))
        rows.append(f"2015-05-13 23:53:00,{category},{category.split('/')[0]} {words},Wednesday")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("train.csv", "\n".join(rows) + "\n")
    _write(root, "data/train.csv.zip", buffer.getvalue(), "wb")
    predict = ["Descript"] + [row.split(",")[2] for row in rows[1:21]]
    _write(root, "data/tiny_samples.csv", "\n".join(predict) + "\n")
    # The shipped training_config.json's values, but batches and an evaluation (whose best
    # step training saves) that fit 90 rows.
    with open(os.path.join(root, "training_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    config.update({"batch_size": 16, "evaluate_every": 2})
    _write(root, "tiny_config.json", json.dumps(config, indent=1))


def person_match(root):
    """dhwajraj/deep-siamese-text-similarity: a TSV of name pairs, "x1<TAB>x2<TAB>y/n"
    (the format of its person_match.train2), and the evaluation file of the same form."""
    rng = random.Random(18)
    names = ["Maria Lopez", "John Smith", "Anna Berg", "Peter Novak", "Lena Kraus", "Omar Haddad"]
    lines = []
    for _ in range(120):
        a = rng.choice(names)
        if rng.random() < 0.5:
            lines.append(f"{a}\t{a.split()[rng.randint(0, 1)]}\ty")
        else:
            lines.append(f"{a}\t{rng.choice([n for n in names if n != a]).split()[1]}\tn")
    _write(root, "person_match.tiny", "\n".join(lines) + "\n")
    _write(root, "validation.tiny", "\n".join(lines[:30]) + "\n")


# ---------------------------------------------------------------------------
# BERT relatives: a tiny config, a vocabulary, a checkpoint, GLUE / LCQMC files

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def bert_vocab(root, relative, chinese=False):
    tokens = sorted(set(CHARS + "".join(ZH_PERSONS + ZH_PLACES + ZH_ORGS))) if chinese else WORDS
    _write(root, relative, "\n".join(SPECIAL + [f"[unused{i}]" for i in range(5)] + tokens) + "\n")


def tiny_bert_config(vocab_size=21128, **extra):
    config = {
        "attention_probs_dropout_prob": 0.1,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": 32,
        "initializer_range": 0.02,
        "intermediate_size": 64,
        "max_position_embeddings": 64,
        "num_attention_heads": 2,
        "num_hidden_layers": 2,
        "type_vocab_size": 2,
        "vocab_size": vocab_size,
    }
    config.update(extra)
    return config


def bert_checkpoint(root, relative_prefix, config):
    """A checkpoint of BERT's variables (the names Google's checkpoints have, BertModel's and
    the pretraining heads', as this project's modeling.py lists them) with random weights,
    for scripts that start from --init_checkpoint."""
    sys.path.insert(0, REPO)
    import modeling

    shapes = modeling.bert_variable_shapes(modeling.BertConfig.from_dict(config))
    _save_random_variables(os.path.join(root, relative_prefix), shapes, ones=("gamma",))


def mrpc(root, data_dir):
    """GLUE MRPC's TSVs (Quality, #1 ID, #2 ID, #1 String, #2 String; test with an index)."""
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    pairs = labelled(40, 20)
    others = sentences(40, 21)
    rows = [
        f"{y}\t{k}\t{k + 1000}\t{a}\t{b}\n" for k, ((a, y), b) in enumerate(zip(pairs, others))
    ]
    _write(root, f"{data_dir}/train.tsv", header + "".join(rows[:24]))
    _write(root, f"{data_dir}/dev.tsv", header + "".join(rows[24:32]))
    test = "index\t#1 ID\t#2 ID\t#1 String\t#2 String\n" + "".join(
        f"{k}\t{k}\t{k + 1000}\t{a}\t{b}\n"
        for k, ((a, _), b) in enumerate(zip(pairs[32:], others))
    )
    _write(root, f"{data_dir}/test.tsv", test)


def lcqmc(root, data_dir, names=("train.txt", "dev.txt", "test.txt")):
    """LCQMC's files: "sentence<TAB>sentence<TAB>label" lines of Chinese pairs."""
    rng = random.Random(22)
    for name, count in zip(names, (32, 12, 12)):
        lines = []
        for _ in range(count):
            a = "".join(rng.choice(CHARS) for _ in range(rng.randint(5, 12)))
            same = rng.random() < 0.5
            b = a[::-1] if same else "".join(rng.choice(CHARS) for _ in range(len(a)))
            lines.append(f"{a}\t{b}\t{int(same)}\n")
        _write(root, f"{data_dir}/{name}", "".join(lines))


def sentencepiece_model(root, prefix, text, vocab_size, options=""):
    """A SentencePiece model trained on `text` (prefix.model, prefix.vocab), as the
    repositories' READMEs make theirs with spm_train."""
    _write(root, prefix + ".txt", text)
    trainer = "import sentencepiece as spm, sys\nspm.SentencePieceTrainer.Train(sys.argv[1])\n"
    arguments = (
        f"--input={os.path.join(root, prefix)}.txt --model_prefix={os.path.join(root, prefix)} "
        f"--vocab_size={vocab_size} {options}"
    )
    subprocess.run(
        [SENTENCEPIECE_PYTHON, "-c", trainer, arguments], check=True, capture_output=True
    )


def albert_mrpc(root):
    """google-research/albert: MRPC in glue/MRPC, a SentencePiece model of ALBERT's special
    pieces trained on its text (its vocabulary beside) and a tiny albert_config."""
    mrpc(root, "glue/MRPC")
    text = "\n".join(sentences(200, 28)) + "\n"
    sentencepiece_model(
        root,
        "tiny/spm",
        text,
        60,
        "--pad_id=0 --unk_id=1 --eos_id=-1 --bos_id=-1 --control_symbols=[CLS],[SEP],[MASK] "
        "--model_type=unigram --hard_vocab_limit=false",
    )
    config = tiny_bert_config(
        vocab_size=60,
        embedding_size=16,
        num_hidden_groups=1,
        net_structure_type=0,
        gap_size=0,
        num_memory_blocks=0,
        inner_group_num=1,
        down_scale_factor=1,
    )
    _write(root, "tiny/albert_config.json", json.dumps(config, indent=1))


def albert_zh_lcqmc(root):
    """brightmart/albert_zh: LCQMC in lcqmc/ and the vocabulary its README names."""
    lcqmc(root, "lcqmc")
    bert_vocab(root, "albert_config/vocab.txt", chinese=True)


def roberta_zh_lcqmc(root):
    """brightmart/roberta_zh: LCQMC in data/lcqmc, a tiny BERT config, its vocabulary and a
    checkpoint of BERT's names to start from."""
    lcqmc(root, "data/lcqmc")
    bert_vocab(root, "tiny/vocab.txt", chinese=True)
    config = tiny_bert_config(vocab_size=120)
    _write(root, "tiny/bert_config.json", json.dumps(config, indent=1))
    bert_checkpoint(root, "tiny/bert_model.ckpt", config)


def bert_ner(root):
    """macanv/BERT-BiLSTM-CRF-NER: NERdata/{train,dev,test}.txt ("char tag" lines, a blank
    line between sentences), and a tiny BERT (config, vocabulary, checkpoint)."""
    for name, count, seed in (("train", 40, 23), ("dev", 12, 24), ("test", 12, 25)):
        _write(root, f"NERdata/{name}.txt", _char_tag_lines(zh_tagged(count, seed), " "))
    bert_vocab(root, "tiny/vocab.txt", chinese=True)
    config = tiny_bert_config(vocab_size=120)
    _write(root, "tiny/bert_config.json", json.dumps(config, indent=1))
    bert_checkpoint(root, "tiny/bert_model.ckpt", config)


def squad_v1(root):
    """SQuAD v1.1 JSON (data/paragraphs/qas with answers and their character offsets) in
    squad/{train,dev}-v1.1.json, and a 300-number GloVe text file of its words."""
    rng = random.Random(26)
    articles = []
    vocabulary = set()
    for a in range(3):
        paragraphs = []
        for _ in range(2):
            person, place = rng.choice(PERSONS).title(), rng.choice(PLACES).title()
            filler = " ".join(sentences(2, rng.randint(0, 999)))
            context = f"{person} lives in {place} . {filler} . {person} loves music ."
            vocabulary.update(context.lower().split() + context.split())
            qas = [
                {
                    "id": f"q{a}-{len(paragraphs)}-{k}",
                    "question": question,
                    "answers": [{"text": answer, "answer_start": context.index(answer)}],
                }
                for k, (question, answer) in enumerate(
                    [(f"Where does {person} live ?", place), (f"Who lives in {place} ?", person)]
                )
            ]
            vocabulary.update(q["question"] for q in qas)
            paragraphs.append({"context": context, "qas": qas})
        articles.append({"title": f"article_{a}", "paragraphs": paragraphs})
    for name, part in (("train", articles), ("dev", articles[:2])):
        _write(root, f"squad/{name}-v1.1.json", json.dumps({"data": part, "version": "1.1"}))
    words = sorted({w for text in vocabulary for w in text.split()} | {"where", "who", "?"})
    _write(root, "glove/glove.840B.300d.txt", glove_lines(words, 300, 27))


def bert4keras_example(root):
    """bojone/bert4keras: a tiny BERT (config, Chinese vocabulary, checkpoint) and its
    README's feature-extraction example as a script, on them."""
    bert_vocab(root, "tiny/vocab.txt", chinese=True)
    config = tiny_bert_config(vocab_size=120)
    _write(root, "tiny/bert_config.json", json.dumps(config, indent=1))
    bert_checkpoint(root, "tiny/bert_model.ckpt", config)
    _write(
        root,
        "readme_example.py",
        "from bert4keras.backend import keras\n"
        "from bert4keras.models import build_transformer_model\n"
        "from bert4keras.tokenizers import Tokenizer\n"
        "from bert4keras.snippets import to_array\n"
        "import numpy as np\n\n"
        "config_path = 'tiny/bert_config.json'\n"
        "checkpoint_path = 'tiny/bert_model.ckpt'\n"
        "dict_path = 'tiny/vocab.txt'\n\n"
        "tokenizer = Tokenizer(dict_path, do_lower_case=True)\n"
        "model = build_transformer_model(config_path, checkpoint_path)\n"
        "token_ids, segment_ids = tokenizer.encode(u'张伟在北京工作')\n"
        "token_ids, segment_ids = to_array([token_ids], [segment_ids])\n"
        "np.set_printoptions(precision=6, threshold=100000)\n"
        "print(model.predict([token_ids, segment_ids]))\n",
    )


def electra_corpus(root):
    """google-research/electra: a corpus folder of text files (a sentence a line, a blank
    line between documents) and the vocabulary in the data directory."""
    documents = ["\n".join(sentences(6, 30 + d)) for d in range(12)]
    _write(root, "corpus/part-0.txt", "\n\n".join(documents) + "\n")
    bert_vocab(root, "data/vocab.txt")


def electra_hparams(**extra):
    """The --hparams JSON of a tiny ELECTRA run on electra_corpus's vocabulary."""
    hparams = {
        "debug": True,
        "num_train_steps": 4,
        "max_seq_length": 32,
        "vocab_size": bert_vocab_size(),
        "embedding_size": 16,
        "save_checkpoints_steps": 2,
        "train_batch_size": 4,
        "eval_batch_size": 4,
        "num_eval_steps": 2,
        "model_hparam_overrides": {
            "hidden_size": 32,
            "num_hidden_layers": 2,
            "intermediate_size": 64,
            "num_attention_heads": 2,
        },
    }
    hparams.update(extra)
    return json.dumps(hparams)


def bert_vocab_size(chinese=False):
    tokens = sorted(set(CHARS + "".join(ZH_PERSONS + ZH_PLACES + ZH_ORGS))) if chinese else WORDS
    return len(SPECIAL) + 5 + len(tokens)


def iwslt2016(root):
    """Kyubyong/transformer: iwslt2016/de-en/ as its download gives it: train.tags.de-en.{de,en}
    (a sentence a line, markup lines starting with "<") and the tst2013 / tst2014 XML files
    (a sentence in each <seg id=...> line)."""
    pairs = list(zip(sentences(60, 40), sentences(60, 41)))
    base = "iwslt2016/de-en"
    for side, k in (("de", 0), ("en", 1)):
        train = "<url>http://example</url>\n" + "".join(p[k] + "\n" for p in pairs[:40])
        _write(root, f"{base}/train.tags.de-en.{side}", train)
        for name, part in (("tst2013", pairs[40:50]), ("tst2014", pairs[50:])):
            segs = "".join(f'<seg id="{i + 1}"> {p[k]} </seg>\n' for i, p in enumerate(part))
            _write(root, f"{base}/IWSLT16.TED.{name}.de-en.{side}.xml", f"<doc>\n{segs}</doc>\n")


def enwik8_tokens(root):
    """kimiyoung/transformer-xl: data/enwik8/{train,valid,test}.txt as its prep_enwik8.py
    writes them (the bytes of the text as numbers, space-separated, one line each)."""
    rng = random.Random(42)
    for name, count in (("train", 60), ("valid", 20), ("test", 20)):
        lines = [" ".join(str(rng.randint(32, 60)) for _ in range(40)) for _ in range(count)]
        _write(root, f"data/enwik8/{name}.txt", "\n".join(lines) + "\n")


def xlnet_imdb(root):
    """zihangdai/xlnet: IMDB as its aclImdb folders ({train,test}/{neg,pos}/*.txt, a review a
    file), a SentencePiece model with XLNet's special pieces at its fixed ids (<unk> 0, <s>
    1, </s> 2, <cls> 3, <sep> 4, <pad> 5, <mask> 6, <eod> 7, <eop> 8) and a tiny
    xlnet_config.json."""
    for split, count in (("train", 16), ("test", 8)):
        for k, (text, label) in enumerate(labelled(count, 31 if split == "train" else 32)):
            _write(root, f"aclImdb/{split}/{'pos' if label else 'neg'}/{k}_1.txt", text + "\n")
    sentencepiece_model(
        root,
        "tiny/spiece",
        "\n".join(sentences(200, 33)) + "\n",
        64,
        "--unk_id=0 --bos_id=1 --eos_id=2 --pad_id=-1 "
        "--control_symbols=<cls>,<sep>,<pad>,<mask>,<eod> --user_defined_symbols=<eop> "
        "--model_type=unigram --hard_vocab_limit=false",
    )
    config = {
        "d_head": 8,
        "d_inner": 32,
        "d_model": 16,
        "ff_activation": "gelu",
        "n_head": 2,
        "n_layer": 2,
        "n_token": 64,
        "untie_r": True,
    }
    _write(root, "tiny/xlnet_config.json", json.dumps(config))


def chinese_electra_corpus(root):
    """ymcui/Chinese-ELECTRA: a corpus folder of Chinese text files and a character
    vocabulary in the data directory, as for ELECTRA."""
    rng = random.Random(34)
    documents = [
        "\n".join("".join(rng.choice(CHARS) for _ in range(rng.randint(8, 20))) for _ in range(6))
        for _ in range(12)
    ]
    _write(root, "corpus/part-0.txt", "\n\n".join(documents) + "\n")
    bert_vocab(root, "data/vocab.txt", chinese=True)


def zhihu_cache(root):
    """brightmart/text_classification: the cache files its training reads,
    data/ieee_zhihu_cup/data.h5 (train_X, train_Y, vaild_X, valid_Y, test_X, test_Y: word
    ids and multi-hot labels, as its pre-processing notebook writes them) and
    vocab_label.pik (the pickled word and label indexes)."""
    import pickle

    import h5py
    import numpy as np

    rng = np.random.RandomState(35)
    words = {w: i for i, w in enumerate(["PAD", "UNK", *WORDS])}
    labels = {f"label_{k}": k for k in range(5)}
    path = os.path.join(root, "data", "ieee_zhihu_cup", "data.h5")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with h5py.File(path, "w") as f:
        for x_name, y_name, count in (
            ("train_X", "train_Y", 48),
            ("vaild_X", "valid_Y", 16),
            ("test_X", "test_Y", 16),
        ):
            f[x_name] = rng.randint(2, len(words), (count, 20))
            y = np.zeros((count, len(labels)), np.float32)
            y[np.arange(count), rng.randint(0, len(labels), count)] = 1
            f[y_name] = y
    with open(os.path.join(root, "data", "ieee_zhihu_cup", "vocab_label.pik"), "wb") as f:
        pickle.dump((words, labels), f, protocol=2)


def bert_as_service_example(root):
    """hanxiao/bert-as-service: a tiny BERT (config, vocabulary, checkpoint) and its README's
    "Starting BertServer from Python" snippet, a client's encode and the server's close (the
    README's BertServer.shutdown(port=...) is not this version's signature), as one script
    on loopback ports. The vectors are printed after the server has stopped: its processes
    log to the same output, and a line of theirs could land inside the printed array."""
    bert_vocab(root, "tiny/vocab.txt")
    config = tiny_bert_config(vocab_size=bert_vocab_size())
    _write(root, "tiny/bert_config.json", json.dumps(config, indent=1))
    bert_checkpoint(root, "tiny/bert_model.ckpt", config)
    _write(
        root,
        "readme_example.py",
        "import numpy as np\n"
        "from bert_serving.server.helper import get_args_parser\n"
        "from bert_serving.server import BertServer\n"
        "from bert_serving.client import BertClient\n\n"
        "args = get_args_parser().parse_args(['-model_dir', 'tiny', '-port', '5655',\n"
        "                                     '-port_out', '5656', '-max_seq_len', 'NONE',\n"
        "                                     '-mask_cls_sep', '-cpu', '-num_worker', '1'])\n"
        "server = BertServer(args)\n"
        "server.start()\n"
        "bc = BertClient(port=5655, port_out=5656)\n"
        "vectors = bc.encode(['the film is good', 'a dull story', 'maria loves music'])\n"
        "bc.close()\n"
        "server.close()\n"
        "np.set_printoptions(precision=6, threshold=100000)\n"
        "print(vectors)\n",
    )
