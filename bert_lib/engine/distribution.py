"""The tf.distribute strategies the engine trains under, and watching a job's workers.

One device (no strategy), MirroredStrategy over local GPUs (or CPUs),
MultiWorkerMirroredStrategy over the cluster in TF_CONFIG, and TPUStrategy.
Distribution is the one object the graph builders and the training loop ask
how many replicas there are, how to split the batch and how to run a step
on every replica.

Multi-worker jobs also get a watch on their peers (watch_peers): a worker
that stops answering ends every other worker within seconds, with one line
naming it and the checkpoint a restart resumes from, instead of leaving
them waiting in a collective op that never completes.
"""

import contextlib
import json
import os
import socket
import sys
import threading
import time

import tensorflow as tf

from .checkpoints import newest_checkpoint
from .config import UsageError, WorkerLostError, session_config

_SERVERS = {}


def _multi_worker_cluster():
    """Returns (cluster_spec, task_type, task_index) from TF_CONFIG, or raises UsageError."""
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        raise UsageError(
            "--distribution_strategy=multi_worker needs the TF_CONFIG environment variable "
            '(e.g. {"cluster": {"worker": ["host1:port", "host2:port"]}, '
            '"task": {"type": "worker", "index": 0}})'
        )
    try:
        tf_config = json.loads(raw)
        cluster = tf_config["cluster"]
        task = tf_config["task"]
        task_type = task["type"]
        task_index = int(task["index"])
    except (ValueError, KeyError, TypeError) as e:
        raise UsageError(f"TF_CONFIG is not valid cluster JSON ({e}): {raw}") from None
    if task_type != "worker" or "worker" not in cluster:
        raise UsageError(
            f"TF_CONFIG: multi_worker training wants a 'worker' cluster and task, got {raw}"
        )
    if not 0 <= task_index < len(cluster["worker"]):
        raise UsageError(
            f"TF_CONFIG task index {task_index} is outside the {len(cluster['worker'])} workers"
        )
    return tf.train.ClusterSpec(cluster), task_type, task_index


def is_chief(config):
    """Whether this process is the one that writes a training's checkpoints (worker 0 of
    a multi-worker job; the only process otherwise)."""
    if config.distribution_strategy != "multi_worker" or config.use_tpu:
        return True
    return _multi_worker_cluster()[2] == 0


def mirrored_devices(config):
    """The devices MirroredStrategy spreads over: --num_gpus of the visible GPUs (all by
    default), else the CPU."""
    return _mirrored_devices(config.num_gpus)


def local_replicas(distribution_strategy, num_gpus):
    """How many replicas of this process split a training batch: the mirrored devices under
    "mirrored", else 1. None under "multi_worker", whose replicas are known only once
    its cluster is joined."""
    if distribution_strategy == "multi_worker":
        return None
    if distribution_strategy == "mirrored":
        return len(_mirrored_devices(num_gpus))
    return 1


def _mirrored_devices(num_gpus):
    gpus = [d.name for d in tf.config.list_logical_devices("GPU")]
    if num_gpus == 0:
        gpus = []
    elif num_gpus is not None:
        if num_gpus > len(gpus):
            raise UsageError(f"--num_gpus={num_gpus} but only {len(gpus)} GPU(s) are visible")
        return gpus[:num_gpus]
    if gpus:
        return gpus
    return [d.name for d in tf.config.list_logical_devices("CPU")]


def check_devices(config, train_batch_size=None):
    """What Distribution(config) and the training graph will need, checked when a script
    starts rather than after it has written its records: a valid TF_CONFIG under
    multi_worker, as many visible GPUs as --num_gpus asks for under mirrored, and a
    train_batch_size (when given) that splits over the replicas and their
    --num_accumulation_steps micro-batches."""
    if config.use_tpu:
        return
    if config.distribution_strategy == "multi_worker":
        _multi_worker_cluster()
    replicas = local_replicas(config.distribution_strategy, config.num_gpus)
    if not train_batch_size:
        return
    if replicas and train_batch_size % replicas:
        raise UsageError(
            f"train_batch_size={train_batch_size} must be a positive multiple of the "
            f"{replicas} replicas"
        )
    steps = config.num_accumulation_steps
    per_replica = train_batch_size // (replicas or 1)
    if train_batch_size % steps or per_replica % steps:
        raise UsageError(
            f"train_batch_size={train_batch_size} per replica ({per_replica}) must be a "
            f"multiple of --num_accumulation_steps={steps}"
        )


