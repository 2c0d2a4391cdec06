"""Plans: the TrialSpecs of a run (`plan_run`) and of a training (`plan_train`, after
`prepare_data` has checked the data set). Bad input is a UsageError, before anything runs."""

from __future__ import annotations

import errno
import json
import os
import socket
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rigbench.compile_modes import CompileMode, compile_mode
from rigbench.errors import UsageError
from rigbench.experiments.devices import chosen_devices
from rigbench.frameworks import check_framework
from rigbench.hw.cpu import cpu_identity, native_bf16
from rigbench.ranks import NodeLaunch
from rigbench.runner.session import check_platform, check_ranks_fit
from rigbench.spec import EnergyMode, MeasureOptions, Precision, TrainOptions, TrialSpec
from rigbench.workloads import WORKLOADS, Workload, parse_workload_ref

if TYPE_CHECKING:  # rigbench.data is imported where a data set is used (numpy)
    from rigbench.data.cache import FileProgress


def plan_run(
    workloads: Sequence[str] = (),
    devices: Sequence[str] = (),
    batch_sizes: Sequence[int] = (),
    precision: Precision = "fp32",
    threads: int | None = None,
    frameworks: str | Sequence[str] = "torch",
    steps: int | None = None,
    seconds: float | None = None,
    quick: bool = False,
    memory_limit_bytes: int | None = None,
    timeout_s: float | None = None,
    lr: float | None = None,
    compile: CompileMode | bool = "off",
    channels_last: bool = False,
    energy: EnergyMode = "measure",
    processes: int = 1,
    nodes: int = 1,
    data_parallel: bool = False,
) -> list[TrialSpec]:
    """The trials of a run: every workload x framework x device x batch size. Empty lists
    mean every workload, every device each framework can use here, and each workload's
    default batch (a small one with `quick`, the same on every device and framework so
    speed-ups compare). `processes` > 1 makes each trial data-parallel over that many ranks,
    the batch being each rank's; `nodes` > 1 spreads them over that many machines, `processes`
    on each (world size processes x nodes); `data_parallel` runs even one process through the
    framework's data-parallel launcher and wrapper (its own cost). `compile`: off or a torch.compile mode (spec.CompileMode;
    True is "default"). Raises UsageError for bad input."""
    if processes < 1:
        raise UsageError("--processes must be at least 1")
    if nodes < 1:
        raise UsageError("--nnodes must be at least 1")
    names = list(dict.fromkeys([frameworks] if isinstance(frameworks, str) else frameworks)) or ["torch"]
    for name in names:
        check_framework(name)
    refs: list[tuple[Workload, dict[str, Any]]] = [parse_workload_ref(w) for w in workloads] or [
        (w, {}) for w in WORKLOADS.values() if w.default_run
    ]
    # a workload listed twice (same options) is one trial, as in a sweep; --repeat repeats
    refs = list({(w.name, json.dumps(o, sort_keys=True)): (w, o) for w, o in refs}.values())
    if any(b < 1 for b in batch_sizes):
        raise UsageError("batch sizes must be at least 1")
    overrides: dict[str, Any] = {"energy": energy}
    if steps is not None:
        overrides["min_steps"] = steps
    if seconds is not None:
        overrides["min_seconds"] = seconds
    if timeout_s is not None:
        overrides["timeout_s"] = timeout_s
    if memory_limit_bytes is not None:
        overrides["memory_limit_bytes"] = memory_limit_bytes
    try:
        measure = MeasureOptions.quick(**overrides) if quick else MeasureOptions(**overrides)
    except ValueError as exc:
        raise UsageError(validation_message(exc)) from None
    if measure.warmup_seconds + measure.min_seconds >= measure.timeout_s:  # every trial would time out
        raise UsageError(f"--seconds {measure.min_seconds:g} (after {measure.warmup_seconds:g} s of warm-up) cannot "
                         f"finish within --timeout {measure.timeout_s:g}: raise --timeout or lower --seconds")
    # After the checks that need no framework: asking one for its devices may start it
    chosen = {name: chosen_devices(name, devices, default=None) for name in names}
    specs = []
    for workload, options in refs:
        default = workload.quick_batch if quick else workload.default_batch
        for framework in names:
            for device in dict.fromkeys(chosen[framework]):
                for batch in dict.fromkeys(batch_sizes) or [default]:  # a batch listed twice is one trial
                    specs.append(TrialSpec(
                        workload=workload.name, workload_options=options, framework=framework,
                        device=device, batch_size=batch, precision=precision, threads=threads,
                        lr=lr, measure=measure, compile=compile_mode(compile), channels_last=channels_last,
                        world_size=processes * nodes, nodes=nodes, data_parallel=data_parallel,
                    ))
    check_ranks_fit(specs)  # here too: refused before `run` says how many threads each rank gets
    check_platform(specs)
    check_rank_devices(specs)
    check_tf32_devices(specs)
    check_threads(specs)
    return specs


