"""`rigbench calibrate`, child side: `python -m rigbench.runner.calibrate REQUEST_JSON OUT_PATH`.

Imports the framework adapter, applies its environment and `prepare(threads)` as a trial's
child does, then runs the shared calibration (frameworks/driver/calibration.calibrate) on the
adapter's `calibration_kernels(device)`, and writes the measurements as JSON to OUT_PATH
(atomically); progress lines go to stderr, each starting with PROGRESS_PREFIX. The parent side
is experiments/calibrate.py.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING

from rigbench.errors import UsageError

if TYPE_CHECKING:
    from rigbench.frameworks.base import Calibration

#: Marks a progress line on the child's stderr (the parent passes the rest on).
PROGRESS_PREFIX = "progress: "


def main(argv: list[str]) -> int:
    from rigbench.frameworks import load_adapter
    from rigbench.frameworks.driver import calibration
    from rigbench.runner.child import exit_with_parent

    exit_with_parent()
    request, out_path = json.loads(argv[0]), argv[1]
    adapter = load_adapter(request["framework"])
    from rigbench.spec import TrialSpec

    # the framework starts as in a trial (thread pools, allocator, Keras' backend)
    os.environ.update(adapter.environment(TrialSpec(workload="mlp", batch_size=1, framework=request["framework"],
                                                    threads=request["threads"])))

    def progress(text: str) -> None:
        print(PROGRESS_PREFIX + text, file=sys.stderr, flush=True)

    adapter.prepare(request["threads"])  # before anything starts the framework's runtime
    try:
        kernels = adapter.calibration_kernels(request["device"])
        found: Calibration | dict[str, str] = calibration.calibrate(kernels, request["device"], request["precisions"],
                                                              quick=request["quick"], on_progress=progress)
    except UsageError as exc:  # e.g. a device this framework does not have: the parent says so
        found = {"usage_error": str(exc)}
    tmp = out_path + ".part"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(found, fh)
    os.replace(tmp, out_path)  # the parent never reads a half-written file
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
