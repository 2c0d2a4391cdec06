"""The library API. The CLI is a thin layer over these functions.

    from rigbench import api
    specs = api.plan_run(workloads=["cnn"], devices=["cpu"], batch_sizes=[32, 128])
    outcome = api.run(specs, db="results.db")
"""

from __future__ import annotations

import shlex
import sys
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rigbench.devices import host_devices
from rigbench.errors import UsageError
from rigbench.fingerprint import machine_fingerprint
from rigbench.frameworks import check_framework, installed_frameworks
from rigbench.runner.assemble import now_iso
from rigbench.runner.probe import probe
from rigbench.runner.session import SessionOutcome, run_trials
from rigbench.spec import MeasureOptions, Precision, Result, TrialSpec
from rigbench.store import Store
from rigbench.workloads import WORKLOADS, Workload, parse_workload_ref, resolved_options


def workloads_info(count: bool = True) -> list[dict[str, Any]]:
    """Every workload's facts; with `count`, parameters and training FLOPs per sample as
    counted by PyTorch on a meta device (None when torch is not installed)."""
    counts: dict[str, list] = {}
    if count and "torch" in installed_frameworks():
        counts = probe("torch", count=True).get("counts", {})
    rows = []
    for w in WORKLOADS.values():
        params, flops = counts.get(w.name, (None, None))
        rows.append({
            "name": w.name, "title": w.title, "task": w.task, "input_shape": list(w.input_shape),
            "num_classes": w.num_classes, "dataset": w.dataset.name,
            "dataset_train_size": w.dataset.train_size, "dataset_source": w.dataset.source,
            "default_batch": w.default_batch, "optimizer": w.optimizer, "default_lr": w.default_lr,
            "options": resolved_options(w, {}),
            "option_choices": {k: list(v) for k, v in w.option_choices.items()},
            "params": params, "train_flops_per_sample": flops, "origin": w.origin,
            "seed_documents": list(w.seed_docs),
        })
    return rows


def devices_info() -> list[dict[str, Any]]:
    """Devices of this machine: what the hardware shows (CPU, NVML/amdsmi GPUs) merged with
    what each installed framework can use, by device id."""
    merged: dict[str, dict[str, Any]] = {}
    for dev in host_devices():
        merged[dev["id"]] = {**dev, "frameworks": []}
    for name in installed_frameworks():
        for dev in probe(name)["devices"]:
            entry = merged.setdefault(dev["id"], {**dev, "frameworks": []})
            for key in ("kind", "name", "memory_bytes"):
                if entry.get(key) in (None, "") and dev.get(key) is not None:
                    entry[key] = dev[key]
            entry["frameworks"].append(name)
    return list(merged.values())


def framework_devices(framework: str) -> list[str]:
    """Device ids the framework can use here."""
    check_framework(framework)
    return [d["id"] for d in probe(framework)["devices"]]


def _normalise_device(device: str) -> str:
    device = device.strip().lower()
    return f"{device}:0" if device in ("cuda", "xpu", "dml") else device


def _chosen_devices(framework: str, devices: Sequence[str], default: list[str] | None) -> list[str]:
    """The requested devices, normalised and checked against what the framework can use;
    none requested gives `default` (None: every available device)."""
    available = framework_devices(framework)
    chosen = [_normalise_device(d) for d in devices] or default or available
    for device in chosen:
        if device not in available:
            raise UsageError(f"device {device!r} is not available to {framework} here: "
                             f"choose from {', '.join(available)}")
    return chosen


def plan_run(
    workloads: Sequence[str] = (),
    devices: Sequence[str] = (),
    batch_sizes: Sequence[int] = (),
    precision: Precision = "fp32",
    threads: int | None = None,
    framework: str = "torch",
    steps: int | None = None,
    seconds: float | None = None,
    quick: bool = False,
    memory_limit_bytes: int | None = None,
    timeout_s: float | None = None,
    lr: float | None = None,
    compile: bool = False,
    channels_last: bool = False,
) -> list[TrialSpec]:
    """The trials of a run: every workload x device x batch size. Empty lists mean every
    workload, every device the framework can use here, and each workload's default batch
    (a small one with `quick`, the same on every device so speed-ups compare). Raises UsageError for bad input."""
    check_framework(framework)
    refs: list[tuple[Workload, dict[str, Any]]] = [parse_workload_ref(w) for w in workloads] or [
        (w, {}) for w in WORKLOADS.values()
    ]
    chosen = _chosen_devices(framework, devices, default=None)
    if any(b < 1 for b in batch_sizes):
        raise UsageError("batch sizes must be at least 1")
    overrides: dict[str, Any] = {}
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
        raise UsageError(_first_validation_message(exc)) from None
    specs = []
    for workload, options in refs:
        for device in dict.fromkeys(chosen):
            default = workload.quick_batch if quick else workload.default_batch
            for batch in batch_sizes or [default]:
                specs.append(TrialSpec(
                    workload=workload.name, workload_options=options, framework=framework,
                    device=device, batch_size=batch, precision=precision, threads=threads,
                    lr=lr, measure=measure, compile=compile, channels_last=channels_last,
                ))
    return specs


