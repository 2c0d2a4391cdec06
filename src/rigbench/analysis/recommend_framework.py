"""The recommendation's framework line: whether another framework trains the same network faster
on the device, from this machine's stored trials only (`rigbench run WORKLOAD --framework
torch,jax` measures them; nothing is run for it).

The rule: each framework's fp32 eager default-threads configuration (recommend.baseline_by_batch,
the figure the device and batch lines read) at the recommended batch, else at the batch nearest
it that both frameworks measured. The fastest other framework is named as faster where its
samples/s beat the advised framework's with the two 95% intervals apart (each side's band over
its trials, as the compile line takes them), else the line says none is. A recommendation is one
framework's: the line tells where another one's would be worth asking for. On an H200 JAX
trained cnn 2.99x, resnet 1.91x and lstm 1.22x as fast as torch eager at batch 128
(docs/results/gpu-h200-lease4.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rigbench.analysis.recommend_model import Line
from rigbench.analysis.scaling import overlap, speed_band
from rigbench.analysis.trials import RunSpeed


def _apart(a: RunSpeed, b: RunSpeed) -> bool | None:
    """Whether the two configurations' intervals (scaling.speed_band) do not overlap; None
    where either is missing."""
    overlapping = overlap(speed_band(a.trials), speed_band(b.trials))
    return None if overlapping is None else not overlapping


def decide_framework(framework: str, mine: Mapping[int, RunSpeed], theirs: Mapping[str, Mapping[int, RunSpeed]],
                     batch: int, device: str) -> Line | None:
    """The framework line for `framework` (its baseline speeds by batch, `mine`) against the other
    frameworks' (`theirs`: framework -> speeds by batch) on `device`, at the recommended `batch`;
    None where no other framework measured a batch `framework` did (a line appears only where
    frameworks were compared, as for compile)."""
    compared: list[dict[str, Any]] = []
    for name, speeds in sorted(theirs.items()):
        common = set(mine) & set(speeds)
        if name == framework or not common:
            continue
        b = min(common, key=lambda b: (abs(b - batch), -b))
        compared.append({"framework": name, "batch_size": b, "ratio": speeds[b].samples_per_s / mine[b].samples_per_s,
                         "samples_per_s": speeds[b].samples_per_s, "own_samples_per_s": mine[b].samples_per_s,
                         "apart": _apart(speeds[b], mine[b]), "trial": speeds[b].newest.id})
    if not compared:
        return None
    best = max(compared, key=lambda c: c["ratio"])
    at = f"b{best['batch_size']}" + ("" if best["batch_size"] == batch else f" (the batch both measured nearest to b{batch})")
    others = ", ".join(f"{c['framework']} x{c['ratio']:.2f}" for c in sorted(compared, key=lambda c: -c["ratio"]))
    numbers: dict[str, Any] = {"compared": compared, "faster": None}
    if best["ratio"] > 1 and best["apart"]:
        numbers["faster"] = best["framework"]
        text = (f"framework: {best['framework']} trains it {best['ratio']:.2f}x as fast as {framework} on {device} at {at} "
                f"({best['samples_per_s']:,.1f} against {best['own_samples_per_s']:,.1f} samples/s, fp32, stored "
                f"trials); `--framework {best['framework']}` recommends for it")
        if len(compared) > 1:
            text += f" (all: {others})"
        return Line("framework", best["framework"], text, numbers)
    noise = ("; no intervals to tell them from noise" if best["apart"] is None else
             f"; {best['framework']}'s lead is within noise" if best["ratio"] > 1 else "")
    return Line("framework", framework, f"framework: {framework}, no other framework measured is clearly faster "
                f"on {device} at {at} ({others}{noise})", numbers)
