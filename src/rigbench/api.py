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
from rigbench.timestamps import now_iso
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


def select_results(store: Store, run_ids: Sequence[str] = (), where: Sequence[str] = ()) -> list[Result]:
    """Stored results of `run_ids` (default: all) that match every `--where`, oldest first;
    UsageError when a run has no results or nothing matches."""
    accepted = parse_where(where)
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
    return results


def report(out: str, db: str | None = None, run_ids: Sequence[str] = (),
           where: Sequence[str] = (), png_dir: str | None = None) -> ReportOutcome:
    """Write the self-contained HTML report of the stored results of `run_ids` (default:
    all) that match `where` to `out`, and with `png_dir` each chart as a PNG there."""
    parse_where(where)  # a bad filter fails before anything is imported or read
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
    results = select_results(store, run_ids, where)
    machines = {run_id: store.machine(run_id) for run_id in dict.fromkeys(r.run_id for r in results)}
    page, charts = html.render(results, machines, filters=list(where),
                               calibrations=device_calibrations(store, results))
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


def plan_lr_find(
    workload: str,
    dataset: str,
    device: str = "cpu",
    batch_size: int | None = None,
    start_lr: float = 1e-6,
    end_lr: float = 10.0,
    steps: int = 100,
    data_dir: str | None = None,
    precision: Precision = "fp32",
    threads: int | None = None,
    framework: str = "torch",
    timeout_s: float = 1800.0,
) -> TrialSpec:
    """A learning-rate range test (`rigbench lr-find`) on `dataset`, already checked by
    `prepare_data`: one trial, at the workload's reference batch unless `batch_size`."""
    from rigbench.spec import LrFindOptions

    ref, options = parse_workload_ref(workload)
    chosen = _chosen_devices(framework, [device] if device else [], default=["cpu"])[0]
    if end_lr <= start_lr:
        raise UsageError(f"--end-lr ({end_lr:g}) must be larger than --start-lr ({start_lr:g})")
    try:
        lr_find = LrFindOptions(dataset=dataset, data_dir=data_dir, start_lr=start_lr,
                                end_lr=end_lr, steps=steps)
        measure = MeasureOptions(timeout_s=timeout_s)
        return TrialSpec(workload=ref.name, workload_options=options, framework=framework,
                         device=chosen, batch_size=batch_size or ref.default_batch,
                         precision=precision, threads=threads, measure=measure, lr_find=lr_find)
    except ValueError as exc:
        raise UsageError(_first_validation_message(exc)) from None


def default_thread_counts(cores: int | None = None) -> list[int]:
    """1, 2, 4, ... up to the logical cores, and the core count itself (e.g. 6 -> 1, 2, 4, 6)."""
    import os

    cores = cores or os.cpu_count() or 1
    counts = [1 << i for i in range(cores.bit_length()) if 1 << i <= cores]
    return counts + ([cores] if counts[-1] != cores else [])


def default_precisions(device: str) -> list[str]:
    """The reduced precisions worth trying on a device kind: tf32 (NVIDIA Ampere+) on CUDA,
    then bf16 and fp16. A device without one gives an `unsupported` trial that says why."""
    return (["tf32"] if device.startswith("cuda") else []) + ["bf16", "fp16"]


def plan_scaling(
    workload: str,
    device: str = "cpu",
    batch_size: int | None = None,
    threads: Sequence[int] | None = None,
    precisions: Sequence[str] | None = None,
    compile: bool = True,
    channels_last: bool = True,
    quick: bool = False,
    framework: str = "torch",
) -> list[TrialSpec]:
    """The trials of `rigbench scaling`: the fp32 eager default (framework's own thread count)
    first, then one trial per variant that changes exactly one knob from it: each thread count
    (default on the CPU: `default_thread_counts()`; none elsewhere), each precision (default:
    `default_precisions(device)`), torch.compile, channels-last."""
    from rigbench.spec import PRECISIONS

    for p in precisions or []:
        if p not in PRECISIONS or p == "fp32":
            raise UsageError(f"--precision takes {', '.join(PRECISIONS[1:])} (fp32 is the baseline), got {p!r}")
    base = plan_run([workload], [device], [batch_size] if batch_size else [], quick=quick,
                    framework=framework)[0]
    if threads is None:
        threads = default_thread_counts() if base.device == "cpu" else []
    if precisions is None:
        precisions = default_precisions(base.device)
    variants = [base.model_copy(update={"threads": t}) for t in dict.fromkeys(threads)]
    variants += [base.model_copy(update={"precision": p}) for p in dict.fromkeys(precisions)]
    if compile:
        variants.append(base.model_copy(update={"compile": True}))
    if channels_last:
        variants.append(base.model_copy(update={"channels_last": True}))
    return [base, *variants]