def tf32_off_cuda(device: str) -> str:
    """The one line that refuses tf32 on `device`, a device other than CUDA."""
    return f"--precision tf32 is an NVIDIA GPU format (Ampere and later), not on {device}: use fp32 there, or -d cuda:N"


def check_tf32_devices(specs: Sequence[TrialSpec]) -> None:
    """UsageError where tf32 meets a device that is not CUDA and the trials asked for could only
    end `unsupported` there (every adapter refuses tf32 off CUDA), known once the devices are,
    before any trial: a device all of whose trials are tf32 (`run`'s one precision, a sweep that
    lists tf32 alone), or tf32 trials with no CUDA device among them (`-d cpu`, a machine
    without one). A sweep that lists tf32 beside other precisions over CUDA and other devices
    keeps its product (docs/STRATEGY.md): its points of tf32 off CUDA end `unsupported`, named."""
    tf32 = dict.fromkeys(s.device for s in specs if s.precision == "tf32")  # in the trials' order
    cuda = any(s.device.startswith("cuda") for s in specs)
    for device in (d for d in tf32 if not d.startswith("cuda")):
        if not cuda or all(s.precision == "tf32" for s in specs if s.device == device):
            raise UsageError(tf32_off_cuda(device))


#: More CPU threads than any machine has logical CPUs: a typo, not an oversubscription test
#: (torch's thread pool died of a segfault at 100,000 on the 2-core VM, past its process limit,
#: stored as a crash; 4,096 ran there).
MAX_THREADS = 4096


def emulated_bf16(specs: Sequence[TrialSpec]) -> str | None:
    """A warning where trials of `specs` run bf16 on a CPU without native bfloat16 (emulated: mlp
    ran at 8.5 samples/s in bf16 against 940 in fp32 on an AVX2-only VM, hw/cpu.native_bf16);
    None where none does, or the CPU's flags are unknown. `scaling` plans bf16 by default."""
    n = sum(s.precision == "bf16" and s.device == "cpu" for s in specs)
    if not n or native_bf16(cpu_identity()["flags"]) is not False:
        return None
    return (f"bf16 on cpu: this CPU has no native bfloat16 (no avx512_bf16, amx or Arm bf16 flag), so {n} bf16 "
            f"trial{'s' if n != 1 else ''} run{'' if n != 1 else 's'} emulated, far slower than fp32 (mlp: 8.5 "
            "against 940 samples/s on an AVX2-only VM), each up to its --timeout; leave bf16 out unless that is "
            "what you mean to measure")


def check_thread_count(threads: int | None) -> None:
    """UsageError for a thread count over MAX_THREADS, before any trial. A bound on input only:
    the stored spec keeps no such bound, so a database holding one still reads."""
    if threads is not None and threads > MAX_THREADS:
        raise UsageError(f"--threads {threads} is more than any machine's logical CPUs: give at most "
                         f"{MAX_THREADS} (this machine has {os.cpu_count() or 1})")


def check_threads(specs: Sequence[TrialSpec]) -> None:
    """check_thread_count for every trial planned."""
    for spec in specs:
        check_thread_count(spec.threads)


