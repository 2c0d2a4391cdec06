"""What this machine and this rigbench offer: workloads and devices (`rigbench workloads`,
`rigbench devices`)."""

from __future__ import annotations

from typing import Any

from rigbench.workloads import WORKLOADS, epoch_samples, resolved_options
from rigbench.workloads.flops import train_flops_per_sample, trainable_params


def workloads_info() -> list[dict[str, Any]]:
    """Every workload's facts, with its trainable parameters and training FLOPs per sample
    from its layer plan (workloads/flops.py): the figures MFU uses in every framework, equal to
    each framework's own count (tests/contract/test_workloads.py), so no framework is started."""
    rows = []
    for w in WORKLOADS.values():
        options = resolved_options(w, {})
        rows.append({
            "name": w.name, "title": w.title, "task": w.task, "input_shape": list(w.input_shape),
            "num_classes": w.num_classes, "dataset": w.dataset.name,
            "dataset_train_size": epoch_samples(w, {}), "dataset_source": w.dataset.source,
            "default_batch": w.default_batch, "optimizer": w.optimizer, "default_lr": w.default_lr,
            "options": options,
            "option_choices": {k: list(v) for k, v in w.option_choices.items()},
            "presets": w.presets, "default_run": w.default_run,
            "params": trainable_params(w, options), "train_flops_per_sample": train_flops_per_sample(w, options),
            "origin": w.origin,
            "seed_documents": list(w.seed_docs),
        })
    return rows
