"""The corpus: public TF 1.x repositories of 2017-2020, each with its README's pipeline.

Picked by use (stars and forks of the kinds BERT-era researchers ran: BERT
relatives, seq2seq and NMT, text classification, sequence labelling with a
CRF, language models, sentence encoders and retrieval, reading
comprehension, tf.keras inside TF 1.x), not by what already runs. Each
entry gives the README's steps with flags that keep them tiny (fewer steps,
smaller layers, the data of data.py), nothing else changed: the code runs
as it is on both sides.
"""

import dataclasses

from . import data, keras_data
from .runner import Step


@dataclasses.dataclass
class Repository:
    slug: str  # owner/name
    kind: str
    steps: list
    write_data: object = lambda root: None
    commit: str = None  # the commit run, where the newest left TF 1.x (else the clone's HEAD)
    # The folder name the code must have, for a repository that is a package run with -m
    # from its parent folder (ALBERT's `python -m albert.run_classifier`).
    checkout_as: str = "."
    # The TF 1.x it is compared with: 1.15, or 1.13 for code TF 1.15 no longer ran
    # (an API TF 1.14 moved out of tf.contrib), as its README required.
    reference: str = "1.15"
    # run_tf1.py's own options, before the script (an installed helper package written
    # for TF 1.x whose metadata does not say so: --tf1_packages).
    run_tf1_options: tuple = ()

    @property
    def folder(self):
        return self.slug.replace("/", "+")


_RT = [
    "--positive_data_file=./data/tiny/rt-polarity.pos",
    "--negative_data_file=./data/tiny/rt-polarity.neg",
]

_NMT_DATA = [
    "--vocab_prefix=nmt/testdata/iwslt15.vocab.100",
    "--train_prefix=nmt/testdata/iwslt15.tst2013.100",
    "--dev_prefix=nmt/testdata/iwslt15.tst2013.100",
    "--test_prefix=nmt/testdata/iwslt15.tst2013.100",
]

_ALBERT = [
    "--task_name=MRPC",
    "--data_dir=glue",
    "--output_dir=out",
    "--cached_dir=out",
    "--albert_config_file=tiny/albert_config.json",
    "--vocab_file=tiny/spm.vocab",
    "--spm_model_file=tiny/spm.model",
    "--do_lower_case",
    "--max_seq_length=32",
    "--train_batch_size=8",
    "--eval_batch_size=4",
    "--predict_batch_size=4",
    "--train_step=6",
    "--warmup_step=1",
    "--save_checkpoints_steps=3",
    "--learning_rate=1e-4",
]
_ALBERT_ZH = [
    "--task_name=lcqmc_pair",
    "--data_dir=./lcqmc",
    "--vocab_file=./albert_config/vocab.txt",
    "--bert_config_file=./albert_config/albert_config_tiny.json",
    "--max_seq_length=32",
    "--train_batch_size=8",
    "--learning_rate=1e-4",
    "--num_train_epochs=1",
    "--output_dir=./albert_lcqmc_checkpoints",
]
_ROBERTA_ZH = [
    "--task_name=lcqmc_pair",
    "--data_dir=./data/lcqmc",
    "--vocab_file=tiny/vocab.txt",
    "--bert_config_file=tiny/bert_config.json",
    "--init_checkpoint=tiny/bert_model.ckpt",
    "--max_seq_length=32",
    "--train_batch_size=8",
    "--learning_rate=2e-5",
    "--num_train_epochs=1",
    "--output_dir=./checkpoint_lcqmc",
]

_SQUAD = [
    "--train_file=squad/train-v1.1.json",
    "--dev_file=squad/dev-v1.1.json",
    "--test_file=squad/dev-v1.1.json",
    "--glove_word_file=glove/glove.840B.300d.txt",
    "--glove_word_size=200",
]
_RNET = [
    "--num_steps=4",
    "--checkpoint=2",
    "--batch_size=4",
    "--hidden=8",
    "--char_hidden=8",
    "--val_num_batches=1",
    "--use_cudnn=False",
    "--num_threads=1",
    "--capacity=64",
]
_QANET = [
    "--num_steps=4",
    "--checkpoint=2",
    "--batch_size=4",
    "--hidden=8",
    "--char_dim=8",
    "--val_num_batches=1",
    "--num_threads=1",
    "--capacity=64",
]

