#!/usr/bin/env bash
# The whole BERT pipeline on the data shipped in demo_data/, in a few minutes on a CPU:
#
#   1. create_vocab.py             learn a WordPiece vocabulary from demo_data/corpus
#   2. create_pretraining_data.py  masked-LM / next-sentence examples from the corpus
#   3. run_pretraining.py          pre-train a small BERT from scratch, then evaluate it
#   4. run_classifier.py           fine-tune it on demo_data/sentiment (SST-2 layout),
#                                  evaluating every 64 steps and keeping the best
#                                  checkpoint; evaluate, predict, export a SavedModel
#   5. run_classifier.py           the same sentences as your own CSV / JSON-lines files
#                                  (--task_name=custom), plain-text predictions, and
#                                  predictor.Predictor answering raw strings
#   6. run_ner.py                  fine-tune it to tag names, places, organizations and
#                                  other names in demo_data/ner (CoNLL layout)
#   7. extract_features.py         contextual embeddings of a few sentences, and one
#                                  mean-pooled vector per sentence
#
# Every step is one of the real scripts with real flags: copy a command, point it at
# your own data and model, and it does the same at full size.
#
# Usage: ./demo.sh   (or `make demo`, which creates .venv first)
# Sizes can be changed through the environment (the defaults take about 2.5 minutes on
# a 2-core CPU):
#   PYTHON               interpreter with the requirements (default: .venv/bin/python)
#   DEMO_OUTPUT          output directory (default: output/demo; emptied first)
#   DEMO_VOCAB_SIZE      vocabulary size (3000)
#   DEMO_DUPE_FACTOR     masked copies of the corpus for pretraining (5)
#   DEMO_SEQ_LENGTH      max_seq_length everywhere (64)
#   DEMO_PRETRAIN_STEPS  pretraining steps (300)
#   DEMO_EPOCHS          fine-tuning epochs of the classifier and the tagger (10)
#   DEMO_CUSTOM_EPOCHS   fine-tuning epochs of the custom-data step (3)
#   DEMO_SEED            --tf_random_seed of pretraining and fine-tuning (12345)
set -euo pipefail

cd "$(dirname "$0")"
if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x .venv/bin/python ]]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
OUT=${DEMO_OUTPUT:-output/demo}
VOCAB_SIZE=${DEMO_VOCAB_SIZE:-3000}
DUPE_FACTOR=${DEMO_DUPE_FACTOR:-5}
SEQ=${DEMO_SEQ_LENGTH:-64}
PRETRAIN_STEPS=${DEMO_PRETRAIN_STEPS:-300}
EPOCHS=${DEMO_EPOCHS:-10}
CUSTOM_EPOCHS=${DEMO_CUSTOM_EPOCHS:-3}
SEED=${DEMO_SEED:-12345}
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}

# Start from an empty output directory (only ever one this script made).
if [[ -e "$OUT" && ! -e "$OUT/.bert_demo" ]]; then
    echo "ERROR: $OUT exists and was not made by demo.sh; set DEMO_OUTPUT elsewhere" >&2
    exit 1
fi
rm -rf "$OUT"
mkdir -p "$OUT/logs"
touch "$OUT/.bert_demo"

START=$SECONDS
STEP_START=$SECONDS

step() {
    STEP_START=$SECONDS
    printf '\n=== %s\n' "$1"
}

# run LOGNAME CMD...: shows the command, runs it with its log in $OUT/logs/LOGNAME.log,
# and on failure prints the end of that log.
run() {
    local log="$OUT/logs/$1.log"
    shift
    printf '$'
    printf ' %q' "$@"
    printf '\n'
    if ! "$@" >"$log" 2>&1; then
        echo "--- step failed; the end of $log:" >&2
        tail -n 20 "$log" >&2
        exit 1
    fi
}

done_in() {
    echo "    ($((SECONDS - STEP_START))s; log: $OUT/logs/$1.log)"
}

step "1/7 Learn a WordPiece vocabulary from demo_data/corpus (create_vocab.py)"
run vocab "$PYTHON" create_vocab.py \
    --input_file='demo_data/corpus/*.txt' \
    --output_file="$OUT/vocab.txt" \
    --vocab_size="$VOCAB_SIZE" \
    --do_lower_case=True
