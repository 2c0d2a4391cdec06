"""Entry point of a trial's child process: `python -m rigbench.runner.child SPEC REPORT`.

Reads a TrialSpec (JSON file), loads the framework adapter and applies the environment it
asks for before the framework itself is imported, lets it size its thread pools (`prepare`),
(a data-parallel rank then joins its group: before anything may start the framework's runtime),
imports the adapter's preloads (a warm trial's server did), counts the model, applies the
memory limit, then runs the speed protocol on the adapter's trainer, or the shared training
loop or lr range test (frameworks/driver/), and writes a ChildReport (JSON file).
Every failure it can see becomes a status in the report; failures it cannot see (a signal,
the kernel's OOM killer, a hang) are classified by the parent from the exit.
"""

from __future__ import annotations

import contextlib
import faulthandler
import importlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from rigbench.child_report import ChildReport
from rigbench.errors import UnsupportedError
from rigbench.frameworks import load_adapter
from rigbench.frameworks.base import modules_to_preload
from rigbench.frameworks.driver import lr_range, training
from rigbench.frameworks.run_records import TrainingInterrupted, TrainRun
from rigbench.ranks import RankInfo
from rigbench.runner import rank_files
from rigbench.runner.count_cache import cached_count, cached_traffic
from rigbench.runner.epoch_lines import announced, epoch_line, lr_step_phase, say_phase
from rigbench.runner.failure_status import classify, loaded_adapter
from rigbench.runner.memory_cap import apply_memory_limit, capped_peak_bytes
from rigbench.runner.protocol import measure
from rigbench.runner.signal_names import STOPS
from rigbench.spec import EpochRecord, LrFindOptions, TrainOptions, TrialSpec
from rigbench.workloads import Workload, get_workload, resolved_options, shaped
from rigbench.workloads.flops import train_flops_per_sample

if TYPE_CHECKING:
    from rigbench.data import LoadedData
    from rigbench.frameworks.base import FrameworkAdapter

#: The argument that makes the child a rank of a data-parallel trial (runner/torchrun_agent.py).
RANK_FOLDER_FLAG = "--rank-folder"


def traffic_per_sample(adapter: FrameworkAdapter, workload: Workload, options: dict[str, Any],
                       batch_size: int, precision: str = "fp32") -> float | None:
    """Estimated bytes read and written by one step's forward and backward passes at this
    batch size and precision, per sample (frameworks/torch/traffic.py). An estimate for the
    roofline: if it cannot be made, the trial's measurement still stands, without it."""
    try:
        counted = cached_traffic(adapter, workload, options, precision)
    except Exception as exc:  # noqa: BLE001 - never lose a measurement to an estimate
        print(f"rigbench: memory-traffic estimate failed: {exc}", file=sys.stderr)
        return None
    if counted is None:
        return None
    per_step, per_sample = counted
    return (per_step + per_sample * batch_size) / batch_size


def run_trial(spec: TrialSpec, folder: Path | None = None) -> ChildReport:
    """Run one trial in this process and describe the outcome; never raises. A data-parallel
    rank (given its trial's `folder`) reads its place from the launch contract (rigbench/ranks.py)
    and keeps its heartbeat in the trial's `folder` (runner/rank.py)."""
    report = ChildReport(status="crash")
    adapter: FrameworkAdapter | None = None
    finish: list[Callable[[ChildReport], None]] = []  # run with the final report, before leaving
    try:
        with contextlib.ExitStack() as stack:
            try:
                adapter = _run(spec, folder, report, stack, finish)
                _describe_compilation(adapter, spec, report)
                report.status = "ok"
            except BaseException as exc:  # noqa: BLE001 - classified here, inside the stack
                classify(exc, report, adapter or loaded_adapter(spec), spec.measure.memory_limit_bytes)
            for step in finish:
                step(report)
    except BaseException as exc:  # noqa: BLE001 - leaving the group or the heartbeat failed
        if report.status == "ok":
            classify(exc, report, adapter, spec.measure.memory_limit_bytes)
    return report