_KYUBYONG = [
    "--vocab_size=60",
    "--batch_size=4",
    "--eval_batch_size=4",
    "--d_model=16",
    "--d_ff=32",
    "--num_blocks=1",
    "--num_heads=2",
    "--maxlen1=60",
    "--maxlen2=60",
    "--warmup_steps=2",
]
_TXL_DATA = ["--data_dir=../data/enwik8/", "--dataset=enwik8", "--num_passes=1", "--use_tpu=False"]
_TXL_MODEL = [
    "--data_dir=../data/enwik8//tfrecords",
    "--record_info_dir=../data/enwik8//tfrecords/",
    "--corpus_info_path=../data/enwik8//corpus-info.json",
    "--model_dir=EXP-enwik8",
    "--n_layer=2",
    "--d_model=16",
    "--d_embed=16",
    "--n_head=2",
    "--d_head=8",
    "--d_inner=32",
    "--dropatt=0.0",
]

_XLNET = [
    "--task_name=imdb",
    "--data_dir=aclImdb",
    "--output_dir=proc_data/imdb",
    "--model_dir=exp/imdb",
    "--uncased=False",
    "--spiece_model_file=tiny/spiece.model",
    "--model_config_path=tiny/xlnet_config.json",
    "--max_seq_length=32",
    "--train_batch_size=4",
    "--eval_batch_size=4",
    "--num_hosts=1",
    "--num_core_per_host=1",
    "--learning_rate=2e-5",
]


def _electra_steps(train_hparams, eval_hparams=None):
    """ELECTRA's README pipeline: the pre-training TFRecords of a corpus folder, pre-training
    (and evaluating the generator and discriminator) with the --hparams given."""
    build = [
        "build_pretraining_dataset.py",
        "--corpus-dir=corpus",
        "--vocab-file=data/vocab.txt",
        "--output-dir=data/pretrain_tfrecords",
        "--max-seq-length=32",
        "--num-processes=1",
    ]
    pretrain = ["run_pretraining.py", "--data-dir=data", "--model-name=tiny"]
    steps = [Step(build), Step([*pretrain, f"--hparams={train_hparams}"], trains=True)]
    if eval_hparams is not None:
        steps.append(Step([*pretrain, f"--hparams={eval_hparams}"]))
    return steps


