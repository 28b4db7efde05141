"""TF-Slim, vision and speech repositories of 2017-2020, each with its README's pipeline.

Picked by stars within each kind before any was tried (COMPATIBILITY.md gives the
list and why): the most used code built on tf.contrib.slim's nets (FaceNet, SSD), the
two most starred image GANs of TF 1.x (DCGAN, pix2pix) and the most starred WaveNet.
As in corpus.py, each gives the README's steps with flags that keep them tiny and
data of its own format (media_data.py); the code runs as it is on both sides.
"""

from . import media_data
from .corpus import Repository
from .runner import Step

_PIX2PIX_TINY = ["--ngf=8", "--ndf=8", "--scale_size=256", "--seed=1"]

_DCGAN = [
    "main.py",
    "--dataset=mnist",
    "--input_height=28",
    "--output_height=28",
    "--batch_size=4",
    "--z_dim=8",
    "--out_name=tiny",
]

REPOSITORIES = [
    Repository(
        "affinelayer/pix2pix-tensorflow",
        "vision (pix2pix: U-Net generator, PatchGAN, queue input, Supervisor)",
        [
            Step(
                [
                    "pix2pix.py",
                    "--mode=train",
                    "--output_dir=facades_train",
                    "--max_steps=3",
                    "--input_dir=facades/train",
                    "--which_direction=BtoA",
                    "--progress_freq=1",
                    "--summary_freq=3",
                    "--save_freq=3",
                    *_PIX2PIX_TINY,
                ],
                trains=True,
            ),
            Step(
                [
                    "pix2pix.py",
                    "--mode=test",
                    "--output_dir=facades_test",
                    "--input_dir=facades/val",
                    "--checkpoint=facades_train",
                    "--seed=1",
                ],
                printed=r"^evaluated image|^parameter_count",
            ),
        ],
        media_data.pix2pix_facades,
    ),
    Repository(
        "ibab/tensorflow-wavenet",
        "speech (WaveNet: dilated causal convolutions, audio queue, fast generation)",
        [
            Step(
                [
                    "train.py",
                    "--data_dir=corpus",
                    "--logdir=logdir/train/tiny",
                    "--wavenet_params=tiny_params.json",
                    "--num_steps=4",
                    "--checkpoint_every=2",
                    "--sample_size=1600",
                    # The silence trimming calls librosa.feature.rmse, which librosa
                    # renamed in 2019: its README's own way to turn it off.
                    "--silence_threshold=0",
                ],
                trains=True,
            ),
            Step(
                [
                    "generate.py",
                    "--samples=200",
                    "--wavenet_params=tiny_params.json",
                    "--logdir=logdir/generate/tiny",
                    "{stem:logdir/train/tiny/model.ckpt-*.index}",
                ],
            ),
        ],
        media_data.wavenet_corpus,
    ),
    Repository(
        "davidsandberg/facenet",
        "TF-Slim (FaceNet: Inception-ResNet-v1 classifier training, LFW validation)",
        [
            Step(
                [
                    "src/train_softmax.py",
                    "--logs_base_dir=logs/facenet",
                    "--models_base_dir=models/facenet",
                    "--data_dir=data/casia_tiny",
                    "--image_size=160",
                    "--model_def=models.inception_resnet_v1",
                    "--optimizer=ADAM",
                    "--learning_rate=0.01",
                    "--max_nrof_epochs=1",
                    "--epoch_size=2",
                    "--batch_size=4",
                    "--keep_probability=0.8",
                    "--random_crop",
                    "--random_flip",
                    "--use_fixed_image_standardization",
                    "--weight_decay=5e-4",
                    "--embedding_size=16",
                    "--validation_set_split_ratio=0.25",
                    "--min_nrof_val_images_per_class=1",
                    "--prelogits_norm_loss_factor=5e-4",
                ],
                trains=True,
                env={"PYTHONPATH": "src"},
            ),
            Step(
                [
                    "src/validate_on_lfw.py",
                    "data/lfw_tiny",
                    "{glob:models/facenet/2*}",
                    "--lfw_pairs=data/pairs_tiny.txt",
                    "--lfw_nrof_folds=2",
                    "--lfw_batch_size=8",
                    "--distance_metric=1",
                    "--use_flipped_images",
                    "--subtract_mean",
                    "--use_fixed_image_standardization",
                ],
                env={"PYTHONPATH": "src"},
                printed=r"^(Accuracy|Validation rate|Area Under|Equal Error)",
            ),
        ],
        media_data.facenet_faces,
    ),
    Repository(
        "carpedm20/DCGAN-tensorflow",
        "vision (DCGAN on MNIST, conditional; checkpoint export)",
        [
            Step(
                [
                    *_DCGAN,
                    "--train",
                    "--epoch=1",
                    "--train_size=12",
                    "--sample_freq=1000",
                    "--ckpt_freq=3",
                ],
                trains=True,
            ),
            # Its README's test command, with the checkpoint export main.py defines (its
            # --freeze looks for generator_1/Tanh, which only the generator without
            # labels has: on MNIST, TF 1.15 stops with an AssertionError).
            Step([*_DCGAN, "--export"]),
        ],
        media_data.mnist_idx,
    ),
    Repository(
        "balancap/SSD-Tensorflow",
        "TF-Slim (SSD-300 VGG: Pascal VOC to TFRecords, training, evaluation)",
        [
            Step(
                [
                    "tf_convert_data.py",
                    "--dataset_name=pascalvoc",
                    "--dataset_dir=./VOC2007/",
                    "--output_name=voc_2007_train",
                    "--output_dir=./tfrecords",
                ]
            ),
            Step(
                [
                    "train_ssd_network.py",
                    "--train_dir=./logs",
                    "--dataset_dir=./tfrecords",
                    "--dataset_name=pascalvoc_2007",
                    "--dataset_split_name=train",
                    "--model_name=ssd_300_vgg",
                    "--save_summaries_secs=60",
                    "--save_interval_secs=600",
                    "--weight_decay=0.0005",
                    "--optimizer=adam",
                    "--learning_rate=0.001",
                    "--batch_size=2",
                    "--max_number_of_steps=2",
                    "--num_readers=1",
                    "--num_preprocessing_threads=1",
                ],
                trains=True,
            ),
            Step(
                [
                    "eval_ssd_network.py",
                    "--eval_dir=./logs/eval",
                    "--dataset_dir=./tfrecords",
                    "--dataset_name=pascalvoc_2007",
                    "--dataset_split_name=train",
                    "--model_name=ssd_300_vgg",
                    "--checkpoint_path=./logs",
                    "--batch_size=1",
                    "--max_num_batches=2",
                ],
                printed=r"AP_VOC",
            ),
        ],
        media_data.pascal_voc,
    ),
]