# --------------------------------------------------------------------------- calibration, roofline


@dataclass
class CalibrateOutcome:
    """What `calibrate` measured: one dict per device (frameworks/torch/calibrate.calibrate's,
    or {"device", "error"} when its child failed), stored under `run_id` (no run is recorded
    when nothing was measured)."""

    run_id: str
    db_url: str
    calibrations: list[dict[str, Any]]


def calibrate(devices: Sequence[str] = (), precisions: Sequence[str] = (), quick: bool = False,
              threads: int | None = None, framework: str = "torch", db: str | None = None,
              command: str | None = None, on_device: Callable[[str], None] | None = None,
              on_progress: Callable[[str], None] | None = None) -> CalibrateOutcome:
    """Measure each device's ceilings (peak matmul FLOP/s per precision, memory and host<->device
    bandwidth) in a child process and store them; default: every device, every precision."""
    from rigbench.runner.calibrate import calibrate_devices
    from rigbench.spec import PRECISIONS

    for p in precisions:
        if p not in PRECISIONS:
            raise UsageError(f"--precision takes {', '.join(PRECISIONS)}, got {p!r}")
    if threads is not None and threads < 1:
        raise UsageError("--threads must be at least 1")
    check_framework(framework)
    # Named devices are checked by the child itself (saving a probe process); none named: all.
    chosen = list(dict.fromkeys(_normalise_device(d) for d in devices)) or framework_devices(framework)
    store = Store(db)
    run_id = uuid.uuid4().hex[:12]

    def add_run() -> str:
        store.add_run(run_id, now_iso(), command or shlex.join(sys.argv), machine_fingerprint())
        return run_id

    done = calibrate_devices(store, add_run, now_iso, framework, chosen, list(precisions) or list(PRECISIONS),
                             quick=quick, threads=threads, on_device=on_device, on_progress=on_progress)
    return CalibrateOutcome(run_id, store.url, done)


def device_calibrations(store: Store, results: Sequence[Result]) -> dict[str, dict[str, Any]]:
    """device name -> its latest calibration, for the devices of `results` that have one."""
    from rigbench.store.calibrations import latest_calibration

    names = dict.fromkeys(r.device_name for r in results if r.device_name)
    found = {name: latest_calibration(store, name) for name in names}
    return {name: cal for name, cal in found.items() if cal is not None}


def spec_sheet(result: Result) -> Any:
    """The spec-sheet row (analysis/specs.HardwareSpec) of the device a result ran on, or None."""
    from rigbench.analysis.specs import lookup

    if not result.device_name:
        return None
    return lookup(result.device_name, kind="cpu" if result.spec.device == "cpu" else "gpu")


def result_roofline(result: Result, calibration: dict[str, Any] | None) -> Any:
    """analysis/roofline.TrialRoofline of one result, against its device's spec sheet and
    `calibration` (its device's latest, or None)."""
    from rigbench.analysis.roofline import trial_roofline
    from rigbench.analysis.specs import peak_flops
    from rigbench.workloads import get_workload

    sheet = spec_sheet(result)
    m, precision = result.metrics, result.spec.precision
    return trial_roofline(
        precision=precision, batch_size=result.spec.batch_size, samples_per_s=m.samples_per_s,
        flops_per_sample=m.flops_per_sample, bytes_per_sample=m.bytes_per_sample, params=m.params,
        optimizer=get_workload(result.spec.workload).optimizer,
        spec_name=sheet.name if sheet else None,
        spec_peak=peak_flops(sheet, precision) if sheet else None,
        spec_bandwidth=sheet.memory_bandwidth_gbs * 1e9 if sheet and sheet.memory_bandwidth_gbs else None,
        calibration=calibration,
    )


def roofline(db: str | None = None, run_ids: Sequence[str] = (),
             where: Sequence[str] = ()) -> list[tuple[Result, Any]]:
    """(result, TrialRoofline) for every successful stored trial of `run_ids` matching `where`."""
    store = Store(db)
    results = [r for r in select_results(store, run_ids, where) if r.status == "ok"]
    calibrations = device_calibrations(store, results)
    return [(r, result_roofline(r, calibrations.get(r.device_name or ""))) for r in results]


# ---- Against known results (issue 5): published tables, run-vs-run, bundles, the score.
# Imports are local so that `import rigbench.api` stays cheap.