REPOSITORIES = [
    Repository(
        "dennybritz/cnn-text-classification-tf",
        "text classification (CNN)",
        [
            Step(
                [
                    "train.py",
                    *_RT,
                    "--num_epochs=2",
                    "--batch_size=16",
                    "--evaluate_every=3",
                    "--checkpoint_every=3",
                    "--embedding_dim=16",
                    "--num_filters=8",
                ],
                trains=True,
            ),
        ],
        data.rt_polarity,
    ),
    Repository(
        "guillaumegenthial/tf_ner",
        "sequence labelling (fused LSTM + CRF, Estimator)",
        [
            Step(["build_vocab.py"], cwd="data/example"),
            Step(["build_glove.py"], cwd="data/example"),
            Step(["main.py"], cwd="models/lstm_crf", trains=True),
        ],
        data.tf_ner_example,
        reference="1.13",
        run_tf1_options=("--tf1_packages=tf_metrics",),
    ),
    Repository(
        "guillaumegenthial/sequence_tagging",
        "sequence labelling (BiLSTM + char LSTM + CRF)",
        [
            Step(["build_data.py"]),
            Step(["train.py"], trains=True),
            Step(
                ["evaluate.py"],
                stdin="maria lives in paris\nexit\n",
                printed=r"^acc \d|^input>|^[BIO](-\w+)?\s",
            ),
        ],
        data.conll_sequence_tagging,
    ),
    Repository(
        "gaussic/text-classification-cnn-rnn",
        "text classification (CNN, RNN)",
        [
            Step(["run_rnn.py", "train"], trains=True),
            Step(["run_cnn.py", "train"], trains=True),
            Step(
                ["run_cnn.py", "test"], printed=r"^Test (Loss|Acc)|^\s*\S+\s+\d\.\d\d\s|^\s*\[+\d"
            ),
            Step(
                ["run_rnn.py", "test"], printed=r"^Test (Loss|Acc)|^\s*\S+\s+\d\.\d\d\s|^\s*\[+\d"
            ),
        ],
        data.cnews,
    ),
    Repository(
        "nshepperd/gpt-2",
        "language model (GPT-2 fine-tuning)",
        [
            Step(
                [
                    "train.py",
                    "--dataset=data/tiny.txt",
                    "--model_name=tiny",
                    "--batch_size=1",
                    "--sample_every=1000",
                    "--sample_length=8",
                    "--save_every=2",
                    "--combine=100",
                ],
                trains=True,
                interrupt_after=(r"^\[\d+ \| .*loss=", 3),
                env={"PYTHONPATH": "src"},
            ),
        ],
        data.gpt2_tiny_model,
    ),
    Repository(
        "minimaxir/gpt-2-simple",
        "language model (GPT-2 fine-tuning, a library)",
        [Step(["readme_example.py"], trains=True)],
        data.gpt2_simple_example,
        commit="961d968",
    ),
    Repository(
        "tensorflow/nmt",
        "seq2seq / NMT (attention, beam search)",
        [
            Step(
                [
                    "-m",
                    "nmt.nmt",
                    "--attention=scaled_luong",
                    "--src=vi",
                    "--tgt=en",
                    *_NMT_DATA,
                    "--out_dir=out/nmt_attention_model",
                    "--num_train_steps=4",
                    "--steps_per_stats=2",
                    "--num_layers=2",
                    "--num_units=8",
                    "--dropout=0.2",
                    "--metrics=bleu",
                ],
                trains=True,
            ),
            Step(
                [
                    "-m",
                    "nmt.nmt",
                    "--out_dir=out/nmt_attention_model",
                    "--inference_input_file=nmt/testdata/iwslt15.tst2013.100.vi",
                    "--inference_output_file=out/nmt_attention_model/output_infer",
                ],
                compare=("out/nmt_attention_model/output_infer",),
            ),
            Step(
                [
                    "-m",
                    "nmt.nmt",
                    "--out_dir=out/nmt_attention_model",
                    "--beam_width=3",
                    "--inference_input_file=nmt/testdata/iwslt15.tst2013.100.vi",
                    "--inference_output_file=out/nmt_attention_model/output_beam",
                ],
                compare=("out/nmt_attention_model/output_beam",),
            ),
        ],
    ),
    Repository(
        "jiegzhan/multi-class-text-classification-cnn-rnn",
        "text classification (CNN + RNN)",
        [
            Step(["train.py", "./data/train.csv.zip", "./tiny_config.json"], trains=True),
            Step(
                ["predict.py", "{glob:trained_results_1*}/", "./data/tiny_samples.csv"],
                compare=("predicted_results_1*/predictions_all.csv",),
            ),
        ],
        data.sf_crime,
    ),
    Repository(
        "dhwajraj/deep-siamese-text-similarity",
        "sentence similarity (siamese BiLSTM)",
        [
            Step(
                [
                    "train.py",
                    "--training_files=person_match.tiny",
                    "--num_epochs=2",
                    "--batch_size=16",
                    "--evaluate_every=4",
                    "--checkpoint_every=4",
                    "--embedding_dim=16",
                    "--hidden_units=8",
                ],
                trains=True,
            ),
            Step(
                [
                    "eval.py",
                    "--eval_filepath=validation.tiny",
                    "--vocab_filepath={glob:runs/*/checkpoints/vocab}",
                    "--model={stem:runs/*/checkpoints/model-*.index}",
                ],
                printed=r"[Aa]ccuracy",
            ),
        ],
        data.person_match,
    ),
    Repository(
        "Determined22/zh-NER-TF",
        "sequence labelling (Chinese BiLSTM-CRF)",
        [
            Step(
                [
                    "main.py",
                    "--mode=train",
                    "--epoch=2",
                    "--hidden_dim=8",
                    "--batch_size=16",
                    "--embedding_dim=16",
                ],
                trains=True,
            ),
            Step(
                [
                    "main.py",
                    "--mode=test",
                    "--hidden_dim=8",
                    "--embedding_dim=16",
                    "--demo_model={name:data_path_save/1*}",
                ],
                printed=r"accuracy|precision|FB1|processed",
            ),
        ],
        data.zh_ner_tf,
    ),
    Repository(
        "zjy-ucas/ChineseNER",
        "sequence labelling (Chinese IDCNN/BiLSTM-CRF)",
        [
            Step(
                [
                    "main.py",
                    "--train=True",
                    "--clean=True",
                    "--max_epoch=2",
                    "--steps_check=5",
                    "--char_dim=100",
                    "--lstm_dim=8",
                    "--seg_dim=4",
                    "--tag_schema=iob",
                ],
                trains=True,
            ),
            Step(
                ["main.py", "--char_dim=100", "--lstm_dim=8", "--seg_dim=4"],
                stdin="张伟在北京工作\n",
                printed=r"entities",
                exit_status=1,
            ),
        ],
        data.chinese_ner,
    ),
    Repository(
        "google-research/albert",
        "BERT relative (ALBERT, GLUE fine-tuning)",
        [
            Step(["-m", "albert.run_classifier", *_ALBERT, "--do_train"], trains=True),
            Step(
                ["-m", "albert.run_classifier", *_ALBERT, "--do_eval", "--do_predict"],
                compare=("out/eval_results.txt", "out/test_results.tsv"),
            ),
        ],
        data.albert_mrpc,
        checkout_as="albert",
    ),
    Repository(
        "brightmart/albert_zh",
        "BERT relative (ALBERT, Chinese, LCQMC)",
        [
            Step(["run_classifier.py", *_ALBERT_ZH, "--do_train=true"], trains=True),
            Step(
                ["run_classifier.py", *_ALBERT_ZH, "--do_eval=true", "--do_predict=true"],
                compare=("albert_lcqmc_checkpoints/test_results.tsv",),
            ),
        ],
        data.albert_zh_lcqmc,
    ),
    Repository(
        "brightmart/roberta_zh",
        "BERT relative (RoBERTa, Chinese, LCQMC)",
        [
            Step(["run_classifier.py", *_ROBERTA_ZH, "--do_train=true"], trains=True),
            Step(
                ["run_classifier.py", *_ROBERTA_ZH, "--do_eval=true", "--do_predict=true"],
                compare=("checkpoint_lcqmc/test_results.tsv",),
            ),
        ],
        data.roberta_zh_lcqmc,
    ),
    Repository(
        "macanv/BERT-BiLSTM-CRF-NER",
        "sequence labelling (BERT + BiLSTM + CRF)",
        [
            Step(
                [
                    "run.py",
                    "-data_dir",
                    "NERdata",
                    "-bert_config_file",
                    "tiny/bert_config.json",
                    "-init_checkpoint",
                    "tiny/bert_model.ckpt",
                    "-vocab_file",
                    "tiny/vocab.txt",
                    "-output_dir",
                    "output",
                    "-max_seq_length",
                    "32",
                    "-batch_size",
                    "8",
                    "-num_train_epochs",
                    "1",
                    "-lstm_size",
                    "8",
                    "-save_checkpoints_steps",
                    "3",
                    "-device_map",
                    "-1",
                ],
                trains=True,
            ),
        ],
        data.bert_ner,
        reference="1.13",
    ),
    Repository(
        "HKUST-KnowComp/R-Net",
        "reading comprehension (R-Net, SQuAD)",
        [
            Step(["config.py", "--mode=prepro", *_SQUAD]),
            Step(["config.py", "--mode=train", *_SQUAD, *_RNET], trains=True),
            Step(
                ["config.py", "--mode=test", *_SQUAD, *_RNET],
                compare=("log/answer/answer.json",),
                printed=r"Exact Match|F1",
            ),
        ],
        data.squad_v1,
    ),
    Repository(
        "NLPLearn/QANet",
        "reading comprehension (QANet, SQuAD)",
        [
            Step(["config.py", "--mode=prepro", *_SQUAD]),
            Step(["config.py", "--mode=train", *_SQUAD, *_QANET], trains=True),
            Step(
                ["config.py", "--mode=test", *_SQUAD, *_QANET],
                compare=("log/answer/answer.json",),
                printed=r"Exact Match|F1",
            ),
        ],
        data.squad_v1,
    ),
    Repository(
        "bojone/bert4keras",
        "tf.keras in TF 1.x (BERT in Keras, TF_KERAS=1)",
        [Step(["readme_example.py"], env={"TF_KERAS": "1"}, printed=r"^\s*\[*\s*-?\d")],
        data.bert4keras_example,
        commit="d68f5c4",
    ),
    Repository(
        "google-research/electra",
        "BERT relative (ELECTRA pre-training)",
        _electra_steps(data.electra_hparams(), data.electra_hparams(do_train=False, do_eval=True)),
        data.electra_corpus,
    ),
    Repository(
        "Kyubyong/transformer",
        "seq2seq (Transformer, IWSLT16)",
        [
            Step(["prepro.py", "--vocab_size=60"]),
            Step(["train.py", *_KYUBYONG, "--num_epochs=1"], trains=True),
            Step(
                ["test.py", *_KYUBYONG, "--ckpt=log/1", "--test_batch_size=4"],
                compare=("test/1/*",),
            ),
        ],
        data.iwslt2016,
    ),
    Repository(
        "kimiyoung/transformer-xl",
        "language model (Transformer-XL, enwik8)",
        [
            Step(
                [
                    "data_utils.py",
                    *_TXL_DATA,
                    "--tgt_len=16",
                    "--per_host_train_bsz=4",
                    "--per_host_valid_bsz=4",
                ],
                cwd="tf",
            ),
            Step(["data_utils.py", *_TXL_DATA, "--tgt_len=8", "--per_host_test_bsz=2"], cwd="tf"),
            Step(
                [
                    "train_gpu.py",
                    *_TXL_MODEL,
                    "--dropout=0.1",
                    "--learning_rate=0.00025",
                    "--warmup_steps=0",
                    "--train_steps=4",
                    "--tgt_len=16",
                    "--mem_len=16",
                    "--train_batch_size=4",
                    "--num_core_per_host=1",
                    "--iterations=2",
                    "--save_steps=2",
                    "--do_train=True",
                    "--do_eval=False",
                ],
                cwd="tf",
                trains=True,
            ),
            Step(
                [
                    "train_gpu.py",
                    *_TXL_MODEL,
                    "--dropout=0.0",
                    "--tgt_len=8",
                    "--mem_len=16",
                    "--clamp_len=16",
                    "--same_length=True",
                    "--eval_batch_size=2",
                    "--num_core_per_host=1",
                    "--do_train=False",
                    "--do_eval=True",
                    "--eval_split=test",
                ],
                cwd="tf",
                printed=r"\| loss \d",
            ),
        ],
        data.enwik8_tokens,
    ),
    Repository(
        "zihangdai/xlnet",
        "BERT relative (XLNet, IMDB classification)",
        [
            Step(
                [
                    "run_classifier.py",
                    *_XLNET,
                    "--do_train=True",
                    "--train_steps=4",
                    "--warmup_steps=1",
                    "--save_steps=2",
                    "--iterations=2",
                ],
                trains=True,
            ),
            Step(["run_classifier.py", *_XLNET, "--do_eval=True"], printed=r"Eval result \|"),
        ],
        data.xlnet_imdb,
    ),
    Repository(
        "ymcui/Chinese-ELECTRA",
        "BERT relative (ELECTRA, Chinese pre-training)",
        _electra_steps(data.electra_hparams(vocab_size=data.bert_vocab_size(True))),
        data.chinese_electra_corpus,
    ),
    Repository(
        "brightmart/text_classification",
        "text classification (TextCNN, multi-label)",
        [
            Step(
                [
                    "p7_TextCNN_train.py",
                    "--num_epochs=2",
                    "--batch_size=8",
                    "--sentence_len=20",
                    "--embed_size=16",
                    "--num_filters=8",
                    "--ckpt_dir=text_cnn_checkpoint/",
                ],
                cwd="a02_TextCNN",
                trains=True,
            ),
        ],
        data.zhihu_cache,
    ),
    Repository(
        "hanxiao/bert-as-service",
        "sentence encoder serving (BERT)",
        [
            Step(
                ["readme_example.py"],
                env={"PYTHONPATH": "server:client"},
                printed=r"^\s*\[*\s*-?\d",
                timeout=600,
            )
        ],
        data.bert_as_service_example,
    ),
]

