"""The library API. The CLI is a thin layer over these functions.

    from rigbench import api
    specs = api.plan_run(workloads=["cnn"], devices=["cpu"], batch_sizes=[32, 128])
    outcome = api.run(specs, db="results.db")

The orchestration over many trials lives one layer down in `rigbench.experiments` (plans,
runs, sweeps, max-batch, lr-find, scaling, recommend, calibrate) and is offered here under
the same names; the modules of this package add what only reads: `info` (workloads,
devices), `results` (choosing stored results, the report), `calibration` (roofline),
`comparison` (published tables, compare, bundles), `scoring` (the score).

Each name is imported where it lives on first use (`__getattr__` below), not with the package:
the `rigbench` command imports this package for every command, and `rigbench --help` or
`rigbench results list` would otherwise import the database driver, numpy and every strategy
before printing a line (docs/ARCHITECTURE.md, "Decisions").
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the same names as _HOMES, for the type checker (tests/unit/test_api.py compares them)
    from rigbench.analysis.roofline import result_roofline
    from rigbench.analysis.specs import spec_sheet
    from rigbench.analysis.speedups import speedups_over_cpu
    from rigbench.api.calibration import overhead_bound_notes, roofline
    from rigbench.api.comparison import (
        CompareOutcome,
        compare,
        compare_frameworks,
        compare_published,
        export_bundle,
        import_bundle,
        other_machines_results,
        this_machine_results,
    )
    from rigbench.api.info import workloads_info
    from rigbench.api.results import (
        WHERE_KEYS,
        ReportOutcome,
        parse_where,
        report,
        select_results,
        where_columns,
        where_matches,
    )
    from rigbench.api.scoring import ScoreOutcome, score
    from rigbench.errors import UsageError
    from rigbench.experiments.calibrate import CalibrateOutcome, calibrate
    from rigbench.experiments.devices import chosen_devices, devices_info, framework_devices
    from rigbench.experiments.execute import RunOutcome, run
    from rigbench.experiments.lr_find import check_lr_find_workload, plan_lr_find
    from rigbench.experiments.max_batch import MaxBatchOutcome, find_max_batch
    from rigbench.experiments.plan import (
        check_rounds,
        check_thread_count,
        in_rounds,
        node_launch,
        plan_run,
        plan_train,
        prepare_data,
    )
    from rigbench.experiments.recommend import RecommendOutcome, recommend
    from rigbench.experiments.scaling import (
        default_precisions,
        default_thread_counts,
        plan_process_scaling,
        plan_scaling,
    )
    from rigbench.experiments.sweep import SweepOutcome, plan_sweep, sweep
    from rigbench.runner.launchers.agent import threads_per_rank, threads_per_rank_line
    from rigbench.spec import MeasureOptions, Result, TrialSpec
    from rigbench.store import Store
    from rigbench.store.calibrations import device_calibrations

#: Where each public name lives, imported from there on first use.
_HOMES: dict[str, tuple[str, ...]] = {
    "rigbench.analysis.roofline": ("result_roofline",),
    "rigbench.analysis.specs": ("spec_sheet",),
    "rigbench.analysis.speedups": ("speedups_over_cpu",),
    "rigbench.api.calibration": ("overhead_bound_notes", "roofline"),
    "rigbench.api.comparison": ("CompareOutcome", "compare", "compare_frameworks", "compare_published", "export_bundle",
                                "import_bundle", "other_machines_results", "this_machine_results"),
    "rigbench.api.info": ("workloads_info",),
    "rigbench.api.results": ("WHERE_KEYS", "ReportOutcome", "parse_where", "report", "select_results", "where_columns",
                             "where_matches"),
    "rigbench.api.scoring": ("ScoreOutcome", "score"),
    "rigbench.errors": ("UsageError",),
    "rigbench.experiments.calibrate": ("CalibrateOutcome", "calibrate"),
    "rigbench.experiments.devices": ("chosen_devices", "devices_info", "framework_devices"),
    "rigbench.experiments.execute": ("RunOutcome", "run"),
    "rigbench.experiments.lr_find": ("check_lr_find_workload", "plan_lr_find"),
    "rigbench.experiments.max_batch": ("MaxBatchOutcome", "find_max_batch"),
    "rigbench.experiments.plan": ("check_rounds", "check_thread_count", "in_rounds", "node_launch", "plan_run",
                                  "plan_train", "prepare_data"),
    "rigbench.experiments.recommend": ("RecommendOutcome", "recommend"),
    "rigbench.experiments.scaling": ("default_precisions", "default_thread_counts", "plan_process_scaling",
                                     "plan_scaling"),
    "rigbench.experiments.sweep": ("SweepOutcome", "plan_sweep", "sweep"),
    "rigbench.runner.launchers.agent": ("threads_per_rank", "threads_per_rank_line"),
    "rigbench.spec": ("MeasureOptions", "Result", "TrialSpec"),
    "rigbench.store": ("Store",),
    "rigbench.store.calibrations": ("device_calibrations",),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [  # noqa: RUF022  (grouped by concern, not sorted)
    # running trials (experiments/plan.py, execute.py)
    "plan_run", "in_rounds", "check_rounds", "check_thread_count", "run", "RunOutcome", "plan_train", "prepare_data", "threads_per_rank",
    "threads_per_rank_line", "node_launch",
    # this machine (api/info.py, experiments/devices.py)
    "workloads_info", "devices_info", "framework_devices", "chosen_devices",
    # stored results and the report (api/results.py)
    "WHERE_KEYS", "parse_where", "where_columns", "where_matches", "select_results", "report", "ReportOutcome", "speedups_over_cpu",
    # strategies over many trials (experiments/)
    "sweep", "plan_sweep", "SweepOutcome", "find_max_batch", "MaxBatchOutcome",
    "plan_lr_find", "check_lr_find_workload", "plan_scaling", "plan_process_scaling", "default_thread_counts", "default_precisions",
    "recommend", "RecommendOutcome",
    # ceilings (experiments/calibrate.py, api/calibration.py)
    "calibrate", "CalibrateOutcome", "device_calibrations", "spec_sheet", "result_roofline", "roofline", "overhead_bound_notes",
    # against known results (api/comparison.py, api/scoring.py)
    "this_machine_results", "other_machines_results", "compare_published", "compare_frameworks", "compare", "CompareOutcome",
    "export_bundle", "import_bundle", "score", "ScoreOutcome",
    # the types the functions take and give
    "UsageError", "TrialSpec", "MeasureOptions", "Result", "Store",
]


def __getattr__(name: str) -> Any:
    """A public name on first use (PEP 562), kept here after it: the module's own attribute then."""
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_HOME[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
