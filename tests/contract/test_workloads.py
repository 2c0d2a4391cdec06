"""The adapter contract on every workload: every installed framework x every workload.

Each case builds the workload at a tiny batch with small options on the CPU, counts its
parameters, takes a few steps on its one fixed batch and reads the memory hooks; the
expensive part (build + steps) runs once per case in a module-scoped fixture. The adapter's
own FLOP counter is checked against the workload's analytic figure (workloads/flops.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pytest

from rigbench.frameworks import load_adapter
from rigbench.spec import TrialSpec
from rigbench.workloads import WORKLOADS, resolved_options, shaped
from rigbench.workloads.flops import train_flops_per_sample, trainable_params
from tests.contract.conftest import FLOP_DIFFERENCES, IN_PROCESS, NOISY_LOSS

#: Small options that keep the suite fast (each workload's own code paths are unchanged).
SMALL_OPTIONS: dict[str, dict[str, Any]] = {
    "resnet": {"depth": 20}, "rcnn": {"width": 32, "steps": 1}, "lstm": {"hidden": 128},
}
#: workload -> (batch, learning-rate override, steps). The autoencoder's Adam at 1e-3 on a
#: 4-image batch overshoots once around step 6, so it trains at 3e-4; catsdogs' 256x256
#: images are the costly case (about a second a step per image on 2 cores), at batch 2 because
#: its dense batch norms make a single image's features a constant (Keras' beta).
STEPS: dict[str, tuple[int, float | None, int]] = {
    "mlp": (4, None, 5), "autoencoder": (4, 3e-4, 5), "cnn": (4, None, 5), "rcnn": (4, None, 5),
    "lstm": (4, None, 5), "dcgan": (4, None, 3), "resnet": (4, None, 5), "catsdogs": (2, None, 3),
    "gpt": (4, None, 5), "vit": (4, None, 5),
}
CASES = [(f, w) for f in IN_PROCESS for w in WORKLOADS]  # the Keras family: keras_family.py


@dataclass
class Stepped:
    """A built trainer after a few timed steps on its fixed batch."""

    trainer: Any
    losses: list[float]
    elapsed_s: list[float]
    peak_bytes: int | None


@pytest.fixture(scope="module", params=CASES, ids=[f"{f}-{w}" for f, w in CASES])
def stepped(request) -> Stepped:
    framework, name = request.param
    batch, lr, steps = STEPS[name]
    spec = TrialSpec(workload=name, framework=framework, device="cpu", batch_size=batch, lr=lr, threads=2,
                     workload_options=SMALL_OPTIONS.get(name, {}))
    trainer = load_adapter(framework).build(spec, WORKLOADS[name])
    trainer.reset_peak_memory()
    timer = trainer.step_timer()
    handles = []
    for _ in range(steps):
        timer.start()
        handles.append(trainer.step())
        timer.stop()
    trainer.synchronize()
    return Stepped(trainer, trainer.loss_values(handles), timer.elapsed_s(), trainer.allocator_peak_bytes())


def test_parameters_match_the_analytic_count(stepped, request):
    _, name = request.node.callspec.params["stepped"]
    workload = WORKLOADS[name]
    assert stepped.trainer.params == trainable_params(workload, resolved_options(workload, SMALL_OPTIONS.get(name, {})))


def test_steps_lower_the_loss(stepped, request):
    _, name = request.node.callspec.params["stepped"]
    losses = stepped.losses
    assert len(losses) == STEPS[name][2] and all(math.isfinite(x) for x in losses), losses
    if len(WORKLOADS[name].parts) == 1 and name not in NOISY_LOSS:
        assert losses[-1] < losses[0], losses
    else:  # D loss + G loss need not fall (each update raises the other player's loss); it moves
        assert len(set(losses)) > 1, losses


def test_timer_and_memory_hooks(stepped):
    assert len(stepped.elapsed_s) == len(stepped.losses) and all(t > 0 for t in stepped.elapsed_s)
    assert stepped.peak_bytes is None  # on the CPU no framework keeps allocator statistics
    assert stepped.trainer.loss_values([]) == []
    assert isinstance(stepped.trainer.device_name, str) and stepped.trainer.device_name


#: (workload, options) whose counts the suite affords: every workload, and each option's extremes
#: that stay cheap on the meta device.
COUNT_CASES = [(w, {}) for w in WORKLOADS] + [
    ("resnet", {"depth": 56}), ("resnet", {"depth": 110}),
    ("rcnn", {"width": 32, "steps": 1}), ("rcnn", {"width": 160, "steps": 4}),
    ("lstm", {"hidden": 128}), ("lstm", {"hidden": 1024}),
    ("gpt", {"preset": "small"}), ("vit", {"preset": "ti224"}),
]
#: resnet at depth 110 only where counting it is cheap (torch, on the meta device): JAX traces
#: and lowers all 110 layers (8 s on the dev VM), and its depths 20 and 56 already check that its
#: count grows with depth as the formula says.
FLOP_CASES = [(f, w, o) for f in IN_PROCESS for w, o in COUNT_CASES
              if f == "torch" or (w, o) != ("resnet", {"depth": 110})]


@pytest.mark.parametrize("framework,name,options", FLOP_CASES, ids=[f"{f}-{w}{o or ''}" for f, w, o in FLOP_CASES])
def test_adapter_flop_counter_matches_the_analytic_figure(framework, name, options):
    workload = shaped(WORKLOADS[name], options)  # as the child passes it: a preset's context or image
    params, flops = load_adapter(framework).count(workload, options)
    difference = FLOP_DIFFERENCES.get((framework, name), lambda options: 0.0)(options)
    assert flops == pytest.approx(train_flops_per_sample(workload, options) + difference, rel=0.05)
    assert params == trainable_params(workload, resolved_options(workload, options))
