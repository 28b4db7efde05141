"""BERT on the engine: the steps of each task's run, and what the scripts' model_fns,
exports and start-up checks share.

The engine (bert_lib/engine) knows nothing of BERT; this side does. One
module per task holds the steps of its run after the script has read and
checked its flags, building the model with the script's model_fn_builder:
classifier.py (run_classifier.py's and run_classifier_with_tfhub.py's),
squad.py (run_squad.py's), ner.py (run_ner.py's) and pretraining.py
(run_pretraining.py's, with the checks of its input files). Beside them:
- model_fns.py, the pieces every script's model_fn is built from (the
  compute dtype of --precision, BERT's training step with gradient
  accumulation and loss scaling, warm starting from --init_checkpoint) and
  the Estimator of a fine-tuning run;
- serving.py, what every export shares (the checkpoint it takes, its
  inputs, the SavedModel of a script's model); onnx_export.py, the ONNX
  files written beside it;
- checks.py, which refuses a config, vocabulary or checkpoint that does not
  fit before any work, and output_dir_run.py, which refuses an output
  directory holding another task's run.
"""
