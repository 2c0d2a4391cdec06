"""Faults of a user stopping rigbench, for benchmarks/faults.py: Ctrl-C and SIGTERM to a sweep
during its second trial, and Ctrl-C to a training run after its first epochs.

The promise is the suite's, plus the interrupt's own (README): every finished trial stays
stored, a training run keeps its finished epochs (status `interrupted`), one line says what was
kept, the exit code is 128 + the signal, and no trial process outlives its driver.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

from faults_lib import QUICK, Outcome, Seed, finish, left_over, serves, start, statuses, wait_for_child

Fault = Callable[[Seed, Path], Outcome]
SIGNAL_FAULTS: dict[str, Fault] = {}
SWEEP = ["mlp", *QUICK, "--batch-size", "8,16"]


def interrupt_sweep(sig: signal.Signals, name: str) -> Fault:
    """`sig` to the sweep driver during its second trial: the first stays, exit 128 + sig."""
    def run(seed: Seed, work: Path) -> Outcome:
        db = work / "faults.db"
        proc = start("sweep", *SWEEP, "--db", str(db))
        kids = wait_for_child(proc, db, results=1, settle_s=1)
        alive = [k.pid for k in kids if k.is_running()]
        stored_then = len(statuses(db))
        proc.send_signal(sig)
        cmd = finish(proc, 120)
        did = (f"{sig.name} to the sweep driver during its 2nd trial ({stored_then} stored, trial pid "
               f"{alive[0] if alive else 'gone'} at the signal)" if kids else f"{sig.name} (no 2nd trial seen)")
        out = Outcome(did, [cmd], statuses(db), must_keep=stored_then, rc=cmd.rc)
        if cmd.rc != 128 + sig:
            out.notes.append(f"exit {cmd.rc}, not {128 + sig}: the interrupt was not acted on")
        for said in (f"interrupted ({name})", "Resume with:"):
            if said not in cmd.err:
                out.notes.append(f"no {said!r} line")
        left_over(kids, out)
        serves(db, work, out)
        return out
    return run


SIGNAL_FAULTS["ctrl-c"] = interrupt_sweep(signal.SIGINT, "Ctrl-C")
SIGNAL_FAULTS["sigterm"] = interrupt_sweep(signal.SIGTERM, "SIGTERM")


def ctrl_c_train(seed: Seed, work: Path) -> Outcome:
    """Ctrl-C to `rigbench train mlp` on digits a few seconds into its epochs: the finished
    epochs are stored as one result with status `interrupted`."""
    db = work / "faults.db"
    proc = start("train", "mlp", "--dataset", "digits", "-d", "cpu", "--epochs", "1000", "--threads", "1",
                 "--db", str(db))
    kids = wait_for_child(proc, db, settle_s=12)  # digits' epochs take about a second each here
    proc.send_signal(signal.SIGINT)
    started = time.time()
    cmd = finish(proc, 120)
    out = Outcome(f"SIGINT to `rigbench train` 12 s into its trial (answered in {time.time() - started:.1f} s)",
                  [cmd], statuses(db), must_keep=1, rc=cmd.rc)
    if out.stored != ["interrupted"]:
        out.notes.append(f"stored {out.stored}, not one `interrupted` result with the finished epochs")
    if cmd.rc != 130 or "the finished epochs are stored as trial" not in cmd.err:
        out.notes.append(f"exit {cmd.rc}; the line saying what was kept is missing")
    left_over(kids, out)
    serves(db, work, out)
    return out


SIGNAL_FAULTS["ctrl-c-train"] = ctrl_c_train