def _first_validation_message(exc: ValueError) -> str:
    errors = getattr(exc, "errors", lambda: [])()
    if errors:
        first = errors[0]
        return f"{'.'.join(map(str, first['loc']))}: {first['msg']}"
    return str(exc)


@dataclass
class RunOutcome:
    run_id: str
    db_url: str
    results: list[Result]
    interrupted: bool


def run(
    specs: Sequence[TrialSpec],
    db: str | None = None,
    command: str | None = None,
    on_trial_start: Callable[[int, TrialSpec], None] | None = None,
    on_trial_end: Callable[[int, Result], None] | None = None,
    on_child_start: Callable[[int], None] | None = None,
) -> RunOutcome:
    """Run trials one by one in child processes; every result is stored as it finishes."""
    store = Store(db)
    run_id = uuid.uuid4().hex[:12]
    store.add_run(run_id, now_iso(), command or shlex.join(sys.argv), machine_fingerprint())
    session: SessionOutcome = run_trials(specs, store, run_id, on_trial_start=on_trial_start,
                                         on_trial_end=on_trial_end, on_child_start=on_child_start)
    return RunOutcome(run_id, store.url, session.results, session.interrupted)


def speedups_over_cpu(results: Sequence[Result]) -> list[dict[str, Any]]:
    """For each workload/batch/precision measured on the CPU and on another device (both
    ok): the other device's samples/s divided by the CPU's."""
    def key(r: Result) -> tuple:
        return (r.spec.workload, tuple(sorted(r.spec.workload_options.items())),
                r.spec.batch_size, r.spec.precision)

    ok = [r for r in results if r.status == "ok" and r.metrics.samples_per_s]
    cpu = {key(r): r for r in ok if r.spec.device == "cpu"}
    rows = []
    for r in ok:
        base = cpu.get(key(r))
        if r.spec.device != "cpu" and base is not None:
            rows.append({"workload": r.spec.workload, "device": r.spec.device,
                         "batch_size": r.spec.batch_size, "precision": r.spec.precision,
                         "speedup": r.metrics.samples_per_s / base.metrics.samples_per_s})
    return rows


#: `--where KEY=VALUE` keys and how each reads a Result.
WHERE_KEYS: dict[str, Callable[[Result], Any]] = {
    "workload": lambda r: r.spec.workload,
    "device": lambda r: r.spec.device,
    "framework": lambda r: r.spec.framework,
    "precision": lambda r: r.spec.precision,
    "status": lambda r: r.status,
    "batch_size": lambda r: str(r.spec.batch_size),
}


def parse_where(filters: Sequence[str]) -> dict[str, set[str]]:
    """`["device=cpu", "workload=cnn", "workload=mlp"]` -> {key: accepted values}. A key
    given twice accepts either value; different keys must all match."""
    accepted: dict[str, set[str]] = {}
    for text in filters:
        key, sep, value = text.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not value:
            raise UsageError(f"--where {text!r} must be KEY=VALUE, e.g. --where device=cpu")
        if key not in WHERE_KEYS:
            raise UsageError(f"unknown --where key {key!r}: use {', '.join(WHERE_KEYS)}")
        if key == "batch_size" and not value.isdigit():
            raise UsageError(f"--where {text!r}: batch_size must be a whole number")
        accepted.setdefault(key, set()).add(str(int(value)) if key == "batch_size" else value)
    return accepted


@dataclass
class ReportOutcome:
    """What `report` wrote: the page, how many trials it covers, its chart ids, the PNGs."""

    path: str
    trials: int
    charts: list[str]
    pngs: list[str]
    size_bytes: int


