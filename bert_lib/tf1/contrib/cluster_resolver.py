"""tf.contrib.cluster_resolver of TF 1.x: the TPU a TPUEstimator script names."""

import tensorflow as tf

from ..machinery.namespaces import Namespace


class TPUClusterResolver:
    """tf.contrib.cluster_resolver.TPUClusterResolver: names the TPU for RunConfig(cluster=).

    The engine resolves the TPU itself (TPUStrategy) from these names when
    training starts; nothing is contacted when this is made.
    """

    def __init__(self, tpu=None, zone=None, project=None, job_name="worker", **unused):
        self.tpu = tpu
        self.zone = zone
        self.project = project
        self.job_name = job_name

    def master(self, *unused_args, **unused_kwargs):
        """The TPU's name, as RunConfig(master=...) took it."""
        return self.tpu


def cluster_resolver_module():
    """tf.contrib.cluster_resolver: TensorFlow 2's, with TPUClusterResolver as above."""
    return Namespace(
        "tf.contrib.cluster_resolver",
        tf.distribute.cluster_resolver,
        {"TPUClusterResolver": TPUClusterResolver},
    )