VOCAB_LINES=$(wc -l <"$OUT/vocab.txt" | tr -d ' ')
echo "--> $OUT/vocab.txt: $VOCAB_LINES tokens, e.g. $(sed -n '200,207p' "$OUT/vocab.txt" | tr '\n' ' ')"
done_in vocab

# A small BERT: 2 layers, hidden size 128, 2 heads. vocab_size must be the number of
# lines of vocab.txt.
cat >"$OUT/bert_config.json" <<EOF
{
  "vocab_size": $VOCAB_LINES,
  "hidden_size": 128,
  "num_hidden_layers": 2,
  "num_attention_heads": 2,
  "intermediate_size": 512,
  "hidden_act": "gelu",
  "hidden_dropout_prob": 0.1,
  "attention_probs_dropout_prob": 0.1,
  "max_position_embeddings": 128,
  "type_vocab_size": 2,
  "initializer_range": 0.02
}
EOF
echo "--> $OUT/bert_config.json: 2 layers, hidden size 128, 2 attention heads"

step "2/7 Create pretraining examples (create_pretraining_data.py)"
run pretraining_data "$PYTHON" create_pretraining_data.py \
    --input_file='demo_data/corpus/*.txt' \
    --output_file="$OUT/pretraining_data.tfrecord" \
    --vocab_file="$OUT/vocab.txt" \
    --do_lower_case=True \
    --max_seq_length="$SEQ" \
    --max_predictions_per_seq=10 \
    --masked_lm_prob=0.15 \
    --random_seed=12345 \
    --dupe_factor="$DUPE_FACTOR"
INSTANCES=$(grep -o 'Wrote [0-9]* total instances' "$OUT/logs/pretraining_data.log" \
    | grep -o '[0-9]*' || echo '?')
echo "--> $OUT/pretraining_data.tfrecord: $INSTANCES examples"
done_in pretraining_data

step "3/7 Pre-train a small BERT from scratch and evaluate it (run_pretraining.py)"
WARMUP=$((PRETRAIN_STEPS / 10))
run pretraining "$PYTHON" run_pretraining.py \
    --input_file="$OUT/pretraining_data.tfrecord" \
    --output_dir="$OUT/pretraining" \
    --do_train=True \
    --do_eval=True \
    --bert_config_file="$OUT/bert_config.json" \
    --train_batch_size=32 \
    --max_seq_length="$SEQ" \
    --max_predictions_per_seq=10 \
    --num_train_steps="$PRETRAIN_STEPS" \
    --num_warmup_steps="$WARMUP" \
    --learning_rate=3e-4 \
    --save_checkpoints_steps="$PRETRAIN_STEPS" \
    --iterations_per_loop=100 \
    --max_eval_steps=20 \
    --tf_random_seed="$SEED"
PRETRAINED="$OUT/pretraining/model.ckpt-$PRETRAIN_STEPS"
echo "--> checkpoint $PRETRAINED.*"
echo "--> $OUT/pretraining/eval_results.txt:"
sed 's/^/      /' "$OUT/pretraining/eval_results.txt"
done_in pretraining

step "4/7 Fine-tune on demo_data/sentiment, keep the best, predict, export (run_classifier.py)"
run classifier "$PYTHON" run_classifier.py \
    --task_name=sst-2 \
    --do_train=True \
    --do_eval=True \
    --do_predict=True \
    --data_dir=demo_data/sentiment \
    --vocab_file="$OUT/vocab.txt" \
    --bert_config_file="$OUT/bert_config.json" \
    --init_checkpoint="$PRETRAINED" \
    --do_lower_case=True \
    --max_seq_length="$SEQ" \
    --train_batch_size=32 \
    --learning_rate=5e-4 \
    --num_train_epochs="$EPOCHS" \
    --output_dir="$OUT/classifier" \
    --export_dir="$OUT/classifier_export" \
    --tf_random_seed="$SEED" \
    --eval_every_n_steps=64 \
    --best_checkpoint_metric=eval_accuracy \
    --keep_checkpoint_max=1
