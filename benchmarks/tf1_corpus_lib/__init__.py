"""Public TF 1.x repositories run unchanged on TensorFlow 1.15 and through run_tf1.py.

The command is benchmarks/tf1_corpus.py. The repositories' code never enters
this project: they are clones in a directory given on the command line, one
folder each, named owner+name (the folder a git clone of owner/name makes,
renamed), at the commit the table records. For each repository, corpus.py
(corpus_media.py for the TF-Slim, vision and speech ones) says which steps
of its README's pipeline run and with which flags, and data.py
(media_data.py) writes tiny data in the repository's own format (files it
reads as its README says). runner.py runs the steps in three copies of the clone:

- "tf115": every step on TensorFlow 1.15 (Python 3.7, as the compat check
  sets it up);
- "run_tf1": every step through run_tf1.py on this project's TensorFlow;
- "cross": TF 1.15's copy after its training steps, the steps after them
  through run_tf1.py: evaluation and prediction from TF 1.15's own weights,
  whose outputs can then be compared number for number.

compare.py then says, for each repository: whether run_tf1.py wrote every
file TF 1.15 wrote (a run that wrote fewer is a failure even at exit 0),
whether the checkpoints hold the same variables with the same shapes, and
whether the metrics and predictions of the cross run are TF 1.15's to
float32 round-off or the precision the script prints.
"""
