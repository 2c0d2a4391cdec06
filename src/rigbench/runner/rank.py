"""A data-parallel rank's side of a trial, in its child process (runner/child.py calls it when
spec.world_size > 1).

The rank joins its process group through the framework's own engine (`adapter.join`), runs
the speed protocol with agreed step counts (`measure(..., agree=collective.agree)`), and adds
what only a rank knows: its host, its own peak resident memory and CPU time over its timed
window, the parameters' fingerprint after the timed steps (identical on every rank if the
replicas stayed in sync), the same number of steps timed again without gradient
synchronisation (the communication share is the difference; analysis/ranks.py), and, before
the model is built, a collective check: all-reduce times at a few message sizes and at the
model's gradient bytes (analysis/ranks.py makes nccl-tests' bus bandwidth of them).

While it runs, a heartbeat thread rewrites runner/rank_files.progress_path with the steps it
has started: when a trial passes its timeout, the launcher names the rank that stopped
(runner/launchers/agent.py). Everything goes to files of the rank's own, never only through
a collective, so a dead rank leaves the others' records.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import psutil

from rigbench.child_report import ChildReport
from rigbench.errors import UnsupportedError
from rigbench.frameworks.base import (
    Collective,
    DataParallelAdapter,
    DataParallelTrainer,
    FrameworkAdapter,
    ReportChannel,
    no_data_parallel_reason,
)
from rigbench.frameworks.host_timer import expect_step
from rigbench.ranks import NodeLaunch, RankInfo
from rigbench.runner import rank_files
from rigbench.runner.epoch_lines import say_phase
from rigbench.runner.protocol import measure
from rigbench.spec import TrialSpec
from rigbench.workloads import Workload

#: Message sizes of the pre-run all-reduce check (bytes), besides the model's gradients: a
#: latency-bound one and two toward bandwidth (nccl-tests sweeps the same way).
ALLREDUCE_SIZES = (4 * 2**10, 2**20, 16 * 2**20)
#: Timed all-reduces per size (their median is kept).
ALLREDUCE_REPEATS = 5
#: Most steps timed again without gradient synchronisation (as many as were timed, up to this).
NOSYNC_STEPS_MAX = 50


class Heartbeat:
    """A daemon thread rewriting the rank's progress file every rank_files.HEARTBEAT_S: its pid, the
    steps it has started and the time. A rank whose heartbeat stops was stopped or froze
    with the interpreter; one whose count lags the others' is the one they wait for."""

    def __init__(self, path: Path):
        self.path, self.steps = path, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rigbench-heartbeat", daemon=True)

    def _run(self) -> None:
        while True:
            beat = {"pid": os.getpid(), "steps": self.steps, "at": time.time()}
            part = self.path.with_suffix(".part")
            with contextlib.suppress(OSError):  # a full disk must not end the trial
                part.write_text(json.dumps(beat), encoding="utf-8")
                os.replace(part, self.path)
            if self._stop.wait(rank_files.HEARTBEAT_S):
                return

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def counting(self, trainer: Any) -> Any:
        """`trainer` with its steps counted (speed protocol and training loop alike)."""
        return _Counted(trainer, self)


class _Counted:
    """A trainer whose `step` and `train_step` count themselves on the heartbeat."""

    def __init__(self, trainer: Any, beat: Heartbeat):
        self._trainer, self._beat = trainer, beat

    def __getattr__(self, name: str) -> Any:
        return getattr(self._trainer, name)

    def step(self) -> Any:
        self._beat.steps += 1
        return self._trainer.step()

    def train_step(self, batch: Any) -> Any:
        self._beat.steps += 1
        return self._trainer.train_step(batch)


def redirect_stderr(folder: Path, rank: int) -> None:
    """Send this process's stderr (Python's and native libraries') to the rank's own file, so
    a crash's tail is told apart from the other ranks'."""
    fd = os.open(rank_files.stderr_path(folder, rank), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    sys.stderr.flush()
    os.dup2(fd, 2)
    os.close(fd)


@contextlib.contextmanager
def joined(adapter: FrameworkAdapter, spec: TrialSpec, rank: RankInfo, report: ChildReport) -> Iterator[Collective]:
    """The rank inside its process group for the block, leaving it as failed unless `report`
    is ok by then (runner/child classifies the trial inside the block); UnsupportedError for a
    framework without data parallelism (base.DataParallelAdapter)."""
    if not hasattr(adapter, "join"):
        raise UnsupportedError(f"{adapter.NAME} cannot train data-parallel: {no_data_parallel_reason(adapter)}")
    collective = cast(DataParallelAdapter, adapter).join(spec, rank)
    try:
        yield collective
    finally:
        collective.leave(failed=report.status != "ok")


def describe_rank(report: ChildReport, rank: RankInfo) -> None:
    """The rank's identity and its own memory peak (taken last: the peak of the whole run)."""
    report.rank, report.world_size, report.host = rank.rank, rank.world_size, socket.gethostname()
    report.rss_peak_bytes = peak_rss_bytes()


def peak_rss_bytes() -> int | None:
    """This process's peak resident memory, from the OS's own accounting (None where it keeps none)."""
    try:
        import resource  # POSIX only
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)  # macOS: bytes; Linux: KiB


