"""The trials `rigbench recommend` runs where the stored results lack them (experiments/
recommend.py decides which): the session that runs them under one run id, or lists them with
--no-run (`Session`), torch.compile's modes where the step is overhead-bound
(`compile_trials`), and an lr-find and a one-epoch loader run on a real data set here offline
(`data_trials`); and the outcome a recommendation returns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rigbench.analysis import recommend as rules
from rigbench.analysis.recommend_model import Line
from rigbench.experiments.execute import start_run
from rigbench.experiments.recommend_data import needs_loader, needs_lr_find, offline_dataset, short_of
from rigbench.experiments.scaling import default_compile_modes
from rigbench.runner.session import run_trials
from rigbench.spec import LrFindOptions, MeasureOptions, Result, TrainOptions, TrialSpec
from rigbench.store import Store
from rigbench.workloads import Workload

#: lr-find in a recommendation: fastai's range (1e-7..10 there, 1e-6..10 here) over 100 steps;
#: with --quick a shorter ramp from 1e-4 (still below where the loss starts to fall on digits).
LR_FIND_FULL = {"start_lr": 1e-6, "end_lr": 10.0, "steps": 100}
LR_FIND_QUICK = {"start_lr": 1e-4, "end_lr": 10.0, "steps": 40}
#: With --quick the loader run trains on this many samples, or 8 batches if that is more: the
#: shares of input and copy time per step do not need a whole epoch.
LOADER_QUICK_SAMPLES = 512


#: Seconds an lr-find or a one-epoch loader run takes at most on digits (the only data set a
#: recommendation finds offline without a download): 14 s and 3 s for mlp on the 2-core dev VM.
DATA_TRIAL_S = 20.0


@dataclass
class RecommendOutcome:
    """The recommendation and what it rests on."""

    workload: str
    devices: list[str]
    lines: list[Line]
    ran: list[str] = field(default_factory=list)  # what was measured now, and why
    missing: list[str] = field(default_factory=list)  # what is still not measured
    not_tried: list[str] = field(default_factory=list)  # left out on purpose, and why
    results_used: int = 0
    other_machines: int = 0  # stored results of this workload left out: another machine's
    busy: str | None = None  # the trials used that were timed on a busy machine (analysis/contention.py)
    db_url: str = ""
    run_id: str | None = None
    interrupted: bool = False
    runs: list[str] = field(default_factory=list)  # --run: the runs whose machine's results are used
    machine: str | None = None  # --run: that machine in words; None: this machine
    #: other machines holding results of the workload, each with the command recommending from them
    elsewhere: list[dict] = field(default_factory=list)
    measure_hint: str | None = None  # --no-run: what measures what is missing

    def to_dict(self) -> dict:
        """The JSON of `rigbench recommend --json`: the same lines as printed, with numbers."""
        return {"workload": self.workload, "devices": self.devices, "lines": [line.row() for line in self.lines],
                "ran": self.ran, "missing": self.missing, "not_tried": self.not_tried, "results_used": self.results_used,
                "other_machines": self.other_machines, "busy": self.busy, "db": self.db_url, "run_id": self.run_id,
                "interrupted": self.interrupted, "runs": self.runs, "machine": self.machine,
                "elsewhere": self.elsewhere, "measure_hint": self.measure_hint}


class Session:
    """Runs the missing trials of one recommendation under one run id, or lists them."""

    def __init__(self, store: Store, run_missing: bool, outcome: RecommendOutcome,
                 on_note: Callable[[str], None], on_trial_end: Callable[[Result], None],
                 on_trial_progress: Callable[[TrialSpec, str], None] = lambda spec, text: None):
        self.store, self.run_missing, self.outcome = store, run_missing, outcome
        self.on_note, self.on_trial_end, self.on_trial_progress = on_note, on_trial_end, on_trial_progress
        self.new: list[Result] = []
        self.run_id: str | None = None  # this recommendation's run: the outcome's once a result is stored in it

    def measure(self, what: str, why: str, specs: list[TrialSpec]) -> None:
        if not specs or self.outcome.interrupted:
            return
        if not self.run_missing:
            self.outcome.missing.append(f"{what} ({why})")
            return
        self.outcome.ran.append(f"{what}: {why}")
        self.on_note(f"running {what}: {why}")
        self.run_id = self.run_id or start_run(self.store)
        session = run_trials(specs, self.store, self.run_id,
                             on_trial_end=lambda _i, r: self.on_trial_end(r),
                             on_trial_progress=lambda i, text: self.on_trial_progress(specs[i], text))
        self.new += session.results
        if session.results:  # none: the run was never written ("run ... measured now" would name no run)
            self.outcome.run_id = self.run_id
        self.outcome.interrupted = session.interrupted


def compile_trials(run: Session, results: list[Result], ref: Workload, framework: str, device: str, batch: int,
                    bandwidth: float | None, spec: Callable[..., TrialSpec]) -> None:
    """torch.compile's modes for the device (default; on CUDA also reduce-overhead) at the chosen
    batch, where the step is overhead-bound (analysis/step_overhead.py) and no compiled trial of
    the device is stored: what removes per-step overhead is what can pay there."""
    if framework != "torch" or any(r.spec.compiled and r.spec.device == device for r in results):
        return
    line = rules.step_overhead_line(results, device, batch, ref.optimizer, bandwidth, compile_measured=False)
    if line is None or line.value != "overhead-bound":
        return
    modes = default_compile_modes(device, framework)
    run.measure(f"torch.compile {', '.join(modes)} on {device} at b{batch}",
                f"per-step overhead is {line.numbers['overhead_share']:.0%} of the step and compile was not measured",
                [spec(device, batch, compile=mode) for mode in modes])


def data_trials(run: Session, results: list[Result], ref: Workload, options: dict, framework: str,
                 device: str, batch: int, quick: bool, here: bool = True) -> None:
    """lr-find and a 1-epoch loader run, when missing and a real data set is here offline; where
    the results are another machine's (not `here`), what it lacks, whatever data sets are here."""
    needs_lr, loader = needs_lr_find(ref, results), needs_loader(results, device)
    if not (needs_lr or loader):
        return
    what, how = ("lr-find and the input pipeline", "train/lr-find") if needs_lr else ("the input pipeline", "train")
    if not here:
        lacks = ["no lr-find with a suggestion"] * needs_lr + [f"no `train --input loader` run on {device}"] * loader
        run.outcome.missing.append(f"{what} at b{batch} (stored: {', '.join(lacks)})")
        return
    dataset = offline_dataset(ref.name)
    if dataset is None:
        run.outcome.missing.append(f"{what}: {ref.name} has no real data set "
                                   f"here offline (rigbench {how} --dataset ... can download one)")
        return
    n = short_of(ref, options, dataset, batch)  # e.g. a stored trial's batch, which no flag chose
    if n is not None:  # the trials would end `unsupported`: said missing instead, with why
        run.outcome.missing.append(f"{what} at b{batch}: {dataset}, the data set here offline, has {n:,} training "
                                   f"samples, fewer than one batch (rigbench {'lr-find' if needs_lr else 'train'} "
                                   f"{ref.name} --dataset ... can download a larger one)")
        return
    base = dict(workload=ref.name, workload_options=options, framework=framework, device=device,
                batch_size=batch, measure=MeasureOptions(timeout_s=1800))
    if needs_lr:
        opts = LrFindOptions(dataset=dataset, **(LR_FIND_QUICK if quick else LR_FIND_FULL))
        run.measure(f"lr-find on {dataset} at b{batch}", "no stored lr-find with a suggestion",
                    [TrialSpec(**base, lr_find=opts)])
    if loader:
        subset = max(LOADER_QUICK_SAMPLES, 8 * batch) if quick else None
        train = TrainOptions(dataset=dataset, download=False, epochs=1, input_mode="loader", workers=0,
                             max_train_samples=subset)
        run.measure(f"1 epoch of train --input loader --workers 0 on {dataset}"
                    + (f" ({subset} samples)" if subset else "") + f" at b{batch}",
                    "no stored loader run: input and copy shares unknown", [TrialSpec(**base, train=train)])
