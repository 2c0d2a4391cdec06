"""Data-parallel scaling: efficiency against the number of processes, measured beside the
prediction from one process plus the measured gradient all-reduce (analysis/process_scaling.py
computes both; `rigbench scaling --processes` prints the same rows)."""

from __future__ import annotations

from collections.abc import Sequence

from rigbench.analysis.process_scaling import process_scaling_rows
from rigbench.reports.chart_model import Chart, Series, hover_lines, workload_name
from rigbench.reports.trial_lines import speed_trials
from rigbench.spec import Result


def _studies(results: Sequence[Result]) -> dict[tuple, list[Result]]:
    """Each multi-process trial with the one-process trial it scales from: weak scaling when a
    one-process trial has its per-rank batch, else strong scaling when one has its global batch.
    Key: (workload, framework, device, precision, mode, the one-process batch)."""
    trials = speed_trials(results)
    singles = {(workload_name(r), r.spec.framework, r.spec.device, r.spec.precision, r.spec.batch_size): r
               for r in sorted(trials, key=lambda r: r.id or 0) if r.spec.world_size == 1}
    studies: dict[tuple, list[Result]] = {}
    for r in trials:
        if r.spec.world_size == 1:
            continue
        head = (workload_name(r), r.spec.framework, r.spec.device, r.spec.precision)
        for mode, batch in (("weak", r.spec.batch_size), ("strong", r.spec.batch_size * r.spec.world_size)):
            base = singles.get((*head, batch))
            if base is not None:
                studies.setdefault((*head, mode, batch), [base]).append(r)
                break
    return studies


def process_charts(results: Sequence[Result]) -> list[Chart]:
    """One line of measured efficiency and a dashed one of predicted efficiency per study."""
    series: list[Series] = []
    for (workload, framework, device, precision, mode, batch), trials in sorted(_studies(results).items()):
        rows = [row for row in process_scaling_rows(trials) if row.efficiency is not None]
        name = f"{workload} · {framework} · {device} · {precision} · {mode} from b{batch}"
        series.append(Series(name=name, x=[row.processes for row in rows], y=[row.efficiency or 0.0 for row in rows],
                             hover=[hover_lines(f"{row.processes} processes: efficiency {row.efficiency:.2f}",
                                                f"{row.samples_per_s:,.1f} samples/s, global batch {row.global_batch}",
                                                f"comm share {row.comm_share:.0%}" if row.comm_share is not None else "",
                                                f"trial {row.trial_id}") for row in rows]))
        predicted = [row for row in rows if row.predicted_efficiency is not None]
        series.append(Series(name=f"{name} (predicted)", x=[row.processes for row in predicted],
                             y=[row.predicted_efficiency or 0.0 for row in predicted], dash=True,
                             hover=[hover_lines(f"predicted: efficiency {row.predicted_efficiency:.2f}",
                                                "one process + the measured gradient all-reduce, no overlap")
                                    for row in predicted]))
    if not series:
        return []
    return [Chart(id="processes", title="Data-parallel scaling: efficiency against processes",
                  x_title="processes", y_title="efficiency (speed-up / processes)", series=series, x_scale="log2",
                  note="1.0 = linear scaling; dashed: predicted from one process plus the measured all-reduce")]
