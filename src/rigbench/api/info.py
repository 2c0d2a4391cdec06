"""What this machine and this rigbench offer: workloads and devices (`rigbench workloads`,
`rigbench devices`)."""

from __future__ import annotations

from typing import Any

from rigbench.frameworks import installed_frameworks
from rigbench.runner.probe import probe
from rigbench.workloads import WORKLOADS, resolved_options


def workloads_info(count: bool = True) -> list[dict[str, Any]]:
    """Every workload's facts; with `count`, parameters and training FLOPs per sample as
    counted by PyTorch on a meta device (None when torch is not installed)."""
    counts: dict[str, list] = {}
    if count and "torch" in installed_frameworks():
        counts = probe("torch", count=True).get("counts", {})
    rows = []
    for w in WORKLOADS.values():
        params, flops = counts.get(w.name, (None, None))
        rows.append({
            "name": w.name, "title": w.title, "task": w.task, "input_shape": list(w.input_shape),
            "num_classes": w.num_classes, "dataset": w.dataset.name,
            "dataset_train_size": w.dataset.train_size, "dataset_source": w.dataset.source,
            "default_batch": w.default_batch, "optimizer": w.optimizer, "default_lr": w.default_lr,
            "options": resolved_options(w, {}),
            "option_choices": {k: list(v) for k, v in w.option_choices.items()},
            "params": params, "train_flops_per_sample": flops, "origin": w.origin,
            "seed_documents": list(w.seed_docs),
        })
    return rows
