"""Data parallelism for JAX through its own engine: `jax.distributed` joined from the launch
contract (rigbench/ranks.py), one device per process, and XLA's SPMD partitioner doing the
rest. Every process's device forms a Mesh with a 'data' axis; the state is replicated on it
(P()) and the batch sharded along it (P('data')), and the trainer's one jitted step runs on
these global arrays: the loss is the mean over the global batch, so XLA all-reduces the
gradients (gloo between CPU processes, NCCL between GPUs) and every replica applies the same
averaged update, as one process on the global batch would.

Beyond torch's DDP, two things differ: batch-norm statistics are the global batch's (the
partitioner reduces them across processes; DDP keeps them per rank), and "no sync" means the
step jitted for the process's own device alone, on its own rows.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import sys
import time
from typing import Any

import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from rigbench.ranks import RankInfo
from rigbench.spec import TrialSpec

#: Seconds jax.distributed may wait past the trial's timeout (to connect, or for a silent peer's
#: heartbeat): the launcher's deadline, which names the rank that hung, must come first.
COLLECTIVE_GRACE_S = 60
#: What gloo says when another process went away in the middle of a collective, as jax raises it
#: ("Gloo all-reduce failed: [.../pair.cc:547] Connection closed by peer [127.0.0.1]:22747",
#: "... Read error [127.0.0.1]:30615: Connection reset by peer"), seen by killing a rank.
PEER_GONE = ("closed by peer", "reset by peer")

#: The report channel's keys in jax.distributed's key-value store start with this.
CHANNEL_PREFIX = "rigbench/"

_joined = False


class JaxCollective:
    """The process's membership of jax.distributed (base.Collective).

    A rank that failed must not wait in jax's shutdown barrier (jax's own atexit handler calls
    it too): its peers may be blocked in a collective waiting for it, and the barrier then
    holds it until its timeout. `leave(failed=True)` ends the process straight after its
    report is written instead (the peers' collectives fail at once, collaterally).
    """

    def __init__(self, spec: TrialSpec, rank: RankInfo):
        global _joined
        wait_s = int(spec.measure.timeout_s) + COLLECTIVE_GRACE_S
        # The CPU client has no cross-process collectives unless told which; set before the
        # backend starts (initialize) -- jax 0.10 offers gloo and mpi.
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        gpu = spec.device.partition(":")[0] in ("cuda", "rocm")
        jax.distributed.initialize(coordinator_address=f"{rank.master_addr}:{rank.master_port}",
                                   num_processes=rank.world_size, process_id=rank.rank,
                                   # one GPU per rank on its node, as torch takes cuda:LOCAL_RANK
                                   local_device_ids=[rank.local_rank] if gpu else None,
                                   initialization_timeout=wait_s, heartbeat_timeout_seconds=wait_s)
        _joined = True
        self._device = spec.device

    def agree(self, steps: int) -> int:
        return int(np.max(multihost_utils.process_allgather(np.asarray(steps, np.int32))))

    def time_all_reduce(self, nbytes: int, repeats: int) -> list[float]:
        # psum of each device's fp32 row across the mesh: one all-reduce of `nbytes`, the op
        # XLA emits for the gradients of a step (shard_map makes it explicit).
        dp = DataParallel(local_device(self._device))
        row = jax.device_put(np.ones((1, max(1, nbytes // 4)), np.float32), dp.device)
        buffer = dp.globalize(row)
        reduce = jax.jit(jax.shard_map(lambda x: jax.lax.psum(x, "data"), mesh=dp.mesh, in_specs=P("data"),
                                       out_specs=P()))
        times = []
        for _ in range(repeats + 1):  # the first compiles and connects: untimed
            start = time.perf_counter()
            jax.block_until_ready(reduce(buffer))
            times.append(time.perf_counter() - start)
        return times[1:]

    def send(self, key: str, text: str) -> None:
        """base.ReportChannel through jax.distributed's key-value store: its coordination
        service runs in process 0 (rank 0, on node 0, the one that receives) until it leaves.
        The client has no public name in jax 0.10 (jax._src.distributed.global_state)."""
        _kv_client().key_value_set(CHANNEL_PREFIX + key, text, allow_overwrite=True)

    def receive(self, keys: list[str], timeout_s: float) -> dict[str, str]:
        client, found = _kv_client(), {}
        deadline = time.monotonic() + timeout_s
        for key in keys:
            left_ms = int((deadline - time.monotonic()) * 1000)
            if left_ms <= 0:
                break
            try:
                found[key] = client.blocking_key_value_get(CHANNEL_PREFIX + key, left_ms)
            except jax.errors.JaxRuntimeError:  # DEADLINE_EXCEEDED: that rank never sent
                continue
        return found

    def leave(self, failed: bool) -> None:
        if failed:
            atexit.register(_exit_now)  # runs before jax's handler (atexit is last in, first out)
            return
        jax.distributed.shutdown()

    def lost_peer(self, exc: BaseException) -> bool:
        text = str(exc)
        return "Gloo" in text and any(gone in text for gone in PEER_GONE)


def _kv_client() -> Any:
    """The process's client of jax.distributed's coordination service."""
    from jax._src import distributed

    return distributed.global_state.client


def _exit_now() -> None:
    """End a failed rank (exit status 1, as runner/child's main returns for it) without jax's
    shutdown barrier."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(1)


def joined() -> bool:
    """Whether this process joined a data-parallel trial (of any size, 1 included)."""
    return _joined


def local_device(device: str) -> jax.Device:
    """This process's own device of the trial's kind (jax.devices() lists every process's)."""
    backend = "cpu" if device.partition(":")[0] == "cpu" else None
    return jax.local_devices(backend=backend)[0]


class DataParallel:
    """Where a joined trainer's arrays live: its state replicated over every process's device,
    its batch sharded along 'data' (module docstring)."""

    def __init__(self, device: jax.Device):
        self.rank, self.world = jax.process_index(), jax.process_count()
        self.mesh = Mesh(np.array(jax.devices(device.platform)), ("data",))
        self.replicated = NamedSharding(self.mesh, P())
        self.sharded = NamedSharding(self.mesh, P("data"))
        self.device = device

    def share(self, drawn: tuple[jax.Array, ...]) -> tuple[tuple[jax.Array, ...], tuple[jax.Array, ...]]:
        """(the global batch, this rank's rows on its device) of a batch of batch_size x world
        rows: the rank's share is rows rank::world, as torch's and data/shard.py's."""
        mine = tuple(np.asarray(t)[self.rank::self.world] for t in drawn)
        global_batch = tuple(jax.make_array_from_process_local_data(self.sharded, t) for t in mine)
        return global_batch, jax.device_put(mine, self.device)

    def globalize(self, local: Any) -> Any:
        """A sharded global batch from this rank's rows (device or host arrays)."""
        return jax.tree.map(lambda t: jax.make_array_from_process_local_data(self.sharded, t), local)

    def replicate(self, state: Any) -> Any:
        """`state` (the same on every process: built from the seed) replicated on the mesh.
        jax checks that each array is equal on every process (multihost_utils.assert_equal)."""
        return jax.tree.map(self._replicate_leaf, state)

    def _replicate_leaf(self, leaf: Any) -> Any:
        if isinstance(leaf, jax.Array) and jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            # device_put takes only plain arrays to a multi-process sharding: a typed key goes as its data
            impl = jax.random.key_impl(leaf)
            return jax.random.wrap_key_data(self._replicate_leaf(jax.random.key_data(leaf)), impl=impl)
        return jax.device_put(leaf, self.replicated)

    def adopt(self, local_state: Any) -> Any:
        """A replicated global state made of this process's own copy (after no-sync steps the
        copies differ: only timing follows)."""
        return jax.tree.map(lambda a: jax.make_array_from_single_device_arrays(a.shape, self.replicated, [a]),
                            local_state)

    def jit(self, fn: Any, replicated_after: int = 0) -> Any:
        """`fn(state, batch, *rest)` jitted on global arrays: the state (donated), the
        `replicated_after` arguments after the batch (a random key) and every output
        replicated, the batch sharded along 'data'."""
        return jax.jit(fn, in_shardings=(self.replicated, self.sharded, *[self.replicated] * replicated_after),
                       out_shardings=self.replicated, donate_argnums=0)


def local(tree: Any) -> Any:
    """Each array of `tree` as this process's own copy (a view of a replicated array's local
    shard; a single-device array is itself)."""
    return jax.tree.map(lambda a: a.addressable_data(0), tree)


def fingerprint(params: list[Any]) -> tuple[str, list[float]]:
    """(sha256 over every parameter array's host bytes, in order, each array's sum)."""
    digest = hashlib.sha256()
    sums = []
    for leaf in params:
        host = np.ascontiguousarray(np.asarray(leaf.addressable_data(0)), dtype=np.float32)
        digest.update(host.tobytes())
        sums.append(float(host.sum(dtype=np.float64)))
    return digest.hexdigest(), sums
