"""The single-process references of the data-parallel tests (tests/data_parallel.py), computed in
one plain process: `python -m tests.dp_reference FRAMEWORK [BATCH...] [--trial SPEC_JSON]...`,
run from the repository root (tests/data_parallel.one_process starts it).

For each batch size it builds the trainer a rank builds (runner/child.py: the adapter's
environment and thread pools first, then `adapter.build` of the shaped workload) but with
world size 1 and no collective, runs the speed protocol a rank runs (runner/rank.measure_rank:
runner/protocol.measure, its step counts agreed, here by a world of one with itself), and
takes the parameters' fingerprint. It shares no data-parallel code with the ranks it checks.
Each `--trial` is then run whole in this process as a world-size-1 child runs it
(child.run_trial), e.g. a real-data training run.

Prints one JSON line last: {"param_sums": {BATCH: [per-tensor sums]}, "steps": {BATCH: [warm-up
steps, timed steps]}, "reports": [each trial's ChildReport]}.
Nothing is cached: every call computes afresh.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from rigbench.frameworks import load_adapter
from rigbench.runner.child import run_trial
from rigbench.runner.protocol import measure
from rigbench.spec import TrialSpec
from rigbench.workloads import get_workload, shaped
from tests.data_parallel import dp_spec


def param_sums(framework: str, batch_sizes: list[int]) -> tuple[dict[int, list[float]], dict[int, list[int]]]:
    """Per-tensor parameter sums after the rank's protocol (FIXED_STEPS: 2 warm-up, 5 timed
    steps) of one plain process at each of `batch_sizes`, built one after another here; and
    the steps each ran (warm-up, timed)."""
    specs = [dp_spec(1, framework, batch_size=batch) for batch in batch_sizes]
    adapter = load_adapter(framework)
    # Once, before the framework starts (child._run): every spec asks for the same environment and threads.
    os.environ.update(adapter.environment(specs[0]))
    adapter.prepare(specs[0].threads)
    sums, steps = {}, {}
    for spec in specs:
        trainer = adapter.build(spec, shaped(get_workload(spec.workload), spec.workload_options))
        m = measure(trainer, spec.measure, agree=lambda count: count)  # a world of one agrees with itself
        _, sums[spec.batch_size] = trainer.parameter_fingerprint()
        steps[spec.batch_size] = [m.warmup_steps, len(m.step_times_s)]
    return sums, steps


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.dp_reference")
    parser.add_argument("framework")
    parser.add_argument("batch_sizes", type=int, nargs="*")
    parser.add_argument("--trial", action="append", default=[], help="a TrialSpec's JSON, run whole")
    args = parser.parse_args(argv)
    sums, steps = param_sums(args.framework, args.batch_sizes) if args.batch_sizes else ({}, {})
    reports = [json.loads(run_trial(TrialSpec.model_validate_json(text)).model_dump_json()) for text in args.trial]
    print(json.dumps({"param_sums": sums, "steps": steps, "reports": reports}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
