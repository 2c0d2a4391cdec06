"""`rigbench calibrate`, parent side: measure each device in a child process, store it.

The child is `python -m rigbench.runner.calibrate REQUEST_JSON OUT_PATH` (runner/calibrate.py):
it imports the framework adapter and runs the shared calibration
(frameworks/driver/calibration.calibrate) on the adapter's `calibration_kernels`, then writes
the measurements as JSON to OUT_PATH; progress lines go to its stderr. As for trials, the framework (and a GPU
context) never enters the CLI's process.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rigbench.errors import UsageError
from rigbench.experiments.devices import chosen_devices
from rigbench.experiments.execute import new_run_id, start_run
from rigbench.experiments.plan import check_thread_count
from rigbench.runner.calibrate import PROGRESS_PREFIX
from rigbench.runner.launchers.steps import new_session_args, trial_folder
from rigbench.runner.session import interrupts_held
from rigbench.spec import PRECISIONS
from rigbench.store import Store
from rigbench.store.calibrations import add_calibration
from rigbench.timestamps import now_iso
from rigbench.trackers.sampler import Tracker
from rigbench.trackers.summary import summarize

#: A full calibration of a slow device (a CPU doing fp16 without hardware support) takes
#: about a minute; this only stops a hung child.
CALIBRATE_TIMEOUT_S = 1800.0


def calibrate_in_child(framework: str, device: str, precisions: Sequence[str], quick: bool = False,
                       threads: int | None = None, on_progress: Callable[[str], None] | None = None,
                       timeout_s: float = CALIBRATE_TIMEOUT_S) -> dict[str, Any]:
    """One device's calibration dict from a child process; on failure a dict with `error`
    (the child's last stderr line) and no measurements. A device the framework does not
    have is a UsageError (the child checks it; `calibrate` has checked every named one first)."""
    request = {"framework": framework, "device": device, "precisions": list(precisions),
               "quick": quick, "threads": threads}
    # a trial's folder: named by this process, so a later command removes it should this one be killed
    with trial_folder() as tmp:
        out_path = Path(tmp) / "calibration.json"
        cmd = [sys.executable, "-m", "rigbench.runner.calibrate", json.dumps(request), str(out_path)]
        # errors=replace: a native library's bytes the locale cannot decode end no calibration
        # a session of its own, as a trial's child: Ctrl-C reaches only this process, which ends it
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace",
                                **new_session_args())
        # Other processes' CPU share while the child measured: a peak taken on a busy machine is
        # too low, and every MFU against it too high (analysis/contention.py).
        tracker = Tracker(proc.pid, interval=0.1, rapl_root=None)
        tracker.start()
        timer = threading.Timer(timeout_s, proc.kill)
        timer.start()
        other: list[str] = []
        try:
            for line in proc.stderr:  # type: ignore[union-attr]
                line = line.rstrip("\n")
                if line.startswith(PROGRESS_PREFIX):
                    if on_progress:
                        on_progress(line[len(PROGRESS_PREFIX):])
                elif line.strip():
                    other.append(line)
            proc.wait()
        finally:
            timer.cancel()
            if proc.poll() is None:  # Ctrl-C in the parent: do not leave the child measuring
                proc.kill()
                proc.wait()
            samples = tracker.stop()
        if out_path.exists() and proc.returncode == 0:
            found = json.loads(out_path.read_text(encoding="utf-8"))
            if "usage_error" in found:
                raise UsageError(found["usage_error"])
            # the tracker's own summary over the child's whole life
            found["others_cpu_pct_mean"] = summarize(samples, -math.inf, math.inf)["others_cpu_pct_mean"]
            found["framework"] = framework  # which one measured it (store/calibrations.measured_by)
            return found
    if proc.returncode in (-9, 137) and not other:
        why = f"killed after {timeout_s:.0f} s" if timer.finished.is_set() else "killed (signal 9)"
    else:
        why = other[-1] if other else f"exit code {proc.returncode}"
    return {"device": device, "device_name": None, "measurements": [], "error": why}


def calibrate_devices(store: Store, add_run: Callable[[], str], created_at: Callable[[], str],
                      framework: str, devices: Sequence[str], precisions: Sequence[str],
                      quick: bool = False, threads: int | None = None,
                      on_device: Callable[[str], None] | None = None,
                      on_progress: Callable[[str], None] | None = None,
                      ) -> tuple[list[dict[str, Any]], bool, str | None]:
    """Calibrate each device in turn (one child each), storing each as soon as it is measured
    under the run that `add_run()` records (once, before the first calibration is stored).
    Returns the calibrations, whether Ctrl-C (or the CLI's SIGTERM) stopped the work, and the
    device it stopped half-way (not stored; None: it came between two)."""
    done: list[dict[str, Any]] = []
    run_id = None
    for device in devices:
        try:
            if on_device:
                on_device(device)
            found = calibrate_in_child(framework, device, precisions, quick, threads, on_progress)
            with interrupts_held():  # a finished calibration is stored and counted whole
                if not found.get("error"):
                    run_id = run_id or add_run()
                    add_calibration(store, run_id, created_at(), found)
                done.append(found)
        except KeyboardInterrupt:
            return done, True, None if done and done[-1]["device"] == device else device
    return done, False, None


@dataclass
class CalibrateOutcome:
    """What `calibrate` measured: one dict per device (frameworks/driver/calibration.calibrate's,
    or {"device", "error"} when its child failed), stored under `run_id` (no run is recorded
    when nothing was measured)."""

    run_id: str
    db_url: str
    calibrations: list[dict[str, Any]]
    devices: int = 0  # how many were to be calibrated
    interrupted: bool = False  # by Ctrl-C (or the CLI's SIGTERM): the calibrations listed are stored
    stopped: str | None = None  # the device in progress at the interrupt: not stored


def calibrate(devices: Sequence[str] = (), precisions: Sequence[str] = (), quick: bool = False,
              threads: int | None = None, framework: str = "torch", db: str | None = None,
              command: str | None = None, on_device: Callable[[str], None] | None = None,
              on_progress: Callable[[str], None] | None = None) -> CalibrateOutcome:
    """Measure each device's ceilings (peak matmul FLOP/s per precision, memory and host<->device
    bandwidth) in a child process and store them; default: every device, every precision."""
    for p in precisions:
        if p not in PRECISIONS:
            raise UsageError(f"--precision takes {', '.join(PRECISIONS)}, got {p!r}")
    if threads is not None and threads < 1:
        raise UsageError("--threads must be at least 1")
    check_thread_count(threads)
    # Every named device is checked before the first is measured (a probe process, unless only the
    # CPU is named): left to each device's child, a typo in `-d cpu,cuda:9` was found a minute in.
    chosen = list(dict.fromkeys(chosen_devices(framework, devices, default=None)))
    store = Store(db)
    run_id = new_run_id()

    def add_run() -> str:
        return start_run(store, command, run_id, deferred=False)  # called before its first calibration is stored

    done, interrupted, stopped = calibrate_devices(
        store, add_run, now_iso, framework, chosen, list(precisions) or list(PRECISIONS), quick=quick,
        threads=threads, on_device=on_device, on_progress=on_progress)
    return CalibrateOutcome(run_id, store.url, done, len(chosen), interrupted, stopped)
