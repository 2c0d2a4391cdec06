"""Data parallelism for torch through its own engine: a process group (gloo on the CPU, NCCL
on CUDA) joined from the launch contract (rigbench/ranks.py), DistributedDataParallel
replicas, and the figures only a replicated model has (a no-sync context, a parameter
fingerprint). The trainer asks `world()` whether it runs inside a group."""

from __future__ import annotations

import hashlib
import time
from contextlib import AbstractContextManager, ExitStack
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from rigbench.ranks import RankInfo
from rigbench.spec import TrialSpec

#: Seconds a collective may wait past the trial's timeout: the launcher's deadline, which names
#: the rank that hung, must come first; the group's own timeout only ends what outlives it.
COLLECTIVE_GRACE_S = 60.0
#: Keys of rigbench's messages in the rendezvous store.
CHANNEL_PREFIX = "rigbench/"
#: What gloo and NCCL errors say when another rank went away in the middle of a collective.
PEER_GONE = ("closed by peer", "reset by peer", "communicator was aborted", "remote process exited")


def rank_device(device: str, rank: RankInfo) -> str:
    """The device of `rank` for the trial's `device`: one GPU per rank on its node, as a
    torchrun script takes cuda:LOCAL_RANK (`cuda` and `cuda:0` both mean "the node's GPUs");
    the CPU is shared."""
    kind = device.partition(":")[0]
    return f"{kind}:{rank.local_rank}" if kind in ("cuda", "xpu") else device


class TorchCollective:
    """The rank's process group (base.Collective)."""

    def __init__(self, spec: TrialSpec, rank: RankInfo):
        device = rank_device(spec.device, rank)
        self.device = torch.device(device)
        backend = "nccl" if self.device.type == "cuda" else "gloo"
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
        # env:// reads the contract's MASTER_ADDR/PORT, RANK and WORLD_SIZE itself.
        dist.init_process_group(backend, rank=rank.rank, world_size=rank.world_size,
                                timeout=timedelta(seconds=spec.measure.timeout_s + COLLECTIVE_GRACE_S),
                                device_id=self.device if self.device.type == "cuda" else None)

    def agree(self, steps: int) -> int:
        value = torch.tensor([steps], dtype=torch.int64, device=self.device)
        dist.all_reduce(value, op=dist.ReduceOp.MAX)
        return int(value.item())

    def time_all_reduce(self, nbytes: int, repeats: int) -> list[float]:
        buffer = torch.ones(max(1, nbytes // 4), dtype=torch.float32, device=self.device)
        times = []
        for _ in range(repeats + 1):  # the first sets up the connections and buffers: untimed
            start = time.perf_counter()
            dist.all_reduce(buffer)
            if self.device.type == "cuda":
                torch.cuda.synchronize(self.device)
            times.append(time.perf_counter() - start)
        return times[1:]

    def send(self, key: str, text: str) -> None:
        """base.ReportChannel through the rendezvous store (torch's elastic agent keeps it up
        on the host node while its ranks run)."""
        _store().set(f"{CHANNEL_PREFIX}{key}", text)

    def receive(self, keys: list[str], timeout_s: float) -> dict[str, str]:
        store, found = _store(), {}
        deadline = time.monotonic() + timeout_s
        for key in keys:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                store.wait([f"{CHANNEL_PREFIX}{key}"], timedelta(seconds=left))
            except (RuntimeError, dist.DistError):  # not sent in time: that rank is missing
                continue
            found[key] = store.get(f"{CHANNEL_PREFIX}{key}").decode("utf-8")
        return found

    def leave(self, failed: bool) -> None:
        if dist.is_initialized():  # destroying the group waits for no peer
            dist.destroy_process_group()

    def lost_peer(self, exc: BaseException) -> bool:
        # gloo raises a plain RuntimeError "... Connection closed by peer [addr]:port ..." (or
        # "reset by peer"); NCCL says its communicator was aborted or a remote process exited.
        return isinstance(exc, RuntimeError) and any(text in str(exc) for text in PEER_GONE)


def joined() -> bool:
    """Whether this process is a rank of a process group (of any size, 1 included)."""
    return dist.is_available() and dist.is_initialized()


def _store() -> dist.Store:
    """The process group's store (the rendezvous store under torch's elastic agent)."""
    return dist.distributed_c10d._get_default_store()


def world() -> tuple[int, int]:
    """(rank, world size) of this process: (0, 1) outside a process group."""
    if joined():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def replicate(module: nn.Module, device: torch.device) -> DistributedDataParallel:
    """`module` as a DDP replica: rank 0's parameters and buffers broadcast to every rank,
    gradients averaged over the ranks in the backward pass."""
    ids = [device.index] if device.type == "cuda" else None
    return DistributedDataParallel(module, device_ids=ids)


def no_sync(replicas: list[DistributedDataParallel]) -> AbstractContextManager[Any]:
    """Every replica's no_sync() at once (a GAN has one replica per part)."""
    stack = ExitStack()
    for replica in replicas:
        stack.enter_context(replica.no_sync())
    return stack


def fingerprint(module: nn.Module) -> tuple[str, list[float]]:
    """(sha256 over every parameter's bytes, in order, each parameter's sum) of `module`."""
    digest = hashlib.sha256()
    sums = []
    with torch.no_grad():
        for param in module.parameters():
            host = param.detach().float().cpu().contiguous()
            digest.update(host.numpy().tobytes())
            sums.append(float(host.double().sum()))
    return digest.hexdigest(), sums