def measure_rank(build: Callable[[TrialSpec, Workload], Any], spec: TrialSpec, workload: Workload,
                 report: ChildReport, collective: Collective, beat: Heartbeat) -> Any:
    """The speed protocol as one rank of a synchronous data-parallel trial (module docstring);
    fills `report` and returns the trainer."""
    say_phase("all-reduce check")
    report.allreduce_s = check_all_reduce(collective, 4 * (report.params or 0))
    say_phase("building the model")
    trainer = cast(DataParallelTrainer, build(spec, workload))
    me = psutil.Process()
    cpu_before = sum(me.cpu_times()[:2])
    m = measure(beat.counting(trainer), spec.measure, agree=collective.agree, on_phase=say_phase)
    cpu_used = sum(me.cpu_times()[:2]) - cpu_before
    m.record(report)
    report.allocator_peak_bytes = trainer.allocator_peak_bytes()
    # CPU time over the whole protocol (warm-up included) per second of it: the rank's
    # utilisation, on the tracker's scale (100 = every logical core busy).
    wall = m.warmup_s + (m.measure_end - m.measure_start)
    report.cpu_util_pct = 100.0 * cpu_used / wall / (psutil.cpu_count() or 1) if wall > 0 else None
    report.param_digest, report.param_sums = trainer.parameter_fingerprint()
    say_phase("the same steps without gradient synchronisation (the communication's share)")
    report.nosync_step_times_s = _nosync_steps(trainer, min(len(m.step_times_s), NOSYNC_STEPS_MAX),
                                                statistics.median(m.step_times_s))
    return trainer


def _nosync_steps(trainer: DataParallelTrainer, count: int, expected_s: float) -> list[float]:
    """`count` steps timed without gradient synchronisation, after one untimed (the replicas
    drift apart from here on: the fingerprint was taken before). No collective runs inside,
    so the ranks need not agree on the count."""
    with trainer.without_gradient_sync():
        trainer.step()
        trainer.synchronize()
        timer = trainer.step_timer()
        expect_step(timer, expected_s)
        for _ in range(count):
            timer.start()
            trainer.step()
            timer.stop()
        trainer.synchronize()
    return timer.elapsed_s()


def check_all_reduce(collective: Collective, gradient_bytes: int) -> list[tuple[int, float]]:
    """[bytes, median seconds] of all-reduces at ALLREDUCE_SIZES and at the model's fp32
    gradient bytes (what each step synchronises), run by every rank before the model is built
    (the same sizes on every rank: each call is a collective)."""
    sizes = sorted({*ALLREDUCE_SIZES, gradient_bytes} - {0})
    return [(size, statistics.median(collective.time_all_reduce(size, ALLREDUCE_REPEATS))) for size in sizes]


#: Seconds node 0's gathering rank waits for the other ranks' reports; when its own trial
#: failed, FAILED_GATHER_S: a peer that failed with it sends at once, and one that died never does.
GATHER_TIMEOUT_S, FAILED_GATHER_S = 60.0, 5.0


def send_to_node_zero(collective: Collective, spec: TrialSpec, me: RankInfo, folder: Path,
                      report: ChildReport) -> None:
    """A multi-node trial's reports meet on node 0, which stores the trial: every rank sends its
    final report over the collective's channel (base.ReportChannel), and node 0's local rank 0
    writes each report that came into its own trial folder, as if that rank had run there. A
    rank that died sends nothing: node 0's launcher then says its report never came."""
    if not hasattr(collective, "send"):
        return
    channel = cast(ReportChannel, collective)
    channel.send(f"report/{me.rank}", report.model_dump_json())
    if me.local_rank != 0 or NodeLaunch.from_env().node_rank != 0:
        return
    others = [f"report/{rank}" for rank in range(spec.world_size) if rank != me.rank]
    wait_s = GATHER_TIMEOUT_S if report.status == "ok" else FAILED_GATHER_S
    for key, text in channel.receive(others, wait_s).items():
        path = rank_files.report_path(folder, int(key.rpartition("/")[2]))
        if not path.exists():  # a local rank writes its own
            part = path.with_suffix(".part")
            part.write_text(text, encoding="utf-8")
            os.replace(part, path)
