"""BERT on the engine: the steps of each task's run, and what the scripts' model_fns and
start-up checks share.

The engine (bert_lib/engine) knows nothing of BERT; this side does: one
module per task holds the steps of its run after the script has read and
checked its flags (classifier.py: run_classifier.py's and
run_classifier_with_tfhub.py's, taking the model from the script's
model_fn_builder; squad.py and ner.py: run_squad.py's and run_ner.py's,
likewise; pretraining.py:
run_pretraining.py's input); checks.py
refuses a config, vocabulary or checkpoint that does not fit before any
work; model_fns.py holds the pieces every script's model_fn is built from
(the compute dtype of --precision, BERT's training step with gradient
accumulation and loss scaling, warm starting from --init_checkpoint);
serving.py the inputs of every export.
"""
