"""The memory-traffic estimate (frameworks/torch/traffic.py) against hand counts at fp32 and
bf16, its cache entry beside old count entries, and the per-sample figure a trial gets."""

import json
from types import SimpleNamespace

import pytest

from rigbench.runner.child import traffic_per_sample
from rigbench.runner.count_cache import _key, cached_count, cached_traffic
from rigbench.workloads import WORKLOADS, shaped

torch = pytest.importorskip("torch")
from rigbench.frameworks import torch as torch_adapter  # noqa: E402
from rigbench.frameworks.torch import traffic  # noqa: E402

F32 = 4
F16 = 2  # bf16 and fp16 alike
MLP_WEIGHTS = [(784, 2048), (2048, 2048), (2048, 2048), (2048, 10)]
MLP_PARAMS = sum(i * o + o for i, o in MLP_WEIGHTS)  # 10,020,874
MLP_FP32_PER_SAMPLE = 293_488  # test_mlp_traffic_by_hand


def test_each_op_reads_its_inputs_and_writes_its_outputs_views_are_free():
    with torch.device("meta"):
        x = torch.empty(5, 8)
        w = torch.empty(4, 8)
        b = torch.empty(4)
    with traffic.TrafficCounter() as counter:
        y = torch.nn.functional.linear(x, w, b)  # t(w) is a view; addmm reads b, x, w^T
        y.relu()
        y.reshape(20)  # a view: nothing moves
    # addmm: reads b (4) + x (40) + w (32) floats, writes y (20); relu reads 20, writes 20
    assert counter.read == (4 + 40 + 32 + 20) * F32
    assert counter.written == (20 + 20) * F32


def test_a_broadcast_tensor_is_read_once_not_per_row():
    with torch.device("meta"):
        row = torch.empty(1000).expand(50, 1000)
        assert traffic.tensor_bytes(row) == 1000 * F32
        assert traffic.tensor_bytes(torch.empty(50, 1000)[:, :10]) == 500 * F32  # a slice: its elements


def test_mlp_traffic_by_hand():
    """mlp = Flatten, Linear 784-2048, ReLU, 2x (Linear 2048-2048, ReLU), Linear 2048-10,
    cross-entropy; the forward and backward ops counted one by one (floats per sample)."""
    per_step, per_sample = traffic.count_traffic(WORKLOADS["mlp"], {})
    forward = ((784 + 2048)  # Linear 1: read x, write out
               + 3 * (2048 + 2048)  # 3 ReLUs: read, write
               + 2 * (2048 + 2048)  # Linear 2, 3
               + (2048 + 10)  # Linear 4
               + (10 + 10)  # log_softmax
               + 10)  # nll_loss reads the log-probabilities (and an int64 target, below)
    backward = (20  # nll_loss_backward: reads log-probs, writes their gradient
                + 30  # log_softmax_backward: reads gradient and output, writes
                + (2058 + 2058 + 10)  # Linear 4: input-grad mm, weight-grad mm reads, bias-grad sum
                + 3 * 6144  # 3 threshold_backward: read grad and output, write grad
                + 2 * (4096 + 4096 + 2048)  # Linear 3, 2: the same at width 2048
                + (2048 + 784 + 2048))  # Linear 1: no input gradient; weight-grad mm, bias sum
    target = 2 * 8  # the int64 label, read by nll_loss forward and backward
    assert per_sample == (forward + backward) * F32 + target  # 293,488 bytes
    assert per_sample == MLP_FP32_PER_SAMPLE
    # per step: every parameter read in forward and its gradient written; weight matrices read
    # again for the input gradients of layers 2-4; a few scalars (loss, its gradient)
    by_hand = (2 * MLP_PARAMS + sum(i * o for i, o in MLP_WEIGHTS[1:])) * F32
    assert per_step == pytest.approx(by_hand, abs=64)


def test_mlp_bf16_traffic_by_hand():
    """The same mlp under bf16 autocast: the matmuls and ReLUs, forward and backward, move 2-byte
    elements; the loss (log_softmax, nll_loss) stays fp32; autocast's casts are counted."""
    per_step, per_sample = traffic.count_traffic(WORKLOADS["mlp"], {}, "bf16")
    low = ((784 + 2048) + 3 * 4096 + 2 * 4096 + 2058  # forward: the floats of the fp32 count above
           + (2058 + 2058 + 10) + 3 * 6144 + 2 * (4096 + 4096 + 2048) + (2048 + 784 + 2048))  # backward
    loss = 20 + 10 + 20 + 30  # log_softmax, nll_loss, and their backward, at fp32
    casts = (784 * (F32 + F16)  # the fp32 input to bf16 for the first matmul
             + 10 * (F16 + F32)  # the logits to fp32 for the loss
             + 10 * (F32 + F16))  # their gradient back to bf16
    target = 2 * 8
    assert per_sample == low * F16 + loss * F32 + casts + target  # 151,736 bytes
    assert per_sample == pytest.approx(0.517 * MLP_FP32_PER_SAMPLE, rel=1e-3)  # activations: about half
    # per step: each fp32 parameter cast to bf16 (read 4, write 2), read by forward (2), its
    # bf16 gradient written (2) and cast back to fp32 (read 2, write 4): 16 bytes; weight
    # matrices of layers 2-4 read again for the input gradients (2)
    by_hand = 16 * MLP_PARAMS + F16 * sum(i * o for i, o in MLP_WEIGHTS[1:])
    assert per_step == pytest.approx(by_hand, abs=64)


