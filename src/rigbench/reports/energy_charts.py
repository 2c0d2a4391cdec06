"""Energy charts, per workload: measured energy per sample against batch size, and speed against
energy (samples/s against J/sample) with the Pareto front marked (issue 13).

Only speed trials with a measured `energy_per_sample_j` are drawn (estimates are never stored
there), so on a machine that cannot read an energy counter the section does not appear.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence

from rigbench.analysis.energy import format_joules, has_energy, pareto_front
from rigbench.analysis.trials import speed, speed_figures
from rigbench.reports.chart_model import Chart, Series, hover_lines, workload_name, y_scale_for
from rigbench.reports.trial_lines import Legend, LineKey, colour_key, line_key, trial_hover
from rigbench.spec import Result

#: The Pareto front's colour: a reference drawn over the measured series, not one of them.
FRONT_COLOUR = "#333333"


def _joules(r: Result) -> float:
    return r.metrics.energy_per_sample_j or 0.0  # callers keep only has_energy trials


def _slug(name: str) -> str:
    """A workload name as a chart id part (a file name for the PNG): cnn, resnet-depth-56."""
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-") or "workload"


def _point_text(r: Result) -> str:
    return f"{format_joules(_joules(r))}/sample at {speed(r):,.1f} samples/s"


def _lines(members: Sequence[Result]) -> dict[LineKey, list[Result]]:
    """Trials grouped into lines (their configuration but for the batch size, and their run),
    each in batch order."""
    by_line: dict[LineKey, list[Result]] = defaultdict(list)
    for r in sorted(members, key=lambda r: (r.spec.batch_size, r.id or 0)):
        by_line[line_key(r)].append(r)
    return by_line


def energy_batch_chart(workload: str, members: Sequence[Result]) -> Chart:
    """J/sample against batch size, one line per device, precision, framework (and whatever
    else differs between the trials' configurations)."""
    legend = Legend(members, omit=("workload",))
    series = [Series(name=legend.label(rs[0]), colour_key=colour_key(rs[0]),
                     x=[r.spec.batch_size for r in rs], y=[_joules(r) for r in rs],
                     hover=[trial_hover(r, _point_text(r)) for r in rs])
              for rs in _lines(members).values()]
    return Chart(id=f"energy_batch_{_slug(workload)}", title=f"{workload}: energy per sample against batch size",
                 x_title="batch size", y_title="energy per sample (J, measured)", series=series, x_scale="log2",
                 note=legend.constant())


def energy_pareto_chart(workload: str, members: Sequence[Result]) -> Chart:
    """samples/s against J/sample, one marker series per line of `energy_batch_chart`, and the
    Pareto front: the trials no other trial beats on both time and energy per sample."""
    legend = Legend(members, omit=("workload",))
    series = [Series(name=legend.label(rs[0]), colour_key=colour_key(rs[0]),
                     x=[speed(r) for r in rs], y=[_joules(r) for r in rs],
                     hover=[trial_hover(r, _point_text(r)) for r in rs])
              for rs in _lines(members).values()]
    # both lower-is-better: seconds per sample (1 / samples/s) and joules per sample
    front = [members[i] for i in pareto_front([(1.0 / speed(r), _joules(r)) for r in members])]
    front.sort(key=lambda r: (speed(r), -_joules(r)))
    series.append(Series(name="Pareto front", x=[speed(r) for r in front], y=[_joules(r) for r in front],
                         hover=[hover_lines(f"Pareto front: {_point_text(r)}", r.spec.label(),
                                            "no other trial is both faster and lower in energy per sample")
                                for r in front], dash=True, colour=FRONT_COLOUR))
    # log where the speeds span more than 10x (a CPU beside a GPU), as the speed panels' y
    x_scale = y_scale_for([speed(r) for r in members])
    return Chart(id=f"energy_pareto_{_slug(workload)}",
                 title=f"{workload}: speed against energy per sample (Pareto front marked)",
                 x_title="samples/s", y_title="energy per sample (J, measured)", series=series,
                 kind="scatter", x_scale=x_scale, note=legend.constant())


def energy_charts(results: Sequence[Result]) -> list[Chart]:
    """Per workload (in name order) with measured energy: J/sample against batch size, and
    samples/s against J/sample with the Pareto front."""
    by_workload: dict[str, list[Result]] = defaultdict(list)
    for r in speed_figures(results):
        if has_energy(r):
            by_workload[workload_name(r)].append(r)
    charts = []
    for workload in sorted(by_workload):
        charts += [energy_batch_chart(workload, by_workload[workload]),
                   energy_pareto_chart(workload, by_workload[workload])]
    return charts