def report(out: str, db: str | None = None, run_ids: Sequence[str] = (),
           where: Sequence[str] = (), png_dir: str | None = None) -> ReportOutcome:
    """Write the self-contained HTML report of the stored results of `run_ids` (default:
    all) that match `where` to `out`, and with `png_dir` each chart as a PNG there."""
    accepted = parse_where(where)
    try:  # optional dependencies: only the report needs them
        from rigbench.reports import html
        if png_dir is not None:
            from rigbench.reports import png
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in ("plotly", "jinja2", "markupsafe", "matplotlib"):
            raise UsageError(f"the report needs {exc.name.split('.')[0]}: "
                             f"pip install 'rigbench[report]'") from None
        raise
    store = Store(db)
    results: list[Result] = []
    for run_id in dict.fromkeys(run_ids) or [None]:
        found = store.list(run_id=run_id)
        if run_id is not None and not found:
            raise UsageError(f"no results stored for --run {run_id!r} in {store.url}: "
                             f"see `rigbench results list`")
        results.extend(found)
    results.sort(key=lambda r: r.id or 0)
    results = [r for r in results if all(WHERE_KEYS[k](r) in v for k, v in accepted.items())]
    if not results and not where:
        raise UsageError(f"no results stored in {store.url}: run `rigbench run` first")
    if not results:
        scope = f"runs {', '.join(run_ids)}" if run_ids else "the database"
        raise UsageError(f"no results in {scope} ({store.url}) match "
                         f"{' '.join(f'--where {w}' for w in where)}")
    machines = {run_id: store.machine(run_id) for run_id in dict.fromkeys(r.run_id for r in results)}
    page, charts = html.render(results, machines, filters=list(where))
    try:
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(page)
    except OSError as exc:
        raise UsageError(f"cannot write --out {out}: {exc.strerror}") from None
    try:
        pngs = [str(p) for p in png.write_pngs(charts, png_dir)] if png_dir is not None else []
    except OSError as exc:
        raise UsageError(f"cannot write --png {png_dir}: {exc.strerror}") from None
    return ReportOutcome(str(out), len(results), [c.id for c in charts], pngs, len(page.encode()))


def prepare_data(workload: str, dataset: str | None, data_dir: str | None = None,
                 download: bool = True) -> str:
    """Check that `workload` can train on `dataset` (default: its reference data set) and that
    the files are here and verified, fetching them when allowed. Done in the parent, before
    any trial, so that a missing or corrupt file is one clear error (exit 2), not a failed
    trial. Returns the data set's name."""
    from rigbench.data import check_compatible, ensure_files, get_dataset, reference_dataset

    dataset = dataset or reference_dataset(workload)
    get_dataset(dataset)  # unknown name: lists the known ones
    check_compatible(workload, dataset)
    if dataset == "image_folder" and not data_dir:
        raise UsageError("--dataset image_folder needs --data-dir DIR with one sub-folder per class")
    ensure_files(dataset, data_dir, download=download)
    return dataset


def plan_train(
    workload: str,
    dataset: str,
    epochs: int,
    lrs: Sequence[float] = (),
    batch_sizes: Sequence[int] = (),
    devices: Sequence[str] = (),
    target_accuracy: float | None = None,
    precision: Precision = "fp32",
    threads: int | None = None,
    framework: str = "torch",
    data_dir: str | None = None,
    input_mode: str = "resident",
    workers: int = 0,
    pin_memory: bool = False,
    max_train_samples: int | None = None,
    timeout_s: float = 3600.0,
) -> list[TrialSpec]:
    """Training trials: one per device x batch size x learning rate (the thesis's Tables 9-10
    come from a list of learning rates or batch sizes). Defaults: the CPU, the workload's
    reference batch size and learning rate."""
    from rigbench.spec import TrainOptions

    ref, options = parse_workload_ref(workload)
    chosen = _chosen_devices(framework, devices, default=["cpu"])
    try:
        train = TrainOptions(dataset=dataset, data_dir=data_dir, download=False, epochs=epochs,
                             target_accuracy=target_accuracy, input_mode=input_mode,
                             workers=workers, pin_memory=pin_memory,
                             max_train_samples=max_train_samples)
        measure = MeasureOptions(timeout_s=timeout_s)
    except ValueError as exc:
        raise UsageError(_first_validation_message(exc)) from None
    return [
        TrialSpec(workload=ref.name, workload_options=options, framework=framework, device=device,
                  batch_size=batch, precision=precision, threads=threads, lr=lr, measure=measure,
                  train=train)
        for device in dict.fromkeys(chosen)
        for batch in (batch_sizes or [ref.default_batch])
        for lr in (lrs or [None])
    ]