echo "--> $OUT/classifier/eval_results.txt (dev set, 150 sentences):"
sed 's/^/      /' "$OUT/classifier/eval_results.txt"
echo "--> $OUT/classifier/eval_history.jsonl (one evaluation a line):"
sed 's/^/      /' "$OUT/classifier/eval_history.jsonl"
BEST="$OUT/classifier/best/$(sed -n 's/^model_checkpoint_path: "\(.*\)"$/\1/p' \
    "$OUT/classifier/best/checkpoint")"
echo "--> best checkpoint $BEST.* (use --init_checkpoint=$OUT/classifier/best), for:"
sed 's/^/      /' "$OUT/classifier/best/eval_results.txt"
echo "--> $OUT/classifier/test_results.tsv: P(negative), P(positive) per test sentence, e.g."
paste "$OUT/classifier/test_results.tsv" <(tail -n +2 demo_data/sentiment/test.tsv | cut -f2) \
    | awk -F'\t' 'NR <= 3 { printf "      %.3f  %.3f  %s\n", $1, $2, $3 }'
echo "--> $OUT/classifier_export: a SavedModel (signature serving_default)"
done_in classifier

step "5/7 Fine-tune on your own files: --task_name=custom (run_classifier.py)"
# Your data as it usually comes: a CSV with a header, JSON lines, named columns and
# label names instead of GLUE's fixed layouts. Here the sentiment sentences again.
mkdir -p "$OUT/sentiment_custom"
"$PYTHON" - demo_data/sentiment "$OUT/sentiment_custom" <<'EOF'
import csv
import json
import sys

source, target = sys.argv[1:]
names = {"0": "negative", "1": "positive"}


def rows(split):
    with open(f"{source}/{split}.tsv", encoding="utf-8") as f:
        return [line.rstrip("\n").split("\t") for line in f][1:]


with open(f"{target}/train.csv", "w", newline="", encoding="utf-8") as f:
    writer = csv.writer(f)
    writer.writerow(["review", "sentiment"])
    writer.writerows((text, names[label]) for text, label in rows("train"))
with open(f"{target}/dev.jsonl", "w", encoding="utf-8") as f:
    for text, label in rows("dev"):
        f.write(json.dumps({"review": text, "sentiment": names[label]}) + "\n")
with open(f"{target}/test.csv", "w", newline="", encoding="utf-8") as f:
    writer = csv.writer(f)
    writer.writerow(["id", "review"])
    writer.writerows(rows("test"))
EOF
echo "--> $OUT/sentiment_custom: train.csv, dev.jsonl, test.csv (columns review, sentiment)"
cat >"$OUT/texts.txt" <<'EOF'
the soup was cold and the waiter was rude .
a charming little hotel , we would happily stay there again .
EOF
run custom "$PYTHON" run_classifier.py \
    --task_name=custom \
    --data_dir="$OUT/sentiment_custom" \
    --text_a_column=review \
    --label_column=sentiment \
    --class_weights=balanced \
    --do_train=True \
    --do_eval=True \
    --do_predict=True \
    --predict_text_file="$OUT/texts.txt" \
    --vocab_file="$OUT/vocab.txt" \
    --bert_config_file="$OUT/bert_config.json" \
    --init_checkpoint="$PRETRAINED" \
    --do_lower_case=True \
    --max_seq_length="$SEQ" \
    --train_batch_size=32 \
    --learning_rate=5e-4 \
    --num_train_epochs="$CUSTOM_EPOCHS" \
    --output_dir="$OUT/custom" \
    --export_dir="$OUT/custom_export" \
    --tf_random_seed="$SEED"
echo "--> $OUT/custom/labels.txt (the class order, kept for later runs): $(tr '\n' ' ' <"$OUT/custom/labels.txt")"
echo "--> $OUT/custom/eval_results.txt:"
sed 's/^/      /' "$OUT/custom/eval_results.txt"
echo "--> $OUT/custom/text_predictions.jsonl:"
sed 's/^/      /' "$OUT/custom/text_predictions.jsonl"
echo "--> predictor.Predictor on $OUT/custom_export, raw strings in:"
"$PYTHON" - "$OUT/custom_export" 2>"$OUT/logs/predictor.log" <<'EOF'
import sys

from bert_lib.export.predictor import Predictor

predictor = Predictor(sys.argv[1])
for record in predictor(["a real delight.", "it stopped working after two weeks."]):
    probabilities = ", ".join(f"{k} {v:.3f}" for k, v in record["probabilities"].items())
    print(f"      {record['label']:<9} ({probabilities})  {record['text_a']}")
