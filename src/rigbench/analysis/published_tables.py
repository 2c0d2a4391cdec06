"""The published tables (data/published/, unchanged from their sources: see its README) as
rows of one unit, training steps per second at a batch size, and which rigbench workload
stands in for each published network (`MAPPINGS`) and how closely. analysis/published.py
compares them with stored results; analysis/frameworks.py lays the thesis's Table 5 out."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from rigbench.workloads import WORKLOADS

#: Source name -> the files of data/published/ it covers and a short citation.
SOURCES: dict[str, tuple[tuple[str, ...], str]] = {
    "yin2020": (("yin2020_cpu_vs_gpu.csv", "yin2020_batch_sweep.csv"),
                "Yin 2020, Ohio State M.S. thesis, Tables 5-8"),
    "shi2016": (("shi2016_table7.csv",),
                "Shi, Wang, Xu & Chu 2016, arXiv:1608.07249, Table 7"),
    "community": (("community_epoch_times.csv",),
                  "epoch times from an article and two slide decks (seeds 004, 001)"),
}


@dataclass(frozen=True)
class Mapping:
    """Which rigbench workload stands in for a published network, and how closely."""

    source: str
    network: str                # as the source names it
    workload: str               # rigbench workload name
    options: tuple[tuple[str, Any], ...]  # required workload options, e.g. (("depth", 56),)
    closeness: str              # "same network" | "same family" | "loose"
    why: str

    @property
    def ref(self) -> str:
        """The workload as `rigbench run` takes it, e.g. `resnet:depth=56`."""
        opts = ",".join(f"{k}={v}" for k, v in self.options)
        return f"{self.workload}:{opts}" if opts else self.workload


#: Published network -> closest rigbench workload (docs/COMPARING.md has the same table).
MAPPINGS: tuple[Mapping, ...] = (
    Mapping("yin2020", "CIFAR-10 CNN", "cnn", (), "same network",
            "the thesis trains CIFAR-10 with open-source tutorial code; rigbench's cnn is the "
            "TensorFlow 2 tutorial CIFAR-10 CNN (conv32-pool-conv64-pool-conv64-dense64-dense10)"),
    Mapping("shi2016", "FCN-S", "mlp", (), "same family",
            "mlp has FCN-S's three hidden layers of 2048 units and its minibatch of 64, but "
            "28x28 inputs and 10 classes, so fewer FLOPs per sample"),
    Mapping("shi2016", "FCN-R", "mlp", (), "loose",
            "both are fully connected MNIST-sized networks; FCN-R's layer widths are not mlp's"),
    Mapping("shi2016", "AlexNet-R", "cnn", (), "loose",
            "both are small CIFAR-10 convnets; layer sizes differ"),
    Mapping("shi2016", "ResNet-56", "resnet", (("depth", 56),), "same network",
            "He et al. 2016's CIFAR ResNet-56, as rigbench's resnet:depth=56"),
    Mapping("shi2016", "LSTM", "lstm", (), "same family",
            "two-layer LSTM language model, 32-token sequences, 10,000-word vocabulary; the "
            "hidden size may differ from ours (see the `ours` column)"),
    Mapping("community", "cats vs dogs CNN", "catsdogs", (), "same network",
            "rigbench's catsdogs (revision 2) is the 'GPUs for deep learning' deck's Keras network as its linked notebook "
            "prints it: 13 conv, 5 max-pool, dense 2048-2048-1, 21,455,521 trainable parameters "
            "(the deck's '15 conv, 6 pool' contradicts its own parameter totals)"),
)

#: Published networks with no comparable rigbench workload, and why (listed in the docs and output).
UNMAPPED: dict[tuple[str, str], str] = {
    ("shi2016", "AlexNet-S"): "ImageNet-size AlexNet (224x224 inputs): no rigbench workload of that size",
    ("shi2016", "ResNet-50"): "ImageNet ResNet-50: no rigbench workload of that size",
    ("community", "4-layer ResNet"): "100x100-pixel 4-layer ResNet on ~3,000 images: nothing of that shape",
    ("community", "DCGAN"): "only a GPU+CPU:CPU time ratio (2.74:1) is published, no absolute time",
}

#: Names handed to analysis.specs.lookup for the published devices.
_SPEC_NAMES = {
    "GTX 1060": "NVIDIA GeForce GTX 1060 6GB",
    "i7-8650U": "Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz",
    "gpu_gtx980": "NVIDIA GeForce GTX 980",
    "gpu_gtx1080": "NVIDIA GeForce GTX 1080",
    "gpu_k80": "Tesla K80",
    # The slides leave Shi et al.'s desktop CPU unnamed; the paper's hardware table names it
    # (the spec file's row cites it).
    "desktop_cpu": "Intel(R) Core(TM) i7-3820 CPU @ 3.60GHz",
}
_SHI_GPUS = {"gpu_gtx980": "GTX 980", "gpu_gtx1080": "GTX 1080", "gpu_k80": "Tesla K80"}


@dataclass(frozen=True)
class PublishedRow:
    """One published measurement, converted to training steps per second."""

    source: str
    table: str
    network: str
    framework: str
    device: str
    device_kind: str             # "cpu" | "gpu"
    spec_name: str | None        # for analysis.specs.lookup; None = the source does not name it
    batch_size: int
    steps_per_s: float
    figure: str                  # as published, e.g. "11.917 steps/s" or "0.150 s/batch"
    cpu_usage_pct: float | None = None   # machine-wide CPU %, as the source reports it
    gpu_usage_pct: float | None = None   # these three: only the thesis's tables report them
    cpu_mem_mib: float | None = None
    gpu_mem_mib: float | None = None
    threads: int | None = None   # CPU threads (Shi et al.'s columns)

    def device_label(self) -> str:
        """'desktop CPU, 2 threads' for one of Shi et al.'s thread columns, else the device."""
        threads = f", {self.threads} thread{'s' if self.threads > 1 else ''}" if self.threads else ""
        return self.device + threads

    def label(self) -> str:
        return f"{self.network} · {self.framework} · {self.device_label()} · b{self.batch_size}"