def _run(spec: TrialSpec, folder: Path | None, report: ChildReport, stack: contextlib.ExitStack,
         finish: list[Callable[[ChildReport], None]]) -> FrameworkAdapter:
    """The trial's work (run_trial's body); returns the adapter it loaded. `finish` takes what
    must run once the report is final, with the stack still open (a rank's group still joined)."""
    # shaped: the batch shape a GPT's context or a ViT's image size option chooses
    workload = shaped(get_workload(spec.workload), spec.workload_options)
    adapter = load_adapter(spec.framework)  # the adapter module only, not the framework
    os.environ.update(adapter.environment(spec))  # read once, when the framework starts
    adapter.prepare(spec.threads)  # thread pools sized once, before counting can start them
    if folder is not None:  # a rank counts once joined: joining must come before the runtime starts
        _as_rank(adapter, spec, workload, report, folder, stack, finish)
        return adapter
    say_phase(f"starting {spec.framework}")  # its import, where no warm-start server did it, and its runtime
    _count(adapter, spec, workload, report)
    if spec.lr_find is not None:
        _lr_find(adapter, spec, workload, report)
    elif spec.train is not None:
        _train(adapter, spec, workload, report)
    else:
        _measure(adapter, spec, workload, report)
    return adapter


def _count(adapter: FrameworkAdapter, spec: TrialSpec, workload: Workload, report: ChildReport) -> None:
    """The adapter's preloads imported (a warm trial has them from its server: both start the
    cap from the same baseline), the model counted (which may start the framework's runtime),
    then the memory cap set."""
    for module in modules_to_preload(adapter):
        importlib.import_module(module)
    options = resolved_options(workload, spec.workload_options)
    report.params, _ = cached_count(adapter, workload, options)
    # The analytic figure, the same for every framework (MFU and the roofline use it);
    # the adapter's own FLOP count only cross-checks it (tests/contract/).
    report.flops_per_sample = train_flops_per_sample(workload, options)
    report.bytes_per_sample = traffic_per_sample(adapter, workload, options, spec.batch_size, spec.precision)
    if report.bytes_per_sample is not None:  # stored with it: results outlive the estimator
        report.bytes_estimate_revision = getattr(adapter, "TRAFFIC_REVISION", None)
    if spec.measure.memory_limit_bytes:
        apply_memory_limit(spec.measure.memory_limit_bytes)


def _as_rank(adapter: FrameworkAdapter, spec: TrialSpec, workload: Workload, report: ChildReport,
             folder: Path, stack: contextlib.ExitStack, finish: list[Callable[[ChildReport], None]]) -> None:
    """One rank of a data-parallel trial (runner/rank.py): joined to its group and beating
    until the block's end; its own figures are in the report whatever ends the trial."""
    from rigbench.runner import rank as rank_side

    me = RankInfo.from_env()
    rank_side.describe_rank(report, me)
    finish.append(lambda final: rank_side.describe_rank(final, me))  # again at the end: the memory peak
    beat = stack.enter_context(rank_side.Heartbeat(rank_files.progress_path(folder, me.rank)))
    say_phase(f"starting {spec.framework}, joining the group of {spec.world_size} processes")
    collective = stack.enter_context(rank_side.joined(adapter, spec, me, report))
    _count(adapter, spec, workload, report)
    if spec.nodes > 1:  # the report reaches node 0, which stores the trial
        finish.append(lambda final: rank_side.send_to_node_zero(collective, spec, me, folder, final))
    if spec.lr_find is not None:
        raise UnsupportedError("an lr range test runs in one process: drop --processes")
    try:
        if spec.train is not None:
            _train(adapter, spec, workload, report, lambda s, w: beat.counting(adapter.build(s, w)), me.rank)
            return
        trainer = rank_side.measure_rank(adapter.build, spec, workload, report, collective, beat)
    except BaseException as exc:
        report.collateral = collective.lost_peer(exc)  # another rank's failure ended this one
        raise
    _describe_software(adapter, spec, workload, report)
    report.device_name = trainer.device_name


def _describe_software(adapter: FrameworkAdapter, spec: TrialSpec, workload: Workload, report: ChildReport) -> None:
    """The framework's versions, the threads it runs (as it reports them once started,
    base.SOFTWARE_KEYS) and a transformer's attention kernel. Every adapter honours --threads exactly, also above the cores; one
    that ran another count would be `unsupported` with both counts, never a trial labelled
    with one count that ran another."""
    report.software = adapter.software()
    report.threads = report.software.get("num_threads")
    if spec.threads is not None and report.threads is not None and report.threads != spec.threads:
        raise UnsupportedError(f"--threads {spec.threads}: {spec.framework} runs {report.threads} threads "
                               "here, not the count asked for")
    # a transformer's attention kernel (base.FrameworkAdapter.attention), beside the versions:
    # results that ran another kernel differ in software, as compare says
    kernel = adapter.attention(spec, workload) if hasattr(adapter, "attention") else None
    if kernel is not None:
        report.software["attention"] = kernel