# tf.keras inside TF 1.x graphs: Model.fit / evaluate / predict in a TF 1.x session,
# callbacks, h5 and TF-format weights, model_to_estimator.
REPOSITORIES += [
    Repository(
        "GoogleCloudPlatform/cloudml-samples",
        "tf.keras in TF 1.x (census/tf-keras: fit on a Dataset, TensorBoard and learning-rate "
        "callbacks, export_saved_model)",
        [
            Step(
                ["-m", "trainer.task", "--job-dir=out", "--num-epochs=2", "--batch-size=16"],
                cwd="census/tf-keras",
                trains=True,
                env={"TMPDIR": "tmp"},
            ),
        ],
        keras_data.census_tf_keras,
    ),
    Repository(
        "tensorflow/docs",
        "tf.keras in TF 1.x (the TF 1.x Keras guide: fit / evaluate / predict, callbacks, "
        "TF and h5 weights, load_model, model_to_estimator)",
        [
            Step(
                ["keras.py"],
                cwd="site/en/r1/guide",
                trains=True,
                scratch=("/tmp/model_dir",),
            ),
        ],
        keras_data.tf_docs_keras_guide,
    ),
]

# keras-bert's layers come in packages of their own (keras-transformer and the six it
# needs), installed as its requirements say; their metadata requires Keras, not TF 1.x, so
# run_tf1.py is told they are TF 1.x code (--tf1_packages), as for tf_ner's tf_metrics.
_KERAS_BERT_PACKAGES = (
    "keras_transformer,keras_pos_embd,keras_multi_head,keras_layer_normalization,"
    "keras_position_wise_feed_forward,keras_embed_sim,keras_self_attention"
)

REPOSITORIES += [
    Repository(
        "CyberZHG/keras-bert",
        "tf.keras in TF 1.x (BERT in Keras from a TF checkpoint, TF_KERAS=1, pip-installed "
        "layer packages)",
        [
            Step(
                ["demo/load_model/load_and_predict.py", "tiny"],
                env={"TF_KERAS": "1", "PYTHONPATH": "."},
                printed=r"^Fill with|is random next|^Tokens",
            )
        ],
        keras_data.keras_bert_demo,
        commit="e9ccba8",
        run_tf1_options=(f"--tf1_packages={_KERAS_BERT_PACKAGES}",),
    ),
]
