"""Data-parallel scaling: efficiency against the number of processes, measured beside the
prediction from one process plus the measured gradient all-reduce (analysis/process_scaling.py
computes both; `rigbench scaling --processes` prints the same rows)."""

from __future__ import annotations

from collections.abc import Sequence

from rigbench.analysis.process_scaling import process_scaling_rows, studies
from rigbench.reports.chart_model import Chart, Series, hover_lines
from rigbench.spec import Result


def process_charts(results: Sequence[Result]) -> list[Chart]:
    """One line of measured efficiency and a dashed one of predicted efficiency per study."""
    series: list[Series] = []
    for (workload, framework, device, precision, mode, batch), trials in sorted(studies(results).items()):
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
