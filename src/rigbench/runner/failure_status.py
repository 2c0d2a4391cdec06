"""How a trial's exception becomes its status and error (runner/child.py classifies every
failure it can see; the parent classifies the rest from the exit: launchers/steps.describe_exit).
"""

from __future__ import annotations

import math
import traceback
from typing import TYPE_CHECKING

from rigbench.child_report import ChildReport
from rigbench.errors import DivergedError, UnsupportedError, UsageError
from rigbench.frameworks import load_adapter
from rigbench.frameworks.run_records import TrainingDiverged, TrainingInterrupted
from rigbench.spec import TrialSpec

if TYPE_CHECKING:
    from rigbench.frameworks.base import FrameworkAdapter

#: Lines of traceback kept in a crash's error text.
TRACEBACK_LINES = 12


def classify(exc: BaseException, report: ChildReport, adapter: FrameworkAdapter | None,
             limit_bytes: int | None = None) -> None:
    """`exc`'s status and error in `report` (every failure becomes a status); `limit_bytes`: the
    trial's --memory-limit, named when an out-of-memory error says nothing itself."""
    if isinstance(exc, TrainingInterrupted):  # the run's finished epochs are in the report already
        report.status = "interrupted"
        report.error = (f"stopped by the user after {len(exc.run.epochs)} of {exc.epochs_planned} epochs; "
                        "the finished epochs are kept, the one in progress is not")
    elif isinstance(exc, TrainingDiverged):  # `step` counts epochs here; finished epochs are kept
        report.status, report.error = "diverged", str(exc)
        report.diverged_at_epoch = exc.step
        report.epochs = list(exc.epochs)
        # JSON has no NaN: the curve keeps the finite losses up to the divergence
        report.loss_curve = [x for x in exc.loss_curve if math.isfinite(x)]
    elif isinstance(exc, DivergedError):
        report.status, report.error = "diverged", str(exc)
        report.diverged_at_step = exc.step
    elif isinstance(exc, (UnsupportedError, UsageError)):
        report.status, report.error = "unsupported", str(exc)
    else:
        oom = isinstance(exc, MemoryError) or (adapter is not None and adapter.is_oom(exc))
        report.status = "oom" if oom else "crash"
        tail = traceback.format_exception(exc)[-TRACEBACK_LINES:]
        report.error = oom_text(exc, limit_bytes) if oom else "".join(tail).strip()


def oom_text(exc: BaseException, limit_bytes: int | None) -> str:
    """An out-of-memory error in words: the framework's own, or where it said nothing (JAX's
    bare MemoryError under a tight cap: the stored error was just 'MemoryError'), what ran out."""
    if str(exc):
        return str(exc)
    where = (f"under the --memory-limit cap ({limit_bytes / 2**20:.0f} MiB, an address-space cap: the "
             "framework's runtime and threads count against it too)" if limit_bytes else "")
    return f"{type(exc).__name__}: an allocation failed {where}".strip()


def loaded_adapter(spec: TrialSpec) -> FrameworkAdapter | None:
    """The trial's adapter to classify an exception with, if its module loads."""
    try:
        return load_adapter(spec.framework)
    except Exception:  # noqa: BLE001 - an unknown framework's failure is a crash
        return None