EOF
done_in custom

step "6/7 Fine-tune a named-entity tagger on demo_data/ner, evaluate, predict (run_ner.py)"
run ner "$PYTHON" run_ner.py \
    --do_train=True \
    --do_eval=True \
    --do_predict=True \
    --data_dir=demo_data/ner \
    --tag_scheme=IOB2 \
    --vocab_file="$OUT/vocab.txt" \
    --bert_config_file="$OUT/bert_config.json" \
    --init_checkpoint="$PRETRAINED" \
    --do_lower_case=True \
    --max_seq_length="$SEQ" \
    --train_batch_size=32 \
    --learning_rate=1e-3 \
    --num_train_epochs="$EPOCHS" \
    --output_dir="$OUT/ner" \
    --tf_random_seed="$SEED"
echo "--> $OUT/ner/eval_results.txt (dev set, entity-level scores as conlleval counts them):"
sed 's/^/      /' "$OUT/ner/eval_results.txt"
echo "--> $OUT/ner/test_predictions.txt: test.txt with a predicted tag column, e.g."
awk 'NF == 3 && $1 != "-DOCSTART-" && n < 8 { printf "      %s\n", $0; n++ }' "$OUT/ner/test_predictions.txt"
done_in ner

step "7/7 Extract contextual embeddings of two inputs (extract_features.py)"
cat >"$OUT/sentences.txt" <<'EOF'
the soup was cold and the waiter was rude .
a charming little hotel ||| we would happily stay there again .
EOF
run features "$PYTHON" extract_features.py \
    --input_file="$OUT/sentences.txt" \
    --output_file="$OUT/features.jsonl" \
    --vocab_file="$OUT/vocab.txt" \
    --bert_config_file="$OUT/bert_config.json" \
    --init_checkpoint="$PRETRAINED" \
    --do_lower_case=True \
    --layers=-1,-2 \
    --pooling=mean \
    --max_seq_length="$SEQ" \
    --batch_size=8
"$PYTHON" - "$OUT/features.jsonl" <<'EOF'
import json
import sys

with open(sys.argv[1], encoding="utf-8") as f:
    for line in f:
        record = json.loads(line)
        tokens = [feature["token"] for feature in record["features"]]
        layers = record["features"][0]["layers"]
        print(f"--> line {record['linex_index']}: {len(tokens)} tokens "
              f"({' '.join(tokens)}), layers {[layer['index'] for layer in layers]} "
              f"of {len(layers[0]['values'])} values each")
EOF
echo "--> $OUT/features.jsonl; one mean-pooled vector a line in $OUT/features.pooled.jsonl"
echo "    (and $OUT/features.pooled.npy)"
done_in features

ACCURACY=$(awk -F' = ' '$1 == "eval_accuracy" { printf "%.3f", $2 }' \
    "$OUT/classifier/eval_results.txt")
NER_F1=$(awk -F' = ' '$1 == "eval_f1" { printf "%.3f", $2 }' "$OUT/ner/eval_results.txt")
MLM=$(awk -F' = ' '$1 == "masked_lm_accuracy" { printf "%.3f", $2 }' \
    "$OUT/pretraining/eval_results.txt")
cat <<EOF

=== Summary ($((SECONDS - START))s in all)
vocabulary            $OUT/vocab.txt ($VOCAB_LINES tokens)
model config          $OUT/bert_config.json
pretraining data      $OUT/pretraining_data.tfrecord ($INSTANCES examples)
pretrained BERT       $PRETRAINED (masked LM accuracy $MLM after $PRETRAIN_STEPS steps)
sentiment classifier  $OUT/classifier (dev accuracy $ACCURACY; chance is 0.5)
best checkpoint       $BEST
test predictions      $OUT/classifier/test_results.tsv
entity tagger         $OUT/ner (dev entity F1 $NER_F1; tagging every word O scores 0)
tagged test set       $OUT/ner/test_predictions.txt
SavedModel            $OUT/classifier_export
custom-data run       $OUT/custom (labels.txt, text_predictions.jsonl; export $OUT/custom_export)
features              $OUT/features.jsonl (sentence vectors: $OUT/features.pooled.jsonl)
logs                  $OUT/logs/
EOF
