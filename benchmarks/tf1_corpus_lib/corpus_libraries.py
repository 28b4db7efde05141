"""The corpus's repositories built on a pip-installed TF 1.x library, tensor2tensor problems
and BERT-era NLP beside BERT (corpus.py's Repository and Step; same rules: the README's
steps, flags that keep them tiny, the code unchanged)."""

from . import libraries_data
from .corpus import Repository
from .runner import Step

_SHAKESPEARE = [
    "--num_training_iterations=6",
    "--report_interval=3",
    "--reduce_learning_rate_interval=4",
    "--lstm_depth=2",
    "--batch_size=4",
    "--num_embedding=8",
    "--num_hidden=16",
    "--truncation_length=16",
    "--sample_length=20",
    "--checkpoint_dir=ckpt",
    "--checkpoint_interval=3",
]

_T2T = [
    "--data_dir=data",
    "--problem=algorithmic_reverse_binary40_test",
    "--model=transformer",
    "--hparams_set=transformer_tiny",
    "--hparams=batch_size=64",
    "--output_dir=train",
]

REPOSITORIES = [
    Repository(
        "tflearn/tflearn",
        "pip-installed TF 1.x library (TFLearn 0.3.2 examples: DNN fit, save / load, "
        "weights; a convnet)",
        [
            Step(
                ["examples/basics/weights_persistence.py"],
                env={"PYTHONPATH": "."},
                trains=True,
                scratch=("/tmp/tflearn_logs",),
            ),
            Step(
                ["examples/images/convnet_mnist.py"],
                env={"PYTHONPATH": "."},
                trains=True,
                scratch=("/tmp/tflearn_logs",),
            ),
        ],
        libraries_data.tflearn_mnist,
        commit="17cee59",
    ),
    Repository(
        "deepmind/sonnet",
        "pip-installed TF 1.x library (Sonnet 1.36, with TensorFlow Probability 0.8: the "
        "Tiny Shakespeare deep LSTM example, MonitoredSession and queues)",
        # The installed package's example (its protos are built into the wheel), run from
        # a folder of the clone without the sonnet package the clone would put first.
        [
            Step(
                ["-m", "sonnet.examples.rnn_shakespeare", *_SHAKESPEARE],
                cwd="sonnet/examples",
                trains=True,
            )
        ],
        commit="cd5b5fa",
    ),
    Repository(
        "allenai/bilm-tf",
        "BERT-era NLP (ELMo: character and token biLM embeddings from its test model)",
        [
            Step(["usage_character.py"]),
            # Its vocabulary file is a set's order, which Python 3.11's string hashing
            # changes: the token embeddings it caches are compared by file only.
            Step(["usage_token.py"]),
            Step(["usage_cached.py"], compare=("elmo_embeddings.hdf5",)),
        ],
    ),
    Repository(
        "tensorflow/tensor2tensor",
        "tensor2tensor problem (t2t-datagen, t2t-trainer, t2t-decoder: a Transformer on "
        "its registered algorithmic reversal problem)",
        [
            Step(
                [
                    "tensor2tensor/bin/t2t-datagen",
                    "--data_dir=data",
                    "--tmp_dir=tmp",
                    "--problem=algorithmic_reverse_binary40_test",
                ],
                env={"PYTHONPATH": "."},
            ),
            Step(
                [
                    "tensor2tensor/bin/t2t-trainer",
                    *_T2T,
                    "--train_steps=4",
                    "--eval_steps=1",
                    "--random_seed=1",
                ],
                env={"PYTHONPATH": "."},
                trains=True,
                timeout=1800,
            ),
            Step(
                [
                    "tensor2tensor/bin/t2t-decoder",
                    *_T2T,
                    "--decode_hparams=beam_size=2,alpha=0.6",
                    "--decode_from_file=decode_this.txt",
                    "--decode_to_file=decoded.txt",
                ],
                env={"PYTHONPATH": "."},
                compare=("decoded.txt*",),
                timeout=1800,
            ),
        ],
        libraries_data.t2t_decode_input,
        # Libraries it imports at every start whose releases of today still read
        # tf.estimator, which TensorFlow 2.16 removed: they get the TF 1.x API.
        run_tf1_options=("--tf1_packages=tensorflow_gan,mesh_tensorflow,gin",),
    ),
    Repository(
        "openai/finetune-transformer-lm",
        "BERT-era NLP (GPT fine-tuned on ROCStories, its train.py with --submit)",
        [
            Step(
                [
                    "train.py",
                    "--dataset=rocstories",
                    "--desc=rocstories",
                    "--submit",
                    "--data_dir=data/",
                    "--n_iter=1",
                    "--n_batch=4",
                    "--n_gpu=1",
                    "--n_embd=8",
                    "--n_head=2",
                    "--n_layer=1",
                ],
                # Seeded (random, numpy and tf.set_random_seed) from the GPT weights of
                # model/, it trains, validates and predicts to the same numbers on both
                # sides: its printed line and predictions are compared from run_tf1.py's
                # own run (it writes no TF checkpoint to compare otherwise).
                printed=r"^\d+ \d+ \d+\.\d{3} \d+\.\d{3} \d+\.\d\d \d+\.\d\d$",
                compare=("submission/ROCStories.tsv",),
            )
        ],
        libraries_data.rocstories,
    ),
]
