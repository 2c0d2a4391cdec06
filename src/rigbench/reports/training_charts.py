"""Charts of `rigbench train` runs: accuracy and time to target against learning rate and
batch size, and the loss and accuracy of every epoch (seed 003, Figs 10-13)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rigbench.analysis.device_names import DeviceNames
from rigbench.reports.chart_model import Chart, Series, hover_lines, workload_name
from rigbench.spec import Result


def _trained(results: Sequence[Result]) -> list[Result]:
    """`rigbench train` results with at least one finished epoch (diverged ones included)."""
    return [r for r in results if r.spec.kind == "train" and r.epoch_records]


def _train_hover(r: Result, value: str) -> str:
    m = r.metrics
    return hover_lines(
        value, f"{workload_name(r)} on {m.dataset}, {r.spec.device}, batch {r.spec.batch_size}, "
               f"lr {r.spec.lr if r.spec.lr is not None else 'default'}",
        f"trial {r.id} · run {r.run_id} · {r.status}",
        f"{m.epochs} epoch{'s' * (m.epochs != 1)}, {m.train_seconds:.1f} s training, {m.eval_seconds:.1f} s evaluation"
        if m.train_seconds is not None else "",
    )


@dataclass(frozen=True)
class TrainMetric:
    """A training run's figure plotted against its learning rate or batch size (seed 003, Figs 10-12)."""

    id: str
    title: str
    y_title: str
    value: Callable[[Result], float | None]
    text: Callable[[float], str]


TRAIN_METRICS: tuple[TrainMetric, ...] = (
    TrainMetric("accuracy", "Held-out accuracy after the last epoch", "accuracy (%)",
                lambda r: None if r.metrics.final_accuracy is None else 100 * r.metrics.final_accuracy,
                lambda v: f"{v:.1f}% accuracy"),
    TrainMetric("lm_loss", "Held-out loss after the last epoch (language models)", "nats per token",
                lambda r: r.metrics.final_eval_loss if r.metrics.perplexity is not None else None,
                lambda v: f"held-out loss {v:.4f}"),
    TrainMetric("to_target", "Training time to the target (accuracy or held-out loss)", "seconds to target",
                lambda r: r.metrics.seconds_to_target, lambda v: f"{v:.1f} s to target"),
)


def _against(results: Sequence[Result], metric: TrainMetric, axis: str) -> Chart | None:
    """`metric` against `axis` ("lr" or "batch"): one line per workload/data set/device and
    the other knob's value; a device by its model (an H100's and an H200's runs are both on
    `cuda:0`: two lines, not one through both GPUs' points)."""
    rows = [(r, value) for r in _trained(results) if (value := metric.value(r)) is not None
            and (axis == "batch" or r.spec.lr is not None)]
    if not rows:
        return None
    device = DeviceNames(r for r, _ in rows)
    x_of = (lambda r: r.spec.lr) if axis == "lr" else (lambda r: r.spec.batch_size)
    other = (lambda r: f"batch {r.spec.batch_size}") if axis == "lr" else (
        lambda r: f"lr {r.spec.lr:g}" if r.spec.lr is not None else "default lr")
    lines: dict[str, list[tuple[Result, float]]] = defaultdict(list)
    for r, value in rows:
        lines[f"{workload_name(r)} · {r.metrics.dataset} · {device(r)} · {other(r)}"].append((r, value))
    series = []
    for name, members in lines.items():
        members.sort(key=lambda p: x_of(p[0]))
        s = Series(name=name)
        for r, value in members:
            s.x.append(f"{x_of(r):g}" if axis == "lr" else x_of(r))
            s.y.append(value)
            s.hover.append(_train_hover(r, metric.text(value)))
        series.append(s)
    label = "learning rate" if axis == "lr" else "batch size"
    return Chart(id=f"{metric.id}_{axis}", title=f"{metric.title} against {label}", x_title=label,
                 y_title=metric.y_title, series=series,
                 x_scale="category" if axis == "lr" else "log2")


def train_knob_charts(results: Sequence[Result]) -> list[Chart]:
    """Accuracy and time to target against learning rate and batch size, where they vary."""
    charts = []
    for axis, knob in (("lr", lambda r: r.spec.lr), ("batch", lambda r: r.spec.batch_size)):
        if len({knob(r) for r in _trained(results)}) > 1:  # a single value is no curve
            charts += [c for c in (_against(results, m, axis) for m in TRAIN_METRICS) if c]
    return charts


def epoch_curve_charts(results: Sequence[Result]) -> list[Chart]:
    """Training loss and held-out accuracy per epoch, one line per run (seed 003, Fig. 13)."""
    runs = _trained(results)
    if not runs:
        return []
    loss, accuracy = [], []
    for r in runs:
        name = f"{workload_name(r)} · {r.metrics.dataset} · b{r.spec.batch_size} · lr {r.spec.lr if r.spec.lr is not None else 'default'} · #{r.id}"
        epochs = r.epoch_records
        loss.append(Series(name=name, x=[e.epoch for e in epochs], y=[e.train_loss for e in epochs],
                           hover=[_train_hover(r, f"epoch {e.epoch}: loss {e.train_loss:.4f}") for e in epochs]))
        with_acc = [(e.epoch, e.accuracy) for e in epochs if e.accuracy is not None]
        if with_acc:
            accuracy.append(Series(name=name, x=[epoch for epoch, _ in with_acc], y=[100 * acc for _, acc in with_acc],
                                   hover=[_train_hover(r, f"epoch {epoch}: {100 * acc:.1f}% accuracy") for epoch, acc in with_acc]))
    charts = [Chart(id="loss_curves", title="Training loss per epoch", x_title="epoch",
                    y_title="mean training loss", series=loss, x_dtick=1)]
    if accuracy:
        charts.append(Chart(id="accuracy_curves", title="Held-out accuracy per epoch", x_title="epoch",
                            y_title="accuracy (%)", series=accuracy, x_dtick=1))
    held_out = _held_out_loss_series(runs)
    if held_out:
        charts.append(Chart(id="held_out_loss_curves", title="Held-out loss per epoch (language models)",
                            x_title="epoch", y_title="nats per token", series=held_out, x_dtick=1))
    return charts


def _held_out_loss_series(runs: Sequence[Result]) -> list[Series]:
    """Each language model's validation loss per epoch, and per text data set the unigram
    baseline it must get below (a flat line over the epochs shown)."""
    series: list[Series] = []
    baselines: dict[str, tuple[float, int]] = {}
    for r in runs:
        if r.metrics.perplexity is None:
            continue
        points = [(e.epoch, e.eval_loss) for e in r.epoch_records if e.eval_loss is not None]
        series.append(Series(name=f"{workload_name(r)} · {r.metrics.dataset} · {r.spec.framework} · #{r.id}",
                             x=[epoch for epoch, _ in points], y=[loss for _, loss in points],
                             hover=[_train_hover(r, f"epoch {epoch}: held-out loss {loss:.4f}") for epoch, loss in points]))
        if r.metrics.baseline_loss is not None and r.metrics.dataset:
            _, last = baselines.get(r.metrics.dataset, (0.0, 1))
            baselines[r.metrics.dataset] = (r.metrics.baseline_loss, max(last, len(r.epoch_records)))
    for name, (loss, last) in baselines.items():
        text = hover_lines(f"{name}: unigram baseline {loss:.4f} nats (the byte frequencies alone)")
        series.append(Series(name=f"unigram baseline · {name}", x=[1, last], y=[loss, loss], hover=[text, text],
                             dash=True))
    return series
