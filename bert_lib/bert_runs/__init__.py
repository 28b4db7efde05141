"""BERT on the engine: what the scripts' model_fns and start-up checks share.

The engine (bert_lib/engine) knows nothing of BERT; this side does:
checks.py refuses a config, vocabulary or checkpoint that does not fit
before any work, and model_fns.py holds the pieces every script's
model_fn is built from (the compute dtype of --precision, BERT's training
step with gradient accumulation and loss scaling, warm starting from
--init_checkpoint).
"""