class Distribution:
    """The tf.distribute strategy (or none) a graph is built for, plus its session set-up.

    Built inside the graph it serves: the v1 strategies in graph mode keep
    per-graph state, and MultiWorkerMirroredStrategy would otherwise start
    an eager-mode server of its own.
    """

    def __init__(self, config):
        self.config = config
        self.strategy = None
        self.is_tpu = False
        self.is_chief = True
        self.target = ""
        self.num_workers = 1
        self.worker_index = 0
        self.worker_addresses = []
        proto = session_config(config.session_config)
        if config.use_tpu:
            self._init_tpu(config)
        elif config.distribution_strategy == "mirrored":
            self.strategy = tf.compat.v1.distribute.MirroredStrategy(mirrored_devices(config))
        elif config.distribution_strategy == "multi_worker":
            cluster_spec, task_type, task_index = _multi_worker_cluster()
            self.strategy = tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy()
            self.strategy.configure(session_config=proto)
            self.num_workers = cluster_spec.num_tasks("worker")
            self.worker_addresses = cluster_spec.job_tasks("worker")
            self.worker_index = task_index
            self.is_chief = task_index == 0
            key = (json.dumps(cluster_spec.as_dict(), sort_keys=True), task_index)
            if key not in _SERVERS:
                address = self.worker_addresses[task_index]
                check_own_port(address, task_index)
                try:
                    _SERVERS[key] = tf.distribute.Server(
                        cluster_spec,
                        job_name=task_type,
                        task_index=task_index,
                        protocol="grpc",
                        config=proto,
                    )
                except tf.errors.OpError as e:
                    raise UsageError(
                        f"cannot start worker {task_index}'s server at {address} "
                        f"(TF_CONFIG): {e.message.splitlines()[0]}"
                    ) from None
            self.target = _SERVERS[key].target
        self.session_config = proto

    def _init_tpu(self, config):
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
            tpu=config.tpu_name or config.master,
            zone=config.tpu_zone,
            project=config.gcp_project,
        )
        self.target = resolver.master()
        self.strategy = tf.compat.v1.distribute.experimental.TPUStrategy(resolver, steps_per_run=1)
        self.is_tpu = True

    @property
    def num_replicas(self):
        return self.strategy.num_replicas_in_sync if self.strategy else 1

    @property
    def num_local_replicas(self):
        if self.strategy is None:
            return 1
        return len(self.strategy.extended.worker_devices)

    def scope(self):
        return self.strategy.scope() if self.strategy else contextlib.nullcontext()

    def replica_batch_size(self, global_batch_size, what):
        """Splits the global batch evenly over the replicas (the original's semantics)."""
        if global_batch_size is None:
            raise UsageError(f"{what} is not set")
        if global_batch_size <= 0 or global_batch_size % self.num_replicas:
            raise UsageError(
                f"{what}={global_batch_size} must be a positive multiple of the "
                f"{self.num_replicas} replicas"
            )
        return global_batch_size // self.num_replicas

    def make_iterator(self, dataset_fn):
        """Returns an initializable iterator; dataset_fn(input_context or None) -> Dataset."""
        if self.strategy is None:
            return _SingleIterator(dataset_fn(None))
        return self.strategy.make_input_fn_iterator(dataset_fn)

    def run(self, replica_fn, iterator):
        """Runs replica_fn(next element) on every replica; returns per-replica outputs."""
        if self.strategy is None:
            return replica_fn(iterator.get_next())
        return self.strategy.experimental_run(replica_fn, iterator)

    def reduce_mean(self, value):
        if self.strategy is None:
            return value
        return self.strategy.reduce(tf.distribute.ReduceOp.MEAN, value, axis=None)

    @contextlib.contextmanager
    def model_fn_scope(self):
        """What a model_fn runs under on each replica.

        Variables default to ONLY_FIRST_REPLICA aggregation (see the module
        doc), and tf.compat.v1.train.Optimizer subclasses that use the base
        class's gradient code average over replicas (not sum), as they did
        under tf.estimator, which turned on the same strategy switch.
        """
        if self.strategy is None:
            yield
            return
        scale_loss = getattr(self.strategy, "_scale_loss_for_estimator_enabled", None)
        with contextlib.ExitStack() as stack:
            stack.enter_context(tf.variable_creator_scope(_first_replica_creator))
            if scale_loss is not None:
                stack.enter_context(scale_loss())
            yield

    @contextlib.contextmanager
    def watch_peers(self, model_dir):
        """Keeps watch on the other workers while the block runs; yields a PeerWatch or None.

        A worker lost while the block waits on it ends this process (see
        PeerWatch); one lost while the block is between steps surfaces
        here as the collective op's error, which becomes WorkerLostError.
        """
        if self.num_workers < 2:
            yield None
            return
        peers = {
            index: address
            for index, address in enumerate(self.worker_addresses)
            if index != self.worker_index
        }
        watch = PeerWatch(peers, model_dir, self.num_workers)
        watch.start()
        try:
            yield watch
        except _PEER_ERRORS:
            watch.stop()
            lost = watch.lost_workers(within=_PROBE_SECONDS * _MISSES)
            if not lost:
                raise
            raise WorkerLostError(watch.message(lost)) from None
        finally:
            watch.stop()

    def initialize_system(self, session):
        if self.is_tpu:
            session.run(tf.compat.v1.tpu.initialize_system())

    def shutdown_system(self, session):
        if self.is_tpu:
            session.run(tf.compat.v1.tpu.shutdown_system())


