"""The roofline (achieved FLOP/s against arithmetic intensity, with each device's ceilings) and
measured against spec-predicted throughput (the roofline's ceiling over the trial's FLOPs per
sample). Both colour by network (one legend entry per workload) and state the rest once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rigbench.analysis.roofline import Roof, mfu_warning, result_roofline
from rigbench.analysis.trials import network_label, speed_figures
from rigbench.reports.cells import share
from rigbench.reports.chart_model import Chart, Series, hover_lines
from rigbench.reports.trial_lines import Legend, LineKey, line_key, trial_hover
from rigbench.spec import Result

#: The roofline's height in pixels: log-log axes over several decades need room (issue 14).
ROOFLINE_HEIGHT = 480

#: Ceiling colours: spec-sheet roofs dark, calibrated (measured here) roofs light.
ROOF_COLOURS = {"spec": "#333333", "calibrated": "#b0b0b0"}


def _roof_series(source: str, device: str, precision: str, peak: float | None,
                 bandwidth: float | None, lo: float, hi: float, style: int = 0) -> Series | None:
    """The ceiling min(peak, x * bandwidth) over [lo, hi] as a dashed line (a flat or
    diagonal line when only one of them is known), in the device's `style` of dash."""
    if peak is None and bandwidth is None:
        return None
    xs = [lo, hi]
    if peak is not None and bandwidth is not None and lo < peak / bandwidth < hi:
        xs = [lo, peak / bandwidth, hi]  # the ridge point
    ys = [min(v for v in (peak, None if bandwidth is None else x * bandwidth) if v is not None) for x in xs]
    label = "spec sheet" if source == "spec" else "calibrated"
    what = ", ".join(t for t in (f"peak {peak / 1e12:.3g} TFLOP/s" if peak else "",
                                 f"bandwidth {bandwidth / 1e9:.3g} GB/s" if bandwidth else "") if t)
    return Series(name=f"{label} roof · {device} · {precision}", x=xs, y=ys, dash=True,
                  colour=ROOF_COLOURS[source], style=style,
                  hover=[hover_lines(f"{label} ceiling {y / 1e12:.3g} TFLOP/s at {x:.3g} FLOP/byte",
                                     f"{device} {precision}: {what}") for x, y in zip(xs, ys)])