def check_rank_devices(specs: Sequence[TrialSpec]) -> None:
    """A data-parallel trial's ranks take the node's GPUs from the first, one each (rank k on
    `cuda:k`, as a torchrun script does, in every framework), so `-d cuda:1` would train on
    cuda:0 while rigbench watched cuda:1: refused, with how to pick the GPUs instead. An Apple
    GPU or a DirectML device has no collective backend (gloo and NCCL reduce CPU and CUDA
    tensors): every such trial would crash at its first all-reduce, so it is refused too."""
    for spec in specs:
        kind, _, index = spec.device.partition(":")
        if spec.is_data_parallel and kind in ("mps", "dml"):
            raise UsageError(f"-d {spec.device} with data-parallel ranks: no collective backend reduces {kind} "
                             "tensors (gloo and NCCL take CPU and CUDA ones); run data-parallel on cpu or cuda")
        if spec.is_data_parallel and index not in ("", "0") and kind != "cpu":
            raise UsageError(f"-d {spec.device} with data-parallel ranks: rank k trains on {kind}:k, one GPU each "
                             f"from {kind}:0; give -d {kind} and choose the GPUs with CUDA_VISIBLE_DEVICES")


#: The most rounds of repeats a command plans: beyond, one trial's figure moves nothing, and
#: planning 10^8 rounds was a silent hang before the first trial.
MAX_ROUNDS = 1000


def check_rounds(rounds: int, option: str = "--repeat") -> None:
    """A count of rounds is 1 to MAX_ROUNDS (checked before any device is asked)."""
    if not 1 <= rounds <= MAX_ROUNDS:
        raise UsageError(f"{option} takes a count from 1 to {MAX_ROUNDS}, got {rounds}")


def in_rounds(specs: Sequence[TrialSpec], rounds: int, option: str = "--repeat") -> list[TrialSpec]:
    """`specs` `rounds` times, every other round reversed (A, B, C, C, B, A, A, ...): each
    trial's mean position in the run is then the same for an even count, so a steady drift in
    the machine's speed hits every configuration alike. One spec object per trial."""
    check_rounds(rounds, option)
    order: list[TrialSpec] = []
    for i in range(rounds):
        order += list(specs) if i % 2 == 0 else list(reversed(specs))
    return [spec.model_copy() for spec in order]


def validation_message(exc: ValueError) -> str:
    """The first pydantic error as `field: message` (or the exception's text)."""
    errors: list[dict[str, Any]] = getattr(exc, "errors", lambda: [])()
    if errors:
        first = errors[0]
        return f"{'.'.join(map(str, first['loc']))}: {first['msg']}"
    return str(exc)


def prepare_data(workload: str, dataset: str | None, data_dir: str | None = None,
                 download: bool = True, progress: FileProgress | None = None) -> str:
    """Check that `workload` (a name, with options as NAME:key=value) can train on `dataset`
    (default: its reference data set) and that
    the files are here and verified, fetching them when allowed; an image folder (at `data_dir`,
    else the cache's `data/image_folder/`) is checked for its layout, class folders, class
    count and files' first bytes (data/image_folder.check_image_folder). Done in the parent,
    before any trial, so that a missing or corrupt file is one clear error (exit 2), not a
    failed trial. `progress(file, bytes_done, bytes_total)` follows a download. Returns the data
    set's name."""
    from rigbench.data import (
        check_classes,
        check_compatible,
        dataset_dir,
        ensure_files,
        get_dataset,
        reference_dataset,
        training_options,
    )

    ref, options = parse_workload_ref(workload)
    dataset = dataset or reference_dataset(ref.name)
    # an unknown name lists the known ones; a folder digits would never read was stored as given
    if get_dataset(dataset).format == "sklearn_digits" and data_dir is not None:
        raise UsageError(f"--data-dir {data_dir}: digits ships inside scikit-learn and reads no folder; leave it out")
    options = training_options(ref.name, options, dataset)
    check_compatible(ref.name, dataset, options)
    ensure_files(dataset, data_dir, download=download, progress=progress)
    if dataset == "image_folder":  # the user's class folders against the network's outputs
        from rigbench.data.image_folder import find_classes

        check_classes(ref.name, dataset, find_classes(dataset_dir(dataset, data_dir)), options)
    return dataset


