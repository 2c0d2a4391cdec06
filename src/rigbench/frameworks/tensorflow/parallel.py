"""Data parallelism for TensorFlow through its own engine: tf.distribute.MultiWorkerMirroredStrategy
created from TF_CONFIG (cluster.py), one worker per rank and one replica per worker, its
collectives over gRPC (CommunicationImplementation.AUTO: ring all-reduce on the CPU, NCCL on
GPUs). The Keras variables created in its scope are MirroredVariables; a step run through
`strategy.run` has Keras' optimiser sum the replicas' gradients before the update
(keras/src/backend/tensorflow/optimizer.py, `_all_reduce_sum_gradients`), and the step
divides each replica's mean loss by the replicas (tensorflow/step.py), so the update is the
global batch's mean gradient. The trainer asks `world()` whether it runs inside the strategy.

The strategy must exist before TensorFlow's runtime starts ("Collective ops must be configured
at program startup"): the adapter's `join` creates it (`start`), which the runner calls before
anything can start the runtime (runner/child.py counts the model only after a rank joined).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import tensorflow as tf

from rigbench.frameworks.tensorflow import cluster
from rigbench.rank_store import StoreClient

#: What TensorFlow's collectives say when another worker went away in the middle of one (gRPC's
#: UNAVAILABLE: "Collective ops is aborted by: Socket closed", or "Connection refused" when the
#: peer was gone before the collective began).
PEER_GONE = ("Collective ops is aborted", "Socket closed", "Connection refused", "Connection reset",
             "failed to connect")

_strategy: tf.distribute.MultiWorkerMirroredStrategy | None = None


def start(config: dict | None = None) -> tf.distribute.MultiWorkerMirroredStrategy:
    """This process's strategy, created on the first call from `config` (TF_CONFIG, which the
    strategy's cluster resolver reads from the environment now); it blocks until every worker
    has started its server."""
    global _strategy
    if _strategy is None:
        if config is None:
            raise RuntimeError("no strategy yet: a TensorFlow rank joins through the adapter's `join`")
        os.environ["TF_CONFIG"] = json.dumps(config)
        options = tf.distribute.experimental.CommunicationOptions(
            implementation=tf.distribute.experimental.CommunicationImplementation.AUTO)
        strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
        workers = len(strategy.cluster_resolver.cluster_spec().as_dict()["worker"])
        if strategy.num_replicas_in_sync != workers:  # cluster.rank_environment shows each one device
            raise RuntimeError(f"{strategy.num_replicas_in_sync} replicas for {workers} workers: "
                               f"each rank must see one device ({strategy.extended.worker_devices})")
        _strategy = strategy
    return _strategy


def joined() -> bool:
    """Whether this process is a worker of a strategy (of any size, 1 included)."""
    return _strategy is not None


def world() -> tuple[int, int]:
    """(rank, world size) of this process: (0, 1) outside a strategy."""
    if _strategy is None:
        return 0, 1
    return int(_strategy.cluster_resolver.task_id), int(_strategy.num_replicas_in_sync)


def scope() -> contextlib.AbstractContextManager[Any]:
    """The strategy's scope, in which Keras creates MirroredVariables and optimisers that
    all-reduce (a no-op outside a strategy)."""
    return contextlib.nullcontext() if _strategy is None else _strategy.scope()


def _replica_context() -> tf.distribute.ReplicaContext:
    context = tf.distribute.get_replica_context()
    assert context is not None, "a collective outside strategy.run"
    return context


class TfCollective:
    """The rank's worker in the strategy (base.Collective)."""

    def __init__(self, strategy: tf.distribute.MultiWorkerMirroredStrategy):
        self.strategy = strategy

        @tf.function
        def most(value: tf.Tensor) -> tf.Tensor:
            # ReduceOp has only SUM and MEAN: gather every worker's value and take the largest.
            gathered = strategy.run(lambda v: _replica_context().all_gather(tf.reshape(v, [1]), axis=0), args=(value,))
            return tf.reduce_max(strategy.experimental_local_results(gathered)[0])

        @tf.function
        def all_reduce(buffer: tf.Tensor) -> tf.Tensor:
            # A function's input has no device, and the collective takes its destination from
            # its operand's: the identity runs on the replica's device ("destinations can not
            # be empty" otherwise).
            summed = strategy.run(lambda b: _replica_context().all_reduce(tf.distribute.ReduceOp.SUM, tf.identity(b)),
                                  args=(buffer,))
            return strategy.experimental_local_results(summed)[0]

        self._most, self._all_reduce = most, all_reduce

    def agree(self, steps: int) -> int:
        return int(self._most(tf.constant(steps, tf.int64)).numpy())

    def time_all_reduce(self, nbytes: int, repeats: int) -> list[float]:
        buffer = tf.ones([max(1, nbytes // 4)], tf.float32)
        times = []
        for _ in range(repeats + 1):  # the first traces the function and opens the connections: untimed
            start = time.perf_counter()
            self._all_reduce(buffer).numpy()  # the host copy waits for the result
            times.append(time.perf_counter() - start)
        return times[1:]

    def send(self, key: str, text: str) -> None:
        """base.ReportChannel through the rank store the ranks met in (cluster.py), which rank 0
        (on node 0, the one that receives) serves until it ends."""
        _channel().set(key, text)

    def receive(self, keys: list[str], timeout_s: float) -> dict[str, str]:
        return _channel().wait(keys, timeout_s)

    def leave(self, failed: bool) -> None:
        """Nothing to do: TensorFlow has no public call that takes a worker out of its cluster;
        its server ends with the process (the rank's next step)."""

    def lost_peer(self, exc: BaseException) -> bool:
        return isinstance(exc, tf.errors.OpError) and any(text in str(exc) for text in PEER_GONE)


def _channel() -> StoreClient:
    client = cluster.channel()
    if client is None:
        raise RuntimeError("this rank has not met the others through the rank store")
    return client


def replicated(fn: Callable[[Any, Any], Any], jit_compile: bool) -> Callable[[Any, Any], Any]:
    """`fn` (a training step on (inputs, targets)) run by the strategy on this worker's replica,
    traced once; its result is the replica's own (the loss of the rank's share)."""
    strategy = start()
    inner = tf.function(fn, jit_compile=True) if jit_compile else fn

    @tf.function
    def run(x: Any, y: Any) -> Any:
        return strategy.experimental_local_results(strategy.run(inner, args=(x, y)))[0]

    return run


@contextlib.contextmanager
def _local_gradients(optimizers: Iterable[Any]) -> Iterator[None]:
    """Keras' TensorFlow optimisers with their gradient all-reduce replaced by the identity while
    a step is traced (Keras has no switch for it; the method is private, hence the narrow patch):
    each replica applies its own gradients, and no collective runs."""
    patched = []
    for optimizer in optimizers:
        for target in (optimizer, getattr(optimizer, "inner_optimizer", None)):  # a loss-scale wrapper's inner one
            if target is not None and hasattr(target, "_all_reduce_sum_gradients"):
                target._all_reduce_sum_gradients = list
                patched.append(target)
    try:
        yield
    finally:
        for target in patched:
            del target._all_reduce_sum_gradients  # the class's method again


def unsynced(fn: Callable[[Any, Any], Any], optimizers: Iterable[Any], jit_compile: bool) -> Callable[[Any, Any], Any]:
    """`fn` run by the strategy without the gradient all-reduce (DDP's no_sync): the same
    arithmetic as the synchronised step (the loss still divided by the replicas) minus the
    communication. The replicas drift apart: only for timing."""
    optimizers = list(optimizers)

    def local(x: Any, y: Any) -> Any:
        with _local_gradients(optimizers):
            return fn(x, y)

    return replicated(local, jit_compile)


def fingerprint(variables: Iterable[Any]) -> tuple[str, list[float]]:
    """(sha256 over every variable's host bytes, in order, each variable's sum) of this
    worker's copies."""
    digest = hashlib.sha256()
    sums = []
    for variable in variables:
        host = np.ascontiguousarray(np.asarray(variable.numpy(), dtype=np.float32))
        digest.update(host.tobytes())
        sums.append(float(host.astype(np.float64).sum()))
    return digest.hexdigest(), sums
