"""The JAX networks are torch's networks: the same outputs when torch's weights are copied in
(float32 tolerance), and the same loss curve over ten steps of each adapter's own training step.
Equal parameter counts for every workload are checked by the contract suite (each adapter's
count equals the analytic one, tests/contract/test_workloads.py). Skipped without jax or torch."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flax")
pytest.importorskip("optax")
torch = pytest.importorskip("torch")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from flax import nnx  # noqa: E402

from rigbench.frameworks.jax import models as jax_models  # noqa: E402
from rigbench.frameworks.torch import models as torch_models  # noqa: E402
from rigbench.workloads import WORKLOADS, resolved_options  # noqa: E402
from tests.loss_curves import CURVE_LR, CURVE_WORKLOADS, LOSS_CURVE_RTOL, curve_batches, torch_curve  # noqa: E402
from tests.weight_spreads import assert_same_spreads, spreads  # noqa: E402

#: Small options where a workload has them, to keep the test quick.
OPTIONS = {"resnet": {"depth": 20}, "lstm": {"hidden": 32}, "rcnn": {"width": 32, "steps": 2}}


def _build(name: str) -> tuple[torch.nn.Module, nnx.Module]:
    options = resolved_options(WORKLOADS[name], OPTIONS.get(name, {}))
    torch.manual_seed(0)
    return torch_models.build_model(name, options), jax_models.build_model(name, options)


def _set(variable: nnx.Variable, value: torch.Tensor, *axes: int) -> None:
    array = value.detach().numpy()
    # a copy of its own: torch's curve then updates its weights in place, and a JAX array that
    # shared their memory would move with them (jax-ml/jax#37830: device_put may alias a
    # writeable numpy buffer on the CPU). Not seen here, but this test failed twice with the
    # JAX curve a little off from step 0, as weights partly trained by torch would make it.
    array = np.array(np.transpose(array, axes) if axes else array, copy=True)
    assert variable[...].shape == array.shape
    variable[...] = jnp.asarray(array)


def _copy_weights(torch_model: torch.nn.Module, jax_model: nnx.Module) -> None:
    """torch's weights into the JAX model, layer kind by layer kind in network order:
    Linear (out, in) -> kernel (in, out); Conv2d OIHW -> HWIO; batch norm scale, shift and
    running statistics; embedding as is."""
    def of(kind_torch: type, kind_jax: type) -> list[tuple[torch.nn.Module, nnx.Module]]:
        t = [m for m in torch_model.modules() if type(m) is kind_torch]
        j = [m for _, m in nnx.iter_modules(jax_model) if type(m) is kind_jax]
        assert len(t) == len(j), (kind_torch, len(t), len(j))
        return list(zip(t, j, strict=True))

    for t, j in of(torch.nn.Linear, nnx.Linear):
        _set(j.kernel, t.weight, 1, 0)
        _set(j.bias, t.bias)
    for t, j in of(torch.nn.Conv2d, nnx.Conv):
        _set(j.kernel, t.weight, 2, 3, 1, 0)
        if t.bias is not None:
            _set(j.bias, t.bias)
    for t, j in of(torch.nn.BatchNorm2d, nnx.BatchNorm):
        _set(j.scale, t.weight)
        _set(j.bias, t.bias)
        _set(j.mean, t.running_mean)
        _set(j.var, t.running_var)
    for t, j in of(torch.nn.Embedding, nnx.Embed):
        _set(j.embedding, t.weight)
    lstms = [m for m in torch_model.modules() if isinstance(m, torch.nn.LSTM)]
    layers = [m for _, m in nnx.iter_modules(jax_model) if isinstance(m, jax_models.LSTMLayer)]
    for k, layer in enumerate(layers):
        lstm = lstms[0]
        _set(layer.w_ih, getattr(lstm, f"weight_ih_l{k}"), 1, 0)
        _set(layer.w_hh, getattr(lstm, f"weight_hh_l{k}"), 1, 0)
        _set(layer.b_ih, getattr(lstm, f"bias_ih_l{k}"))
        _set(layer.b_hh, getattr(lstm, f"bias_hh_l{k}"))


def _inputs(name: str) -> torch.Tensor:
    workload = WORKLOADS[name]
    generator = torch.Generator().manual_seed(1)
    if workload.layout == "tokens":
        return torch.randint(0, workload.vocab or 2, (3, workload.input_shape[0]), generator=generator)
    return torch.randn((3, *workload.input_shape), generator=generator)


@pytest.mark.parametrize("name", ["mlp", "autoencoder", "cnn", "resnet", "rcnn", "lstm"])
def test_forward_on_torch_weights_agrees(name):
    torch_model, jax_model = _build(name)
    if name in ("resnet", "rcnn"):  # running statistics away from 0 and 1, so evaluation mode tests them
        for m in torch_model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    _copy_weights(torch_model, jax_model)
    torch_model.eval()
    jax_model.eval()
    x = _inputs(name)
    with torch.no_grad():
        expected = torch_model(x).numpy()
    got = np.asarray(jax_model(jnp.asarray(x.numpy())))
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def _jax_curve(name: str, model: nnx.Module, batches: list[tuple[torch.Tensor, torch.Tensor]]) -> list[float]:
    """Ten steps of the JAX adapter's own step and optimiser (frameworks/jax/step.py)."""
    from rigbench.frameworks.jax import step

    workload = WORKLOADS[name]
    model.train()
    tx = step.make_optimizer(workload, CURVE_LR)
    graphdefs, state = step.split(workload, model, tx)
    train_step = jax.jit(step.make_step(workload, tx, graphdefs))  # as the trainer runs it
    losses = []
    for x, y in batches:
        state, loss, _ = train_step(state, (jnp.asarray(x.numpy()), jnp.asarray(y.numpy())))
        losses.append(float(loss))
    return losses


@pytest.mark.parametrize("name", CURVE_WORKLOADS)
def test_ten_sgd_steps_give_torchs_loss_curve(name):
    """From the same weights, ten SGD steps (CURVE_LR, the workload's momentum) on the same ten
    batches: every step's loss within LOSS_CURVE_RTOL of torch's."""
    torch_model, jax_model = _build(name)
    _copy_weights(torch_model, jax_model)
    batches = curve_batches(name)
    expected = torch_curve(name, torch_model, batches)
    got = _jax_curve(name, jax_model, batches)
    assert expected[-1] != expected[0]  # the weights moved: the curve tests the updates too
    np.testing.assert_allclose(got, expected, rtol=LOSS_CURVE_RTOL)


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_initial_weights_are_drawn_as_torch_draws_them(name):
    """The host-drawn initialisers (frameworks/jax/inits.py) give every large tensor the mean
    and spread torch's own initialisation gives it: uniform(1/sqrt(fan_in)), kaiming-normal
    fan-out, N(0, 0.02), N(1, 0.02), N(0, 1)."""
    options = resolved_options(WORKLOADS[name], OPTIONS.get(name, {}))
    torch.manual_seed(0)
    ours = spreads(np.asarray(x) for x in jax.tree.leaves(nnx.state(jax_models.build_model(name, options, 3), nnx.Param)))
    assert_same_spreads(ours, spreads(p.detach().numpy() for p in torch_models.build_model(name, options).parameters()))