def check_batches_fill(specs: Sequence[TrialSpec], dataset: str, samples: int | None) -> None:
    """UsageError when a trial's batch is larger than its training set (each rank's share of it):
    not one step would train. `samples` is data.train_samples' count (None: not known without
    loading), and --max-train-samples bounds it. Refused here rather than by the child
    (frameworks/driver), which would store an `unsupported` trial after loading the data."""
    for spec in specs:
        limit = spec.train.max_train_samples if spec.train is not None else None
        known = [n for n in (samples, limit) if n is not None]
        if not known or min(known) // spec.world_size >= spec.batch_size:
            continue
        n = min(known)
        ranks = f" split over {spec.world_size} ranks" if spec.world_size > 1 else ""
        if limit is not None and limit == n:
            raise UsageError(f"--max-train-samples {n:,}{ranks} does not fill one batch of {spec.batch_size}: "
                             f"raise --max-train-samples or lower --batch-size")
        raise UsageError(f"{dataset} has {n:,} training samples{ranks}, fewer than one batch of {spec.batch_size}: "
                         f"lower --batch-size to at most {n // spec.world_size:,}")


def plan_train(
    workload: str,
    dataset: str,
    epochs: int,
    lrs: Sequence[float] = (),
    batch_sizes: Sequence[int] = (),
    devices: Sequence[str] = (),
    target_accuracy: float | None = None,
    target_loss: float | None = None,
    precision: Precision = "fp32",
    threads: int | None = None,
    frameworks: str | Sequence[str] = "torch",
    data_dir: str | None = None,
    input_mode: str = "resident",
    workers: int = 0,
    pin_memory: bool = False,
    max_train_samples: int | None = None,
    timeout_s: float = 3600.0,
    energy: EnergyMode = "measure",
    compile: CompileMode | bool = "off",
) -> list[TrialSpec]:
    """Training trials: one per framework x device x batch size x learning rate (the thesis's
    Tables 9-10 come from a list of learning rates or batch sizes). Defaults: torch, the CPU,
    the workload's reference batch size and learning rate. `target_loss` is a held-out loss to
    reach (a language model's, in nats per token). `compile` as for plan_run: its compilation
    falls in epoch 1's time and so in the time to a target, as a user waits for it. A batch the
    training set cannot fill is refused (check_batches_fill)."""
    from rigbench.data import check_text_windows, train_samples, training_options

    if input_mode == "resident" and (workers or pin_memory):  # else stored as used, and never used
        given = " and ".join(flag for flag, on in (("--workers", workers), ("--pin-memory", pin_memory)) if on)
        raise UsageError(f"{given} feed a DataLoader: add --input loader (the resident data set has no loader)")
    ref, options = parse_workload_ref(workload)
    _check_targets(ref, target_accuracy, target_loss, dataset, data_dir)
    options = training_options(ref.name, options, dataset)  # byte text: a language model's vocab=256
    names = list(dict.fromkeys([frameworks] if isinstance(frameworks, str) else frameworks)) or ["torch"]
    others = [name for name in names if name != "torch"]
    if workers and others:  # else each of their trials stored `unsupported` (driver/batches.NumpyLoader)
        raise UsageError(f"--workers is torch's DataLoader; {', '.join(others)} read host batches in the main "
                         "process: give --workers 0, or train with --framework torch alone")
    chosen = {name: chosen_devices(name, devices, default=["cpu"]) for name in names}
    try:
        train = TrainOptions(dataset=dataset, data_dir=data_dir, download=False, epochs=epochs,
                             target_accuracy=target_accuracy, target_loss=target_loss, input_mode=input_mode,
                             workers=workers, pin_memory=pin_memory,
                             max_train_samples=max_train_samples)
        measure = MeasureOptions(timeout_s=timeout_s, energy=energy)
    except ValueError as exc:
        raise UsageError(validation_message(exc)) from None
    lr_values: Sequence[float | None] = lrs or [None]  # None: the workload's default
    specs = [
        TrialSpec(workload=ref.name, workload_options=options, framework=framework, device=device,
                  batch_size=batch, precision=precision, threads=threads, lr=lr,
                  compile=compile_mode(compile), measure=measure, train=train)
        for framework in names
        for device in dict.fromkeys(chosen[framework])
        for batch in (batch_sizes or [ref.default_batch])
        for lr in lr_values
    ]
    check_threads(specs)
    check_text_windows(ref.name, dataset, data_dir, options)  # before the batch: 0 windows is the context's fault
    samples = train_samples(ref.name, dataset, data_dir, options)
    if max_train_samples is not None and samples is not None and max_train_samples > samples:
        # else stored as the limit of a run that trained on all `samples`
        raise UsageError(f"--max-train-samples {max_train_samples:,} is more than the {samples:,} training samples of "
                         f"{dataset}: give at most {samples:,}, or leave it out to train on all of them")
    check_batches_fill(specs, dataset, samples)
    return specs