def _describe_compilation(adapter: FrameworkAdapter, spec: TrialSpec, report: ChildReport) -> None:
    """What the graph compiler did (base.FrameworkAdapter.compilation), read once the steps
    have run: a compiled trial whose graphs broke or skipped CUDA graphs says so beside its speed.
    A description that fails costs the trial nothing but the description."""
    if not spec.compiled or not hasattr(adapter, "compilation"):
        return
    try:
        text = adapter.compilation(spec)
    except Exception as exc:  # noqa: BLE001 - never lose a measurement to its description
        print(f"rigbench: describing the compilation failed: {exc}", file=sys.stderr)
        return
    if text is not None:
        report.software["compile"] = text


def _measure(adapter: FrameworkAdapter, spec: TrialSpec, workload: Workload, report: ChildReport) -> None:
    """The speed protocol on a resident synthetic batch (`rigbench run`)."""
    say_phase("building the model")
    trainer = adapter.build(spec, workload)
    _describe_software(adapter, spec, workload, report)
    report.device_name = trainer.device_name
    m = measure(trainer, spec.measure, on_phase=say_phase)
    m.record(report)
    report.allocator_peak_bytes = trainer.allocator_peak_bytes()
    report.capped_peak_bytes = capped_peak_bytes()


def _load_data(spec: TrialSpec, opts: TrainOptions | LrFindOptions) -> LoadedData:
    """The data set `opts` names, in the shape of the spec's workload options; the parent has
    already fetched and verified its files, here they are only read."""
    from rigbench.data import load_for_workload

    say_phase(f"loading {opts.dataset}")
    return load_for_workload(spec.workload, opts.dataset, data_dir=opts.data_dir, download=False,
                             options=spec.workload_options)


def _describe(adapter: FrameworkAdapter, spec: TrialSpec, workload: Workload, report: ChildReport, device_name: str,
              train_samples: int) -> None:
    _describe_software(adapter, spec, workload, report)
    report.device_name, report.train_samples = device_name, train_samples


def _train(adapter: FrameworkAdapter, spec: TrialSpec, workload: Workload, report: ChildReport,
           build: training.Build | None = None, rank: int = 0) -> None:
    """Epochs on a real data set with held-out evaluation (`rigbench train`), by the shared
    loop; a data-parallel rank trains on its share of each epoch (its `build` counts steps)."""
    assert spec.train is not None
    data = _load_data(spec, spec.train)
    if data.corpus is not None:  # text: the loss of a model that ignores context, to beat
        from rigbench.data import unigram_entropy

        report.baseline_loss = unigram_entropy(data.corpus.train).nats
    try:
        run = training.train(announced(build or adapter.build, f"epoch 1/{spec.train.epochs}"), spec, workload, data,
                             on_epoch=_epoch_line, rank=rank)
    except TrainingInterrupted as stop:  # the finished epochs go in the report, then it is classified
        ended = (stop.run.epochs[-1].ended_at if stop.run.epochs else None) or time.time()
        _describe_training(adapter, spec, workload, report, stop.run, ended)
        raise
    _describe_training(adapter, spec, workload, report, run, time.time())


def _epoch_line(record: EpochRecord) -> None:
    """One line per finished epoch on the trial's stderr file: the parent's progress reads it
    (runner/epoch_lines.py), and so does whoever looks at a run that is stuck or interrupted."""
    print(epoch_line(record), file=sys.stderr, flush=True)


def _describe_training(adapter: FrameworkAdapter, spec: TrialSpec, workload: Workload, report: ChildReport,
                       run: TrainRun, ended_at: float) -> None:
    # A training run's window is its epochs: building the model and placing the data (seconds
    # of CUDA start-up) would otherwise count in its utilisation and energy.
    report.measure_start, report.measure_end = run.started_at, ended_at
    _describe(adapter, spec, workload, report, run.device_name, run.train_samples)
    report.epochs, report.loss_curve, report.test_samples = run.epochs, run.loss_curve, run.test_samples