def test_a_bf16_trial_moves_fewer_bytes_per_sample_than_fp32_once_activations_dominate(tmp_path, monkeypatch):
    """bytes_per_sample as the child stores it, for the real torch adapter: at batch 1024 the
    halved activations outweigh autocast's weight casts; at mlp's default batch of 64 the casts
    make bf16 move more (the per-step part is amortised over few samples). tf32 stores fp32."""
    monkeypatch.setenv("RIGBENCH_CACHE_DIR", str(tmp_path))
    fp32_step = (2 * MLP_PARAMS + sum(i * o for i, o in MLP_WEIGHTS[1:])) * F32
    bf16_step = 16 * MLP_PARAMS + F16 * sum(i * o for i, o in MLP_WEIGHTS[1:])

    def stored(batch, precision):
        return traffic_per_sample(torch_adapter, WORKLOADS["mlp"], {}, batch, precision)
    assert stored(1024, "fp32") == pytest.approx((fp32_step + MLP_FP32_PER_SAMPLE * 1024) / 1024, abs=0.1)
    assert stored(1024, "bf16") == pytest.approx((bf16_step + 151_736 * 1024) / 1024, abs=0.1)
    assert stored(1024, "bf16") < stored(1024, "fp32")  # 324,736 against 404,624 bytes
    assert stored(64, "bf16") > stored(64, "fp32")
    assert stored(1024, "tf32") == stored(1024, "fp32")
    assert stored(1024, "fp16") == stored(1024, "bf16")


def test_attention_is_counted_as_its_fused_kernel():
    """No sequence x sequence matrix: a gpt's per-sample traffic is linear in its context (the
    unfused softmax(QK^T) the meta device ran grew with its square)."""
    def per_sample(context, precision):
        options = {"context": context}
        return traffic.count_traffic(shaped(WORKLOADS["gpt"], options), options, precision)[1]
    for precision in ("fp32", "bf16"):
        assert per_sample(128, precision) == pytest.approx(2 * per_sample(64, precision), rel=1e-9)
    assert per_sample(64, "bf16") < per_sample(64, "fp32")


def test_trial_bytes_per_sample_amortises_the_per_step_part():
    adapter = SimpleNamespace(NAME="torch", software=lambda: {"torch": "9.9"},
                              count_traffic=lambda w, o, p: (1000.0, 10.0))
    assert traffic_per_sample(adapter, WORKLOADS["cnn"], {}, 100) == pytest.approx(20.0)  # (1000 + 10*100) / 100
    no_traffic = SimpleNamespace(NAME="x", software=lambda: {"x": "1"})
    assert traffic_per_sample(no_traffic, WORKLOADS["cnn"], {}, 100) is None

    def broken(w, o, p):
        raise RuntimeError("meta kernel missing")
    adapter.count_traffic = broken
    assert traffic_per_sample(adapter, WORKLOADS["mlp"], {}, 8) is None  # the trial goes on without it


def test_traffic_cache_sits_beside_old_count_entries(tmp_path, monkeypatch):
    monkeypatch.setenv("RIGBENCH_CACHE_DIR", str(tmp_path))
    old_key = _key("torch", "9.9", WORKLOADS["cnn"], {})
    # a count written before traffic existed, and an fp32 meta-device estimate from before
    # precisions were counted apart (attention unfused): the second must not be read
    (tmp_path / "counts.json").write_text(json.dumps({old_key: [123, 4.5e6], old_key + "|traffic": [1.0, 2.0]}))
    calls = []

    def count_traffic(workload, options, precision):
        calls.append((workload.name, precision))
        return (1000.0, 10.0) if precision == "fp32" else (1500.0, 5.0)
    adapter = SimpleNamespace(NAME="torch", software=lambda: {"torch": "9.9"}, count_traffic=count_traffic,
                              count=lambda w, o: pytest.fail("the old entry must be used"))
    assert cached_count(adapter, WORKLOADS["cnn"], {}) == (123, 4.5e6)
    assert cached_traffic(adapter, WORKLOADS["cnn"], {}) == (1000.0, 10.0)
    assert cached_traffic(adapter, WORKLOADS["cnn"], {}, "tf32") == (1000.0, 10.0)  # tf32 stores fp32
    assert cached_traffic(adapter, WORKLOADS["cnn"], {}, "bf16") == (1500.0, 5.0)
    assert cached_traffic(adapter, WORKLOADS["cnn"], {}, "bf16") == (1500.0, 5.0)
    assert calls == [("cnn", "fp32"), ("cnn", "bf16")]  # each counted once, then read from the file
    assert json.loads((tmp_path / "counts.json").read_text()) == {
        old_key: [123, 4.5e6], old_key + "|traffic": [1.0, 2.0],
        old_key + "|traffic@fp32": [1000.0, 10.0], old_key + "|traffic@bf16": [1500.0, 5.0]}
