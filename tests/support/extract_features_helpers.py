"""A tiny BERT checkpoint and the extract_features.py flags to run it, for the tests of
extract_features and of the speed flags."""

import tensorflow as tf
from helpers import run_script, tiny_bert_config, write_bert_config, write_lines

import modeling

VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "steve",
    "smith",
    "was",
    "born",
    "who",
    "is",
    "cafe",
    "(",
    ")",
    "-",
    ".",
    "1895",
    "1943",
]
CONFIG = tiny_bert_config(len(VOCAB), max_position_embeddings=16, initializer_range=0.2)
SEQ_LENGTH = 12
LINES = [
    "Steve Smith was born",
    "who is ||| Steve Smith",
    "Café (1895-1943). was born who is steve smith",
    "xyz ||| was",
]


def write_model_files(root):
    """A randomly initialised tiny checkpoint, its config and vocab in `root`; returns root."""
    write_lines(root / "vocab.txt", VOCAB)
    write_bert_config(root / "bert_config.json", **CONFIG)
    config = modeling.BertConfig.from_dict(CONFIG)
    with tf.Graph().as_default():
        tf.compat.v1.set_random_seed(3)
        ids = tf.compat.v1.placeholder(tf.int32, [None, SEQ_LENGTH])
        modeling.BertModel(config, is_training=False, input_ids=ids)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            tf.compat.v1.train.Saver().save(sess, str(root / "model.ckpt"))
    return root


def extract_features_flags(model_files, tmp_path, layers):
    """Flags that run extract_features.py on LINES with the model in `model_files`."""
    input_file = write_lines(tmp_path / "input.txt", LINES)
    return [
        f"--input_file={input_file}",
        f"--output_file={tmp_path / 'out' / 'features.jsonl'}",
        f"--vocab_file={model_files / 'vocab.txt'}",
        f"--bert_config_file={model_files / 'bert_config.json'}",
        f"--init_checkpoint={model_files / 'model.ckpt'}",
        f"--layers={layers}",
        f"--max_seq_length={SEQ_LENGTH}",
        "--batch_size=3",
    ]


def run_extract_features(model_files, tmp_path, layers, *extra):
    """Runs extract_features.py as a command with extract_features_flags plus `extra`."""
    return run_script(
        "extract_features.py", *extract_features_flags(model_files, tmp_path, layers), *extra
    )