def roofline_charts(results: Sequence[Result], calibrations: dict[str, dict[str, Any]]) -> list[Chart]:
    """Achieved FLOP/s against arithmetic intensity on log-log axes, one line per
    workload/framework/device (points in batch order), and each device's ceilings."""
    points = []
    for r in speed_figures(results):
        roof = result_roofline(r, calibrations.get(r.device_name or ""))
        if roof.achieved_flops and roof.intensity:
            points.append((r, roof, roof.intensity, roof.achieved_flops))
    if not points:
        return []
    # one legend entry and colour per network: devices and precisions are many here, and the
    # ceilings and the hover name them
    legend = Legend([r for r, *_ in points], omit=("workload", "workload_revision"))
    by_line: dict[LineKey, Series] = {}
    for r, roof, intensity, flops in sorted(points, key=lambda p: (p[0].spec.batch_size, p[0].id or 0)):
        s = by_line.setdefault(line_key(r), Series(name=network_label(r)))
        s.x.append(intensity)
        s.y.append(flops)
        mfu = [f"MFU {share(src.mfu)} of the {src.source} {r.spec.precision} peak"
               for src in (roof.spec, roof.calibrated) if src is not None and src.mfu is not None]
        s.hover.append(trial_hover(r, f"{flops / 1e12:.3g} TFLOP/s at "
                                      f"{intensity:.3g} FLOP/byte" + (" · " + "; ".join(mfu) if mfu else ""))
                       + "".join("<br>" + hover_lines(f"WARNING: {w}") for w in roof.warnings)
                       + ("<br>" + hover_lines("above its estimated memory roof: the bytes estimate is too high for "
                                               "this trial, its real FLOP/byte higher") if roof.above_memory_roof else ""))
    roofs: dict[tuple[str, str, str], tuple[float | None, float | None]] = {}
    worst: dict[tuple[str, str, str], Roof] = {}  # the highest MFU above 100% per roof
    for r, roof, *_ in points:
        for src in (roof.spec, roof.calibrated):
            if src is None or src.mfu is None or not mfu_warning(src, r.spec.precision):
                continue
            key = (r.device_name or r.spec.device, r.spec.precision, src.source)
            if key not in worst or src.mfu > (worst[key].mfu or 0.0):
                worst[key] = src
    for r, roof, *_ in points:
        for src in (roof.spec, roof.calibrated):
            if src is not None:
                roofs[(src.source, r.device_name or r.spec.device, r.spec.precision)] = (src.peak_flops, src.bandwidth_bytes_s)
    xs = [intensity for _, _, intensity, _ in points] + [p / b for p, b in roofs.values() if p and b]
    lo, hi = min(xs) / 4, max(xs) * 4
    # the source sets the shade (spec sheet dark, calibrated light), the device the dash: an
    # H100's and an H200's roofs of one source were drawn alike
    devices = sorted({device for _, device, _ in roofs})
    ceilings = [c for (source, device, precision), (peak, bw) in sorted(roofs.items())
                if (c := _roof_series(source, device, precision, peak, bw, lo, hi, devices.index(device))) is not None]
    # An MFU above 100% is stated on the chart itself, not only in a hover: the roof is wrong.
    warnings = "; ".join(f"{device}: {mfu_warning(src, precision)}" for (device, precision, _), src in sorted(worst.items()))
    return [Chart(id="roofline", title="Roofline: achieved FLOP/s against arithmetic intensity"
                  + (f" · WARNING: {warnings}" if warnings else ""),
                  x_title="arithmetic intensity (FLOP per byte, estimated traffic)",
                  y_title="achieved FLOP/s (counted FLOPs)", series=[*by_line.values(), *ceilings],
                  x_scale="log", y_scale="log", note=legend.constant(), height=ROOFLINE_HEIGHT)]




def predicted_charts(results: Sequence[Result], calibrations: dict[str, dict[str, Any]]) -> list[Chart]:
    """Measured samples/s against the roofline's prediction for each trial (the spec sheet's
    ceiling, else the calibrated one, at the trial's intensity, over its FLOPs per sample),
    with the line where they are equal: how far each trial stays below what its hardware's
    spec promises."""
    points = []
    for r in speed_figures(results):
        roof = result_roofline(r, calibrations.get(r.device_name or ""))
        ceiling = next((src for src in (roof.spec, roof.calibrated) if src is not None and src.ceiling_flops), None)
        if ceiling is not None and r.metrics.flops_per_sample and r.metrics.samples_per_s:
            points.append((r, ceiling, ceiling.ceiling_flops / r.metrics.flops_per_sample))  # type: ignore[operator]
    if not points:
        return []
    legend = Legend([r for r, *_ in points], omit=("workload", "workload_revision"))
    by_label: dict[str, Series] = {}
    for r, ceiling, predicted in sorted(points, key=lambda p: p[0].id or 0):
        s = by_label.setdefault(network_label(r), Series(name=network_label(r)))
        measured = r.metrics.samples_per_s or 0.0
        s.x.append(predicted)
        s.y.append(measured)
        s.hover.append(trial_hover(r, f"{measured:,.1f} samples/s measured, {predicted:,.0f} predicted "
                                      f"({measured / predicted:.1%}) by the {ceiling.source} "
                                      f"{ceiling.bound or 'ceiling'} roof"))
    values = [v for s in by_label.values() for v in (*s.x, *s.y)]
    lo, hi = min(values) / 2, max(values) * 2
    equal = Series(name="measured = predicted", x=[lo, hi], y=[lo, hi], dash=True,
                   hover=[hover_lines("measured = predicted")] * 2)
    return [Chart(id="predicted", title="Measured against spec-predicted throughput",
                  x_title="predicted samples/s (roofline ceiling / FLOPs per sample)",
                  y_title="measured samples/s", series=[*by_label.values(), equal], kind="scatter",
                  x_scale="log", y_scale="log", note=legend.constant(), height=ROOFLINE_HEIGHT)]
