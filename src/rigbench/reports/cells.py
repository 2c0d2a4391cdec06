"""Table cells, formatted once for every table (terminal, CLI views, the HTML report's lists):
literal text, numbers, measured intervals, framework and workload names."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Sequence

from rich.text import Text

from rigbench.analysis.contention import is_busy
from rigbench.analysis.device_names import id_labels
from rigbench.analysis.energy import has_energy, samples_per_joule
from rigbench.reports.table_fit import Column
from rigbench.result_rules import PROTOCOL_KINDS
from rigbench.spec import Result
from rigbench.textlimits import NAME_CHARS, clip, visible
from rigbench.workloads import WORKLOADS

_STATUS_STYLE = {"ok": "green", "oom": "yellow", "diverged": "yellow", "interrupted": "yellow",
                 "unsupported": "dim", "timeout": "red", "crash": "red"}

#: Shown after a stored workload this rigbench does not define (a bundle from a newer one).
UNKNOWN_WORKLOAD = "(unknown to this rigbench)"

#: A framework's name where a table is short of room (the registry's names elsewhere).
FRAMEWORK_SHORT = {"tensorflow": "tf", "keras-jax": "k-jax", "keras-torch": "k-torch"}


def framework_short(name: str) -> str:
    """`tf`, `k-jax`, `k-torch`; torch and jax (and any name not listed) as they are."""
    return FRAMEWORK_SHORT.get(name, name)


def framework_column(priority: int = 80) -> Column:
    """The framework of a listed trial: `fw` and `tf`, `k-jax`, `k-torch` when room is short."""
    return Column("framework", priority=priority, short="fw", abbreviate=framework_short)


#: What a device's model loses in a narrow table: the vendor before it and the memory after it.
_VENDORS = ("NVIDIA ", "AMD ", "Intel(R) ", "Apple ")
_MEMORY = re.compile(r"\s+\d+\s*GB\b.*$")


def device_short(text: str) -> str:
    """A `device_labels` cell where a table is short of room: the model, which tells the rows
    apart, shortened ("cuda:0 (NVIDIA H100 80GB HBM3)" -> "H100"); an id alone as it is."""
    _, sep, model = text.partition(" (")
    if not sep:
        return text
    model = model.removesuffix(")")
    for vendor in _VENDORS:
        model = model.removeprefix(vendor)
    short = _MEMORY.sub("", model) or model
    # a name with a machine's in parentheses (compare --published's) keeps its memory and brackets
    return short if short.count("(") == short.count(")") else model


def device_column(priority: int = 85) -> Column:
    """The device of a listed trial (`device_labels`), its model shortened when room is short."""
    return Column("device", priority=priority, abbreviate=device_short)


def trial_columns() -> list[Column]:
    """What tells one listed trial from another, in every table that lists trials: workload,
    framework, device, batch, precision and the rest of the setup (`setup_label`). The workload
    is cut with "…" where the essential columns alone are too wide (a long `NAME:key=value` or
    "(unknown to this rigbench)" at 40 columns), where rich cut every column evenly: a speed to
    "1…", a status to "sta…", the id to nothing."""
    return [Column("workload", cut=True), framework_column(), device_column(),
            Column("batch", "right", priority=75), Column("prec", priority=60), Column("setup", priority=50)]


def device_labels(results: Collection[Result]) -> Callable[[Result], str]:
    """A trial's device as a table lists it: its id (`cpu`, `cuda:0`), and its model after it
    where the id names two models among `results` (an H100's and an H200's imported results are
    both `cuda:0`: "cuda:0 (NVIDIA H200)"). One machine's table reads as before."""
    label = id_labels((r.spec.device, r.device_name) for r in results)
    return lambda r: label(r.spec.device, r.device_name)


def trial_cells(r: Result, device: str | None = None) -> list[str]:
    """The `trial_columns` cells of `r` (`device` in place of its own, e.g. `cpu/cuda:0`)."""
    return [workload_label(r), r.spec.framework, device or r.spec.device, str(r.spec.batch_size),
            r.spec.precision, setup_label(r)]


def unknown_mark(workload: str) -> str:
    """" (unknown to this rigbench)" for a workload this rigbench does not define, else ""."""
    return "" if workload in WORKLOADS else f" {UNKNOWN_WORKLOAD}"


def literal(text: str, style: str = "") -> Text:
    """Stored or user-supplied text as rich shows it verbatim: never read as markup, so an
    error's "[enforce fail at ...]" stays and a "[/]" cannot crash the table; a control
    character is written out (textlimits.visible), so a stored ESC sequence cannot act."""
    return Text(visible(text), style=style)


def cells(*values: str | Text) -> list[Text]:
    """A table row's cells, each literal (already-made Text kept with its style)."""
    return [v if isinstance(v, Text) else literal(v) for v in values]


def status(value: str) -> Text:
    return literal(value, _STATUS_STYLE.get(value, ""))