def this_machine_results(store: Store) -> list[Result]:
    """Stored results (without raw samples) of runs made on this machine: same hostname and
    CPU model as now. Imported results from other machines are left out."""
    import socket

    from rigbench.fingerprint import cpu_identity
    from rigbench.store.bundle import stored_runs

    host, cpu = socket.gethostname(), cpu_identity()["model"]
    mine = {r.id for r in stored_runs(store)
            if r.machine.get("hostname") == host and r.machine.get("cpu_model") == cpu}
    return [r for r in store.list() if r.run_id in mine]


def compare_published(db: str | None = None, sources: Sequence[str] = (), run_ids: Sequence[str] = (),
                      all_frameworks: bool = False) -> Any:
    """This machine's results (or those of `run_ids`) beside the published tables
    (analysis/published.py); returns a PublishedComparison."""
    from rigbench.analysis.published import SOURCES, compare_published as _compare, peak_resolver

    unknown = [s for s in sources if s not in SOURCES]
    if unknown:
        raise UsageError(f"unknown published source {unknown[0]!r}: choose from {', '.join(SOURCES)}")
    store = Store(db)
    if run_ids:
        results = [r for run_id in dict.fromkeys(run_ids) for r in store.list(run_id=run_id)]
        if not results:
            raise UsageError(f"no results stored for --run {', '.join(run_ids)} in {store.url}")
    else:
        results = this_machine_results(store)
    return _compare(results, sources, peak_resolver(store), all_frameworks=all_frameworks)


@dataclass
class CompareOutcome:
    """`rigbench compare A B`: the pairs and what each side was."""

    pairs: list[Any]             # analysis.compare.Pair
    label_a: str
    label_b: str
    same_machine: bool
    machine_a: str
    machine_b: str


def _side_results(store: Store, ref: str | None, where: Sequence[str], name: str) -> tuple[list[Result], dict[str, Any], str]:
    """Results with raw samples for one side of `compare`: a run id, a bundle file or all
    stored results, filtered by --where; with the machine of each run."""
    from pathlib import Path

    from rigbench.store.bundle import load_bundle

    accepted = parse_where(where)
    machines: dict[str, Any] = {}
    if ref is not None and Path(ref).is_file():
        bundle = load_bundle(ref)
        results = [r for r in bundle.results if all(WHERE_KEYS[k](r) in v for k, v in accepted.items())]
        machines = {r.id: r.machine for r in bundle.runs}
        label = f"bundle {ref}"
    else:
        listed = store.list(run_id=ref) if ref is not None else store.list()
        if ref is not None and not listed:
            raise UsageError(f"{name}: no run {ref!r} in {store.url} and no such file: "
                             f"see `rigbench results list`")
        listed = [r for r in listed if all(WHERE_KEYS[k](r) in v for k, v in accepted.items())]
        results = [full for r in listed if r.id is not None and (full := store.get(r.id)) is not None]
        machines = {run_id: store.machine(run_id) for run_id in dict.fromkeys(r.run_id for r in results)}
        label = f"run {ref}" if ref is not None else "all stored results"
    if where:
        label += " where " + " ".join(where)
    if not results:
        raise UsageError(f"{name}: no results in {label}")
    return results, machines, label


def _machine_text(machines: dict[str, Any]) -> str:
    names = {f"{m.get('hostname')} ({m.get('cpu_model')})" for m in machines.values() if m}
    return ", ".join(sorted(names)) or "unknown machine"


def compare(a: str | None = None, b: str | None = None, db: str | None = None,
            where_a: Sequence[str] = (), where_b: Sequence[str] = (),
            across_versions: bool = False) -> CompareOutcome:
    """Line up the trials of A and B (run ids, bundle files, or --where filters over the
    stored results) and judge each pair (analysis/compare.py)."""
    from rigbench.analysis.compare import compare_results

    if a is None and not where_a or b is None and not where_b:
        raise UsageError("give two runs (rigbench compare RUN_A RUN_B) or filters for both sides "
                         "(--where-a KEY=VALUE --where-b KEY=VALUE)")
    store = Store(db)
    results_a, machines_a, label_a = _side_results(store, a, where_a, "A")
    results_b, machines_b, label_b = _side_results(store, b, where_b, "B")

    def ident(machines: dict[str, Any]) -> set[tuple]:
        return {(m.get("hostname"), m.get("cpu_model")) for m in machines.values() if m}

    same = ident(machines_a) == ident(machines_b) and len(ident(machines_a)) == 1
    pairs = compare_results(results_a, results_b, same_machine=same, across_versions=across_versions)
    return CompareOutcome(pairs, label_a, label_b, same, _machine_text(machines_a), _machine_text(machines_b))


