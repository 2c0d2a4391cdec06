"""The input-pipeline lines of a recommendation (analysis/recommend.py): loader workers, and what
bounds the step, from stored `train --input loader` runs (docs/STRATEGY.md, "The recommendation")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rigbench.analysis.recommend_model import Line, sps_text
from rigbench.spec import Result


def decide_pipeline(results: Sequence[Result], device: str, workload: str = "WORKLOAD") -> list[Line]:
    """Loader workers, and whether input waits, host-device copies or compute bound the step,
    from stored `train --input loader` runs on the device (the fastest run's figures)."""
    runs = [r for r in results if r.spec.train is not None and r.spec.train.input_mode == "loader"
            and r.spec.device == device and r.status == "ok" and r.metrics.input_fraction is not None]
    if not runs:
        how = f"rigbench train {workload} --input loader --workers N --device {device}"
        return [Line("loader_workers", None, f"loader workers: not measured ({how})", {}),
                Line("bound_by", None, f"input pipeline / copies: not measured ({how})", {})]
    best = max(runs, key=lambda r: r.metrics.samples_per_s or 0.0)
    m, workers = best.metrics, _workers(best)
    by_workers: dict[int, dict[str, Any]] = {}
    for r in runs:
        w = _workers(r)
        if w not in by_workers or (r.metrics.samples_per_s or 0) > (by_workers[w]["samples_per_s"] or 0):
            by_workers[w] = {"samples_per_s": r.metrics.samples_per_s, "input_fraction": r.metrics.input_fraction,
                             "copy_fraction": r.metrics.copy_fraction, "trial": r.id}
    text = (f"loader workers: {workers}, the fastest measured `--input loader` run (trial {best.id}, "
            f"{sps_text(m.samples_per_s)} in training, input waits {m.input_fraction:.1%} of its time)")
    input_fraction = m.input_fraction or 0.0  # set on every run kept above
    if len(by_workers) == 1 and input_fraction >= 0.1:
        text += f"; input waits are large: try `rigbench train {workload} --input loader --workers 2`"
    elif len(by_workers) == 1:
        text += "; only this worker count was measured"
    shares = {"input": input_fraction, "copy": m.copy_fraction or 0.0}
    shares["compute"] = max(0.0, 1.0 - shares["input"] - shares["copy"])
    bound = max(shares, key=lambda k: shares[k])
    copy_what = "host-to-device copies" if device != "cpu" else "uint8 -> float conversion (the CPU's 'copy')"
    bound_text = (f"input pipeline: the step is bound by {'compute' if bound == 'compute' else 'the input pipeline' if bound == 'input' else copy_what}: "
                  f"input waits {shares['input']:.1%}, {copy_what} {shares['copy']:.1%}, compute and the rest "
                  f"{shares['compute']:.1%} of training time (trial {best.id}, b{best.spec.batch_size}, {m.dataset})")
    return [Line("loader_workers", workers, text, {"by_workers": by_workers, "trial": best.id}),
            Line("bound_by", bound, bound_text, {**shares, "trial": best.id})]


def _workers(r: Result) -> int:
    return r.spec.train.workers if r.spec.train else 0