def _first_replica_creator(next_creator, **kwargs):
    aggregation = kwargs.get("aggregation")
    if aggregation is None or aggregation == tf.VariableAggregation.NONE:
        kwargs["aggregation"] = tf.VariableAggregation.ONLY_FIRST_REPLICA
    return next_creator(**kwargs)


class _SingleIterator:
    """The one-device counterpart of a strategy's input_fn iterator."""

    def __init__(self, dataset):
        self.dataset = dataset
        self.iterator = tf.compat.v1.data.make_initializable_iterator(dataset)

    def get_next(self):
        return self.iterator.get_next()

    def initialize(self):
        return [self.iterator.initializer]


# What a collective op raises when a peer goes away mid-step.
_PEER_ERRORS = (
    tf.errors.UnavailableError,
    tf.errors.DeadlineExceededError,
    tf.errors.CancelledError,
    tf.errors.AbortedError,
    tf.errors.InternalError,
    tf.errors.UnknownError,
)
_PROBE_SECONDS = 2.0  # between two checks of a peer, and the connect timeout of one
_MISSES = 3  # checks in a row a peer must fail to count as lost
# How long a peer may take to start: a worker not answering by then (never started,
# or its address held by another program) ends the job instead of a wait without end.
_START_SECONDS = 60.0

# What a peer's address gives a probe: a worker's server (gRPC speaks HTTP/2 and sends
# its SETTINGS frame as soon as a connection opens), another program that accepts the
# connection but is no such server, or nothing.
WORKER, FOREIGN, SILENT = "worker", "foreign", "silent"
_HTTP2_SETTINGS = 4  # the type of an HTTP/2 SETTINGS frame (byte 3 of its header)


def _probe(address):
    """What answers at host:port: WORKER, FOREIGN or SILENT."""
    host, _, port = address.rpartition(":")
    try:
        connection = socket.create_connection(
            (host.strip("[]"), int(port)), timeout=_PROBE_SECONDS
        )
    except (OSError, ValueError):
        return SILENT
    header = b""
    with connection:
        try:
            while len(header) < 9:
                data = connection.recv(9 - len(header))
                if not data:
                    break
                header += data
        except OSError:
            pass
    return WORKER if len(header) == 9 and header[3] == _HTTP2_SETTINGS else FOREIGN


def _answers(address):
    """Whether a worker's server answers at host:port."""
    return _probe(address) == WORKER