def _check_targets(workload: Workload, target_accuracy: float | None, target_loss: float | None, dataset: str,
                   data_dir: str | None) -> None:
    """UsageError for a target the workload has no figure to reach: it was stored and trained
    towards to the last epoch, never reached (gpt --target-accuracy 0.5: 7 minutes, no answer);
    and for an accuracy guessing reaches (`--target-accuracy 1.5` reads as 1.5%: "reached" in
    epoch 1 by any network, a typo for 0.15 or 15 that answered nothing)."""
    if target_accuracy is not None and workload.metric != "accuracy":
        held_out = "no held-out figure" if workload.metric == "none" else "a held-out loss, not an accuracy"
        loss = "" if workload.metric == "none" else ": give --target-loss"
        raise UsageError(f"--target-accuracy: {workload.name} has {held_out}{loss}")
    if target_loss is not None and workload.metric == "none":
        raise UsageError(f"--target-loss: {workload.name} has no held-out loss (a GAN's losses are its two "
                         "networks' training losses)")
    if target_accuracy is not None:
        from rigbench.data import dataset_dir, get_dataset
        from rigbench.data.image_folder import find_classes

        info = get_dataset(dataset)
        classes = len(info.classes or find_classes(dataset_dir(info, data_dir)))
        if target_accuracy <= 1 / classes:
            raise UsageError(f"--target-accuracy {target_accuracy:.1%} is no better than guessing among the {classes} "
                             f"classes of {dataset} ({1 / classes:.1%}): give a higher one, as a fraction (0.9) or a "
                             "percentage (90)")


def node_launch(nnodes: int, node_rank: int, endpoint: str | None) -> NodeLaunch:
    """This machine's part of a multi-node run (`--nnodes --node-rank --rdzv-endpoint`), checked;
    UsageError naming the flag to change. The endpoint's host must resolve here, and on node 0,
    which listens there (torch's rendezvous store, jax's coordinator, the rank store), its port
    must be free: either failure otherwise shows only after the trial's whole --timeout, or is
    blamed on another node."""
    if nnodes < 1:
        raise UsageError("--nnodes must be at least 1")
    if nnodes > 1 and not endpoint:
        raise UsageError("--nnodes above 1 needs --rdzv-endpoint HOST:PORT (node 0's address and a free port)")
    if not 0 <= node_rank < nnodes:
        raise UsageError(f"--node-rank must be 0 to {nnodes - 1} for --nnodes {nnodes}, not {node_rank}")
    if endpoint is None or nnodes == 1:
        # One machine's ranks meet at a free port of their own: an endpoint is ignored (the CLI
        # says so), not refused, so one script can serve allocations of one node and of several.
        return NodeLaunch(node_rank)
    host, _, port = endpoint.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--rdzv-endpoint {endpoint!r} is not HOST:PORT, e.g. 10.0.0.1:29500")
    try:
        socket.getaddrinfo(host.strip("[]"), int(port), type=socket.SOCK_STREAM)
    except OSError as exc:  # socket.gaierror: the name is unknown here
        raise UsageError(f"--rdzv-endpoint {endpoint}: the host {host} does not resolve on this machine "
                         f"({exc.strerror or exc}); give node 0's address or a name this machine can look up") from None
    if node_rank == 0:
        _check_port_free(endpoint, int(port))
    return NodeLaunch(node_rank, endpoint)


def _check_port_free(endpoint: str, port: int) -> None:
    """UsageError unless node 0 can listen on `port`: the frameworks bind it on every interface
    (the rank store on the loopback alone for a loopback endpoint), so a program listening on any
    interface there takes it. SO_REUSEADDR as those servers set it: a socket of an earlier trial
    that is only closing does not count."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("", port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise UsageError(f"--rdzv-endpoint {endpoint}: port {port} is in use on this machine (node 0, which "
                                 "listens there) by another program; pick a free port on every node") from None
            if exc.errno == errno.EACCES:
                raise UsageError(f"--rdzv-endpoint {endpoint}: this user may not listen on port {port} here "
                                 "(node 0 listens there); pick a port above 1023 on every node") from None
            # any other refusal (no IPv4 here, ...): the framework's own error will say
