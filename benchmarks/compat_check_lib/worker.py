"""In-process probes of one implementation, for what its scripts do not write to files.

Started as `python -m compat_check_lib.worker --worker=NAME --worker_impl=original|ours
--worker_impl_dir=DIR ...` under that implementation's interpreter: Python 3.7
with TensorFlow 1.15 for the original, this project's for ours. So this file
keeps to Python 3.7 and imports TensorFlow and the BERT modules only inside
the probe that needs them.
"""

import argparse
import importlib
import json
import os
import random
import sys

from . import fixtures
from .common import VOCAB


def load(args, name):
    """Imports module `name` of the implementation under test (the wheel's `bert.` or flat)."""
    sys.path.insert(0, args.worker_impl_dir)
    packaged = os.path.isdir(os.path.join(args.worker_impl_dir, "bert"))
    if args.worker_impl == "original" and packaged:
        return importlib.import_module("bert." + name)
    return importlib.import_module(name)


def squad_post_worker(args):
    """Features and write_predictions of one implementation on synthetic logits."""
    case = {c[0]: c for c in fixtures.SQUAD_POST_CASES}[args.worker_case]
    _, version_2, lower, n_best, max_answer, threshold, spread = case
    run_squad = load(args, "run_squad")
    tokenization = load(args, "tokenization")
    run_squad.FLAGS(
        [
            "worker",
            f"--version_2_with_negative={str(version_2).lower()}",
            f"--null_score_diff_threshold={threshold}",
            f"--do_lower_case={str(lower).lower()}",
            "--verbose_logging=false",
        ]
    )
    tokenizer = tokenization.FullTokenizer(vocab_file=VOCAB, do_lower_case=lower)
    input_file = os.path.join(args.work_dir, f"squad_{'v2' if version_2 else 'v1'}.json")
    out = args.worker_out
    for is_training in (True, False):
        examples = run_squad.read_squad_examples(input_file, is_training)
        if is_training:
            random.Random(12345).shuffle(examples)
        features = []
        writer = run_squad.FeatureWriter(
            os.path.join(out, f"{'train' if is_training else 'eval'}.tf_record"), is_training
        )

        def output_fn(feature, features=features, writer=writer):
            features.append(feature)
            writer.process_feature(feature)

        run_squad.convert_examples_to_features(
            examples, tokenizer, 48, 16, 12, is_training, output_fn
        )
        writer.close()
        dump = []
        for f in features:
            dump.append(
                {
                    "unique_id": f.unique_id,
                    "example_index": f.example_index,
                    "doc_span_index": f.doc_span_index,
                    "tokens": f.tokens,
                    "token_to_orig_map": sorted(f.token_to_orig_map.items()),
                    "token_is_max_context": sorted(f.token_is_max_context.items()),
                    "start_position": f.start_position,
                    "end_position": f.end_position,
                    "is_impossible": f.is_impossible,
                }
            )
        with open(os.path.join(out, f"features_{is_training}.json"), "w", encoding="utf-8") as f:
            json.dump(dump, f, indent=1, sort_keys=True)
    results = []
    for feature in features:
        start, end = fixtures.synthetic_logits(feature.unique_id, len(feature.input_ids), spread)
        results.append(
            run_squad.RawResult(unique_id=feature.unique_id, start_logits=start, end_logits=end)
        )
    run_squad.write_predictions(
        examples,
        features,
        results,
        n_best,
        max_answer,
        lower,
        os.path.join(out, "predictions.json"),
        os.path.join(out, "nbest_predictions.json"),
        os.path.join(out, "null_odds.json"),
    )


PROCESSORS = {
    "cola": "ColaProcessor",
    "mnli": "MnliProcessor",
    "mrpc": "MrpcProcessor",
    "xnli": "XnliProcessor",
}


def processors_worker(args):
    """Dumps every example and label list of the four original tasks as JSON."""
    run_classifier = load(args, "run_classifier")
    dump = {}
    for task, class_name in PROCESSORS.items():
        processor = getattr(run_classifier, class_name)()
        data_dir = os.path.join(args.work_dir, "glue", task)
        dump[task + "/labels"] = list(processor.get_labels())
        splits = ["train", "dev"] + ([] if task == "xnli" else ["test"])
        for split in splits:
            examples = getattr(processor, f"get_{split}_examples")(data_dir)
            dump[f"{task}/{split}"] = [[e.guid, e.text_a, e.text_b, e.label] for e in examples]
    with open(args.worker_out, "w", encoding="utf-8") as f:
        json.dump(dump, f, indent=1, ensure_ascii=False)


def lr_schedule_worker(args):
    """Counts, over fresh sessions, whether step one used lr(global_step=0) or lr(1)."""
    import numpy as np
    import tensorflow.compat.v1 as tf

    optimization = load(args, "optimization")
    counts = {}
    for _ in range(20):
        graph = tf.Graph()
        with graph.as_default():
            # A resource variable, as TPUEstimator creates it.
            tf.get_variable(
                "global_step",
                shape=[],
                dtype=tf.int64,
                trainable=False,
                initializer=tf.zeros_initializer(),
                use_resource=True,
                collections=[tf.GraphKeys.GLOBAL_VARIABLES, tf.GraphKeys.GLOBAL_STEP],
            )
            weights = tf.get_variable("w", initializer=tf.constant([1.0, 2.0]))
            loss = tf.reduce_sum(weights * tf.constant([0.5, -0.25]))
            train_op = optimization.create_optimizer(loss, 1e-3, 2, 0, False)
            with tf.Session(graph=graph) as session:
                session.run(tf.global_variables_initializer())
                before = session.run(weights)
                session.run(train_op)
                moved = float(np.max(np.abs(session.run(weights) - before)))
        # Adam's first update is about sqrt(10) = 3.16 times the learning rate:
        # lr(0) = 1e-3 moves the weights by ~3.2e-3, lr(1) = 5e-4 by ~1.6e-3.
        key = "step 0" if moved > 2.4e-3 else "step 1"
        counts[key] = counts.get(key, 0) + 1
    with open(args.worker_out, "w", encoding="utf-8") as f:
        json.dump(counts, f, sort_keys=True)


def softmax_worker(args):
    """tf.nn.softmax of fixed float32 logits, written as exact decimals."""
    import numpy as np
    import tensorflow as tf

    tf1 = tf.compat.v1
    tf1.disable_eager_execution()
    logits = np.array(fixtures.softmax_logits(), dtype=np.float32)
    probs = tf.nn.softmax(tf.constant(logits), axis=-1)
    with tf1.Session() as session:
        values = session.run(probs)
    with open(args.worker_out, "w", encoding="utf-8") as f:
        for row in values:
            f.write(" ".join(repr(float(v)) for v in row) + "\n")


WORKERS = {
    "squad_post": squad_post_worker,
    "processors": processors_worker,
    "lr_schedule": lr_schedule_worker,
    "softmax": softmax_worker,
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", required=True, choices=sorted(WORKERS))
    parser.add_argument("--worker_impl", required=True, choices=["original", "ours"])
    parser.add_argument("--worker_impl_dir", required=True)
    parser.add_argument("--worker_case")
    parser.add_argument("--worker_out", required=True)
    parser.add_argument("--work_dir")
    args = parser.parse_args(argv)
    WORKERS[args.worker](args)


if __name__ == "__main__":
    main()