#: From this size on a figure is written in 3 significant digits with an exponent: a fixed
#: format wrote an imported 1e308 samples/s as 309 digits and pushed every other column off.
HUGE = 1e15


def num(value: float | None, fmt: str = "{:.1f}") -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if not abs(value) < HUGE else fmt.format(value)


def rate(value: float) -> str:
    """A measured rate (samples/s, steps/s): whole numbers from 100 up, 3 significant digits below."""
    return f"{value:,.0f}" if 100 <= abs(value) < HUGE else f"{value:.3g}"


def si(value: float, unit: str) -> str:
    """A count with an SI prefix, as `rate` writes the number: 56.9 MFLOP, 2.07 MB, 875 GFLOP."""
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{rate(value / factor)} {prefix}{unit}"
    return f"{rate(value)} {unit}"


def share(value: float | None) -> str:
    """A share (MFU, a part of a whole) as a percentage: one decimal from 1% up (20.0%, 1.8%),
    2 significant digits below (0.18%, 0.030%), so that a small share never reads "0.0%"."""
    if value is None:
        return "-"
    percent = value * 100
    rounded = float(f"{percent:.2g}") if math.isfinite(percent) else percent  # 0.0999 -> 0.1, not 0.100
    if rounded == 0 or abs(rounded) >= 1 or not math.isfinite(rounded):
        return f"{percent:.1f}%"
    return f"{rounded:.{1 - math.floor(math.log10(abs(rounded)))}f}%"


def tokens_cell(tokens_per_s: float | None) -> str:
    """tokens/s for a table cell: a rate, "-" for a trial that is not a language model's."""
    return "-" if tokens_per_s is None else rate(tokens_per_s)


def _same_decimals(value: float) -> Callable[[float], str]:
    """A formatter giving every number the decimals `rate` gives `value` (3 significant digits,
    none from 100 up), so that an interval's bounds line up with it: 26.4 [12.9–31.0]."""
    digits = 0 if value == 0 or not math.isfinite(value) else max(0, 2 - math.floor(math.log10(abs(value))))
    return lambda v: f"{v:,.{digits}f}" if abs(v) < HUGE else f"{v:.3g}"


def interval(value: float | None, ci: Sequence[float] | None, fmt: Callable[[float], str] | None = None) -> str:
    """`549 [470–1,424]`: a value and its 95% interval as measured. Never a ± half-width:
    bootstrap intervals are asymmetric (a ±476.7 once stood for [470, 1424] around 548.6).
    `fmt` formats all three numbers (default: a rate's decimals, the same for the bounds)."""
    if value is None:
        return "-"
    fmt = fmt or _same_decimals(value)
    return fmt(value) + (f" [{fmt(ci[0])}–{fmt(ci[1])}]" if ci else "")


def speed(r: Result) -> str:
    """samples/s with its 95% interval, `noisy` when the protocol flagged the trial and `busy`
    when other processes took a share of the CPU while it was timed (analysis/contention.py)."""
    m = r.metrics
    if m.samples_per_s is None or (r.status != "ok" and r.spec.kind in PROTOCOL_KINDS):
        return "-"  # a crashed speed trial's figure (an ok one that broke result_rules) is no measurement
    return (interval(m.samples_per_s, m.samples_per_s_ci) + (" noisy" if m.noisy else "")
            + (" busy" if is_busy(m) else ""))


def any_energy(results: Sequence[Result]) -> bool:
    """Whether a table of these results gets a samples/J column: some have a measured energy."""
    return any(has_energy(r) for r in results)


def samples_per_joule_cell(energy_per_sample_j: float | None) -> str:
    """Samples per joule for a table cell ("-" without a measured energy): whole numbers from
    100 up, 3 significant digits below."""
    value = samples_per_joule(energy_per_sample_j)
    return "-" if value is None else rate(value)


def workload_label(r: Result) -> str:
    """NAME:key=value,...; a workload this rigbench does not define is labelled so."""
    opts = ",".join(f"{k}={v}" for k, v in sorted(r.spec.workload_options.items()))
    return clip(f"{r.spec.workload}:{opts}" if opts else r.spec.workload, NAME_CHARS) + unknown_mark(r.spec.workload)


def setup_label(r: Result, shown: Collection[str] = ()) -> str:
    """What else sets a trial apart beyond workload, framework, device, batch and precision,
    compactly: kind (when not a speed trial), threads asked for, compile, channels-last, lr,
    world size; leaving out the parts named in `shown` ("kind", "lr") that a table has columns for."""
    spec = r.spec
    parts = {
        "kind": "" if spec.kind == "speed" else spec.kind.replace("_", "-"),
        "threads": f"t{spec.threads}" if spec.threads else "",
        "compile": spec.compile_label,  # "" when off
        "layout": "NHWC" if spec.channels_last else "",
        "lr": "" if spec.lr is None else f"lr={spec.lr:g}",
        "world": spec.world_label,  # x1: one rank, under the wrapper
    }
    return " ".join(text for name, text in parts.items() if text and name not in shown) or "-"