def check_own_port(address, index):
    """Raises UsageError when this worker's port (TF_CONFIG) is taken by another process:
    its server could not start, and the job would wait for it."""
    host, _, port = address.rpartition(":")
    try:
        port = int(port)
    except ValueError:
        raise UsageError(f"TF_CONFIG: worker {index}'s address {address} has no port") from None
    with socket.socket(socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("", port))
        except OSError as e:
            raise UsageError(
                f"cannot start worker {index}'s server at {address} (TF_CONFIG): port {port} "
                f"is in use by another process ({e.strerror})"
            ) from None


class PeerWatch:
    """Checks every few seconds that the other workers' servers still accept connections.

    A collective op waits for ever on a worker that died, so the check runs
    beside the training thread. A peer that answered once and then fails
    _MISSES checks in a row is lost: this process then prints one line
    (which worker, the newest checkpoint in model_dir, how to resume) and
    exits with status 1 at once, since the training thread may never
    return. Peers that have not yet answered (still starting) are waited for.
    """

    def __init__(self, peers, model_dir, num_workers):
        self.peers = dict(peers)  # worker index -> "host:port"
        self.model_dir = model_dir
        self.num_workers = num_workers
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._stopped = False
        self._thread = threading.Thread(target=self._watch, name="peer_watch", daemon=True)

    def start(self):
        self._thread.start()

    def stop(self):
        """No report after this returns: the job no longer needs its peers."""
        with self._lock:
            self._stopped = True
        self._stop.set()

    def lost_workers(self, within):
        """Indices of peers not answering, trying for up to `within` seconds."""
        deadline = time.time() + within
        while True:
            lost = [index for index, address in self.peers.items() if not _answers(address)]
            if lost or time.time() >= deadline:
                return lost
            time.sleep(0.5)

    def message(self, lost):
        """The one line that says which worker was lost and how to resume."""
        names = ", ".join(f"{index} ({self.peers[index]})" for index in sorted(lost))
        checkpoint = newest_checkpoint(self.model_dir)
        where = (
            f"the newest checkpoint is {checkpoint}; starting every worker again with the "
            "same command resumes from it"
            if checkpoint
            else "there is no checkpoint yet; starting every worker again with the same "
            "command starts over"
        )
        plural = "s" if len(lost) > 1 else ""
        return f"lost worker{plural} {names} of {self.num_workers}: {where}"

    def _watch(self):
        seen, misses = set(), dict.fromkeys(self.peers, 0)
        foreign = dict.fromkeys(self.peers, 0)
        started = time.time()
        while not self._stop.wait(_PROBE_SECONDS):
            for index, address in self.peers.items():
                answer = _probe(address)
                if answer == WORKER:
                    seen.add(index)
                    misses[index] = foreign[index] = 0
                    continue
                foreign[index] = foreign[index] + 1 if answer == FOREIGN else 0
                if index in seen:
                    misses[index] += 1
            lost = [index for index in seen if misses[index] >= _MISSES]
            if lost:
                self._exit(self.message(lost))
            held = [i for i in self.peers if i not in seen and foreign[i] >= _MISSES]
            if held:
                self._exit(self.held_message(held))
            if time.time() - started > _START_SECONDS:
                silent = [index for index in self.peers if index not in seen]
                if silent:
                    self._exit(self.silent_message(silent))

    def held_message(self, held):
        """The line for peers whose address answers, but not as a worker's server."""
        names = ", ".join(f"{index} ({self.peers[index]})" for index in sorted(held))
        plural = "s" if len(held) > 1 else ""
        return (
            f"worker{plural} {names} of {self.num_workers}: another program holds the "
            "address, not a worker of this job (is the port in TF_CONFIG free on that "
            "machine?); start every worker again once it is"
        )

    def silent_message(self, silent):
        """The line for peers that never answered within _START_SECONDS."""
        names = ", ".join(f"{index} ({self.peers[index]})" for index in sorted(silent))
        plural = "s" if len(silent) > 1 else ""
        return (
            f"worker{plural} {names} of {self.num_workers} did not answer within "
            f"{_START_SECONDS:.0f} s: start every worker with the same TF_CONFIG (is "
            "the address right, the machine reachable?)"
        )

    def _exit(self, line):
        with self._lock:
            if self._stopped:
                return
            sys.stdout.flush()
            sys.stderr.write(f"ERROR: {line}\n")
            sys.stderr.flush()
            os._exit(1)