def export_bundle(db: str | None = None, run_ids: Sequence[str] | None = None) -> dict[str, Any]:
    """A full-fidelity results bundle (store/bundle.py) of `run_ids` (default: every run)."""
    from rigbench.store.bundle import export_bundle as _export

    return _export(Store(db), run_ids)


def import_bundle(path: str, db: str | None = None) -> Any:
    """Validate a bundle file completely, then add its runs and results (ImportOutcome)."""
    from rigbench.store.bundle import import_bundle as _import, load_bundle

    bundle = load_bundle(path)  # all checks before the database is even opened
    return _import(Store(db), bundle)


@dataclass
class ScoreOutcome:
    """`rigbench score`: one Score per device class both machines have, and the two sides."""

    scores: list[Any]            # analysis.score.Score
    ours_label: str
    reference_label: str
    reference_machine: str
    missing_everywhere: list[str]  # device classes we have results for but the reference lacks


def _reference_results(store: Store, reference: str | None) -> tuple[list[Result], str, str]:
    from pathlib import Path

    from rigbench.analysis.score import read_shipped_reference, shipped_references
    from rigbench.store.bundle import load_bundle, parse_bundle

    shipped = shipped_references()
    if reference is None:
        if len(shipped) != 1:
            choices = f"shipped: {', '.join(shipped)}" if shipped else "none ships with this rigbench yet"
            raise UsageError(f"name a reference machine with --reference NAME|FILE|RUN ({choices}); "
                             f"a bundle comes from `rigbench results export --format bundle`")
        reference = shipped[0]
    if reference in shipped:
        bundle = parse_bundle(read_shipped_reference(reference), f"reference {reference}")
        return bundle.results, f"reference machine {reference}", _machine_text({r.id: r.machine for r in bundle.runs})
    if Path(reference).is_file():
        bundle = load_bundle(reference)
        return bundle.results, f"bundle {reference}", _machine_text({r.id: r.machine for r in bundle.runs})
    listed = store.list(run_id=reference)
    if not listed:
        raise UsageError(f"--reference {reference!r} is not a shipped reference "
                         f"({', '.join(shipped) or 'none ship yet'}), a bundle file or a stored run")
    results = [full for r in listed if r.id is not None and (full := store.get(r.id)) is not None]
    return results, f"run {reference}", _machine_text({reference: store.machine(reference)})


def score(run_id: str | None = None, reference: str | None = None, db: str | None = None,
          device_class: str | None = None) -> ScoreOutcome:
    """The geometric mean of this machine's speed-ups over a reference machine across the
    default suite (analysis/score.py), per device class ("cpu", "gpu")."""
    from rigbench.analysis.score import compute_score, default_suite, suite_results

    if device_class not in (None, "cpu", "gpu"):
        raise UsageError(f"--device must be cpu or gpu, got {device_class!r}")
    store = Store(db)
    ref_results, ref_label, ref_machine = _reference_results(store, reference)
    if run_id is not None:
        listed = store.list(run_id=run_id)
        if not listed:
            raise UsageError(f"no results stored for run {run_id!r} in {store.url}: see `rigbench results list`")
        ours_label = f"run {run_id}"
    else:
        listed = this_machine_results(store)
        ours_label = "this machine's newest results"
    scores, lacking = [], []
    for cls in [device_class] if device_class else ["cpu", "gpu"]:
        mine = suite_results(listed, cls)
        if not mine:
            continue
        mine = {w: full for w, r in mine.items() if r.id is not None and (full := store.get(r.id)) is not None}
        result = compute_score(mine, suite_results(ref_results, cls), cls)
        if result is None:
            lacking.append(cls)
        else:
            scores.append(result)
    if not scores:
        suite = " ".join(f"{w}" for w, _ in default_suite())
        raise UsageError(f"no suite workload measured both here ({ours_label}) and in {ref_label}"
                         f"{' on ' + device_class if device_class else ''}: run `rigbench run` "
                         f"(the default suite: {suite}, each at its reference batch)")
    return ScoreOutcome(scores, ours_label, ref_label, ref_machine, lacking)


# Sweeps and the largest batch (runner/sweep.py, runner/max_batch.py) import this module
# lazily, so these re-exports come last.
from rigbench.runner.max_batch import MaxBatchOutcome, find_max_batch  # noqa: E402
from rigbench.runner.sweep import SweepOutcome, plan_sweep, sweep  # noqa: E402
# The recommendation (runner/recommend.py) imports this module lazily too.
from rigbench.runner.recommend import RecommendOutcome, recommend  # noqa: E402
