"""The report's sections, in page order, and the builders that fill them.

The HTML report (`html.py`, plotly) and the PNG export (`png.py`, matplotlib) draw the same
`Chart` objects (`chart_model.py`), so both always show the same numbers. The builders live by
concern: `batch_charts.py` (speed and resources against batch size, one panel per workload),
`scaling_charts.py` (GPU:CPU with the published ratios, precision, threads, compile, layout),
`roofline_charts.py` (roofline, measured against predicted), `training_charts.py`,
`energy_charts.py`. Every series is named by what varies (`trial_lines.Legend`) and coloured
by its name, the same colour in every chart (`chart_model.assign_colours`). Nothing here
imports an optional dependency. A section whose builders return no chart is left out of the
page: charts for data that does not exist are never drawn empty.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rigbench.analysis.trials import Machines
from rigbench.reports.batch_charts import METRICS, metric_chart
from rigbench.reports.chart_model import Chart, Section, assign_colours
from rigbench.reports.energy_charts import energy_charts
from rigbench.reports.framework_charts import framework_charts
from rigbench.reports.process_charts import process_charts
from rigbench.reports.roofline_charts import predicted_charts, roofline_charts
from rigbench.reports.scaling_charts import (
    compile_layout_charts,
    precision_charts,
    speedup_charts,
    thread_charts,
)
from rigbench.reports.training_charts import epoch_curve_charts, train_knob_charts
from rigbench.spec import Result


def speed_charts(results: Sequence[Result]) -> list[Chart]:
    """Training speed against batch size, one panel per workload, knees marked."""
    chart = metric_chart(results, METRICS[0])
    return [chart] if chart else []


def resource_charts(results: Sequence[Result]) -> list[Chart]:
    """CPU %, GPU %, host and GPU memory against batch size (those with data), per workload."""
    return [c for c in (metric_chart(results, m) for m in METRICS[1:]) if c is not None]


SECTIONS: tuple[Section, ...] = (
    Section("speed", "Training speed per workload",
            "One panel per workload (log scale where its speeds span more than 10x); one line per "
            "configuration and run, named by what differs, and the throughput knee of each line "
            "(the smallest batch reaching 90% of its best, the rule `rigbench recommend` uses) "
            "marked. Error bars are the bootstrap 95% confidence interval of the median step "
            "time. Failed trials are not drawn; they are listed at the end.", (speed_charts,)),
    Section("speedup", "Speed-up over the CPU",
            "Each device's samples/s divided by the CPU's for the same configuration (median over "
            "the configurations measured on both; error bars: the range), beside the published "
            "GPU:CPU ratios of the closest published network (Yin 2020 Table 5, Shi et al. 2016 "
            "Table 7; the paper's GPU over the paper's own CPU, median over its frameworks and "
            "batch sizes, range as error bars; docs/COMPARING.md). Each GPU is set against the CPU of "
            "its own machine only.", (speedup_charts,), uses_machines=True),
    Section("frameworks", "Frameworks side by side",
            "Training steps/s of each framework on each device at one batch per workload and set of its "
            "options (gpt and gpt:preset=small are two groups; the thesis's 128 for cnn, else the batch "
            "the most frameworks ran, ties to the workload's default batch, then its --quick batch), "
            "each precision a group of its own (its label names it where it is not fp32), and compiled "
            "torch a bar of its own (torch compile), the like-for-like bar beside JAX and XLA, which "
            "compile every step; the newest result of each configuration; and the thesis's own Table 5 "
            "(Yin 2020: TensorFlow 2.0, PyTorch 1.4 and MXNet 1.5 on a GTX 1060 and an i7-8650U, fp32) "
            "beside our cnn at batch 128. Hover a bar for its tokens/s (language models), MFU, CPU %, GPU % and memory. "
            "`rigbench compare --frameworks` prints the same rows (docs/FRAMEWORKS.md).",
            (framework_charts,), uses_calibrations=True, uses_machines=True),
    Section("roofline", "Roofline and predicted speed",
            "Achieved training FLOP/s (counted FLOPs x samples/s) against arithmetic intensity "
            "(counted FLOPs per estimated byte moved, see docs/COMPARING.md), with each device's "
            "ceilings: min(peak, intensity x memory bandwidth) from the spec sheet (dark) and "
            "from `rigbench calibrate` (light), where known, each device's in a dash of its own; and each trial's measured samples/s "
            "against that ceiling's prediction.", (roofline_charts, predicted_charts),
            uses_calibrations=True),
    Section("scaling", "Precision, thread, compile and layout scaling",
            "Reduced precision (tf32, bf16, fp16) over fp32, more threads over one, torch.compile "
            "over eager and channels-last over the default layout, each for otherwise identical "
            "trials (`rigbench scaling`): one bar per framework and device, named by both.",
            (precision_charts, thread_charts, compile_layout_charts), uses_machines=True),
    Section("processes", "Data-parallel scaling",
            "Efficiency (speed-up over one process / processes; 1.0 = linear) of data-parallel "
            "trials against their process count, weak scaling (the per-rank batch kept) or strong "
            "(the global batch kept), beside the efficiency predicted from the one-process step "
            "plus the all-reduce time each trial measured for its gradients (`rigbench scaling "
            "--processes`; docs/METHODOLOGY.md).", (process_charts,)),
    Section("training", "Training on real data",
            "Runs of `rigbench train`: held-out accuracy after the last epoch and training time "
            "to the target accuracy (evaluation excluded) against learning rate and batch size, "
            "and the loss and accuracy of every epoch.", (train_knob_charts, epoch_curve_charts)),
    Section("energy", "Energy",
            "Measured energy per sample (GPU counter, RAPL: see energy_method in each trial), per "
            "workload: against batch size, one line per configuration; and against training "
            "speed, where the dashed Pareto front joins the trials that no other trial beats on "
            "both speed and energy per sample. Only trials whose energy was measured are drawn; "
            "estimates never are.", (energy_charts,)),
    Section("resources", "Resources against batch size",
            "CPU use, GPU use, host and GPU memory of the same trials as the speed panels, one "
            "panel per workload.", (resource_charts,)),
)


def gather(results: Sequence[Result], calibrations: dict[str, dict[str, Any]] | None = None,
           machines: Machines | None = None) -> list[tuple[Section, list[Chart]]]:
    """The sections that have at least one chart, with their charts, in page order, each
    series coloured by its name across the page.
    `calibrations`: device name -> its latest calibration (store/calibrations.device_calibrations);
    `machines`: run id -> fingerprint, which tells two machines' devices of one name apart (an
    H100's and an H200's `cuda:0`, two VMs' CPUs: analysis/trials.device_key)."""
    out = []
    for section in SECTIONS:
        extra: dict[str, Any] = {}
        if section.uses_calibrations:
            extra["calibrations"] = calibrations or {}
        if section.uses_machines:
            extra["machines"] = machines
        charts = [chart for build in section.builders for chart in build(results, **extra)]
        if charts:
            out.append((section, charts))
    assign_colours([chart for _, charts in out for chart in charts])
    return out