def _read(name: str) -> list[dict[str, str]]:
    text = resources.files("rigbench.analysis").joinpath(f"data/published/{name}").read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text)))


def _float(text: str | None) -> float | None:
    return float(text) if text not in (None, "") else None


def published_rows(sources: Sequence[str] = ()) -> list[PublishedRow]:
    """Every speed figure of the named sources (default: all), as steps/s at a batch size.

    Yin's batch sweep repeats Table 5 at batch 128 (and disagrees on MXNet, see the README),
    so batch 128 comes from Table 5, the other batches from the sweep.
    """
    wanted = list(sources) or list(SOURCES)
    rows: list[PublishedRow] = []
    if "yin2020" in wanted:
        rows += _yin()
    if "shi2016" in wanted:
        rows += _shi()
    if "community" in wanted:
        rows += _community()
    return rows


def _yin() -> list[PublishedRow]:
    rows = []
    for table in SOURCES["yin2020"][0]:
        for r in _read(table):
            batch, speed = int(r["batch_size"]), _float(r["steps_per_s"])
            if speed is None or (table == "yin2020_batch_sweep.csv" and batch == 128):
                continue
            kind = "gpu" if r["device"] == "GTX 1060" else "cpu"
            rows.append(PublishedRow(
                "yin2020", table, "CIFAR-10 CNN", r["framework"], r["device"], kind,
                _SPEC_NAMES.get(r["device"]), batch, speed, f"{r['steps_per_s']} steps/s",
                cpu_usage_pct=_float(r["cpu_usage_pct"]), gpu_usage_pct=_float(r["gpu_usage_pct"]),
                cpu_mem_mib=_float(r["cpu_mem_mib"]), gpu_mem_mib=_float(r["gpu_mem_mib"])))
    return rows


def _shi() -> list[PublishedRow]:
    rows = []
    table = SOURCES["shi2016"][0][0]
    for r in _read(table):
        batch = int(r["minibatch"])
        for column, value in r.items():
            seconds = _float(value) if column.startswith(("desktop_cpu_t", "gpu_")) else None
            if not seconds:
                continue
            if column.startswith("gpu_"):
                device, kind, threads = _SHI_GPUS[column], "gpu", None
            else:
                device, kind, threads = "desktop CPU", "cpu", int(column.removeprefix("desktop_cpu_t"))
            spec_name = _SPEC_NAMES[column if kind == "gpu" else "desktop_cpu"]
            rows.append(PublishedRow(
                "shi2016", table, r["network"], r["framework"], device, kind, spec_name,
                batch, 1 / seconds, f"{value} s/batch", threads=threads))
    return rows


def _community() -> list[PublishedRow]:
    rows = []
    table = SOURCES["community"][0][0]
    for r in _read(table):
        seconds, batch = _float(r["seconds_per_epoch"]), r["batch_size"]
        if not seconds or not batch or not r["workload"].startswith("cats vs dogs"):
            continue  # only the cats-vs-dogs rows have a comparable workload (see UNMAPPED)
        images = WORKLOADS["catsdogs"].dataset.train_size  # 20,000, as the slides say
        kind = "cpu" if any(w in r["device"] for w in ("Intel", "AMD FX", "Ryzen")) else "gpu"
        rows.append(PublishedRow(
            "community", table, "cats vs dogs CNN", r["framework"], r["device"], kind, r["device"],
            int(batch), images / seconds / int(batch), f"{r['seconds_per_epoch']} s/epoch"))
    return rows


def mapping_for(row: PublishedRow) -> Mapping | None:
    for m in MAPPINGS:
        if m.source == row.source and m.network == row.network:
            return m
    return None


def framework_family(name: str) -> str:
    """`PyTorch 1.4.0` and Lua `Torch` -> torch; `TF`, `TensorFlow (Keras)` -> tensorflow; ..."""
    low = name.lower()
    if "torch" in low:
        return "torch"
    if low.startswith(("tensorflow", "tf")) or ("keras" in low and "plaidml" not in low):
        return "tensorflow"
    return low.split()[0]