def exit_with_parent(poll_s: float = 0.5) -> None:
    """End this process when the parent dies (e.g. SIGKILL of `rigbench sweep`).

    The child runs in its own session so that Ctrl-C reaches only the parent; the flip side
    is that nothing else would stop an orphaned trial from running on, competing with the
    resumed sweep for the machine. A daemon thread notices the re-parenting and exits. Windows
    re-parents nothing (getppid keeps naming the dead parent): there it asks psutil whether the
    parent still runs (is_running also tells a new process that took its pid).
    """
    parent = int(os.environ.get("RIGBENCH_PARENT_PID") or os.getppid())
    watched = None
    if os.name != "posix":
        import psutil

        try:
            watched = psutil.Process(parent)
        except psutil.NoSuchProcess:  # died while this process started
            os._exit(3)

    def watch() -> None:
        while watched.is_running() if watched else os.getppid() == parent:
            time.sleep(poll_s)
        os._exit(3)

    threading.Thread(target=watch, name="rigbench-parent-watch", daemon=True).start()


def _lr_find(adapter: FrameworkAdapter, spec: TrialSpec, workload: Workload, report: ChildReport) -> None:
    """A learning-rate range test on a real data set (`rigbench lr-find`), by the shared driver."""
    assert spec.lr_find is not None
    data = _load_data(spec, spec.lr_find)
    report.measure_start = time.time()
    found = lr_range.lr_find(announced(adapter.build, f"step 1/{spec.lr_find.steps}"), spec, workload, data,
                             on_step=lr_step_phase(spec.lr_find.steps))
    report.measure_end = time.time()
    _describe(adapter, spec, workload, report, found.device_name, found.train_samples)
    report.lr_curve = found.lr_curve


def _interrupt_once(_signum: int, _frame: FrameType | None) -> None:
    """Stop a training run (KeyboardInterrupt: its finished epochs are reported), then ignore
    the next stop: SIGTERM to every process of the run reaches this one and its launcher, which
    then asks with SIGINT, and that second interrupt, landing as the report was being made
    (its loader's workers shutting down), lost every finished epoch. Ignored by a handler that
    does nothing, not SIG_IGN: Python raises OSError ("Signal 15 ignored due to race
    condition") for a signal already pending when its handler became SIG_IGN."""
    for sig in STOPS:
        signal.signal(sig, _ignored)
    raise KeyboardInterrupt


def _ignored(_signum: int, _frame: FrameType | None) -> None:
    """A stop that came after the first (_interrupt_once)."""


def main(argv: list[str]) -> int:
    """`child SPEC REPORT` (one process), or `child SPEC --rank-folder FOLDER` for a rank of a
    data-parallel trial (of any world size, 1 included): its files are in the trial's folder
    (runner/rank_files.py), named by its RANK. A rank that failed exits with 1 after writing
    its report, so that the launch engine stops the others instead of leaving them in an
    all-reduce."""
    exit_with_parent()
    # SIGINT is the launcher's "stop and report your finished epochs" (launchers/steps.
    # interrupt_for_report). A process started with SIGINT ignored (a script's `rigbench train
    # ... &`, nohup) passes the ignore on, and Python then installs no KeyboardInterrupt: a
    # training run at its timeout lost every epoch it had finished.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    spec_path, *rest = argv
    with open(spec_path, encoding="utf-8") as fh:
        spec = TrialSpec.model_validate_json(fh.read())
    folder = Path(rest[1]) if rest[0] == RANK_FOLDER_FLAG else None
    target = rest[-1]
    if spec.train is not None and folder is None:
        # SIGTERM and SIGHUP stop a training run as SIGINT does, with its finished epochs
        # reported: a service manager stopping rigbench (systemd: every process of its cgroup)
        # or a closed terminal reached this process before its launcher could ask, and every
        # finished epoch was lost. A rank's SIGTERM stays its agent's kill (rank_outcome.py).
        for sig in STOPS:
            signal.signal(sig, _interrupt_once)
    if folder is not None:
        from rigbench.runner.rank import redirect_stderr

        rank = int(os.environ.get("RANK", "0"))
        redirect_stderr(folder, rank)
        target = str(rank_files.report_path(folder, rank))
    # A native crash (SIGSEGV, SIGABRT, SIGBUS...) prints every Python thread's stack to stderr,
    # whose tail the parent keeps as the crash's error: the Python line that called into the
    # framework, where there was one (launchers/steps.stderr_tail drops the module list).
    faulthandler.enable(all_threads=True)
    report = run_trial(spec, folder)
    tmp = target + ".part"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(report.model_dump_json())
    os.replace(tmp, target)  # the parent never sees a half-written report
    return 1 if folder is not None and report.status != "ok" else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
