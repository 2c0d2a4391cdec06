"""The memory-traffic estimate (frameworks/torch/traffic.py) against hand counts, its cache
entry beside old count entries, and the per-sample figure a trial gets."""

import json
from types import SimpleNamespace

import pytest

from rigbench.runner.child import traffic_per_sample
from rigbench.runner.count_cache import _key, cached_count, cached_traffic
from rigbench.workloads import WORKLOADS

torch = pytest.importorskip("torch")
from rigbench.frameworks.torch import traffic  # noqa: E402

F32 = 4


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
    weights = [(784, 2048), (2048, 2048), (2048, 2048), (2048, 10)]
    params = sum(i * o + o for i, o in weights)
    # per step: every parameter read in forward and its gradient written; weight matrices read
    # again for the input gradients of layers 2-4; a few scalars (loss, its gradient)
    by_hand = (2 * params + sum(i * o for i, o in weights[1:])) * F32
    assert per_step == pytest.approx(by_hand, abs=64)


def test_trial_bytes_per_sample_amortises_the_per_step_part():
    adapter = SimpleNamespace(NAME="torch", software=lambda: {"torch": "9.9"},
                              count_traffic=lambda w, o: (1000.0, 10.0))
    assert traffic_per_sample(adapter, WORKLOADS["cnn"], {}, 100) == pytest.approx(20.0)  # (1000 + 10*100) / 100
    no_traffic = SimpleNamespace(NAME="x", software=lambda: {"x": "1"})
    assert traffic_per_sample(no_traffic, WORKLOADS["cnn"], {}, 100) is None

    def broken(w, o):
        raise RuntimeError("meta kernel missing")
    adapter.count_traffic = broken
    assert traffic_per_sample(adapter, WORKLOADS["mlp"], {}, 8) is None  # the trial goes on without it


def test_traffic_cache_sits_beside_old_count_entries(tmp_path, monkeypatch):
    monkeypatch.setenv("RIGBENCH_CACHE_DIR", str(tmp_path))
    old_key = _key("torch", "9.9", WORKLOADS["cnn"], {})
    (tmp_path / "counts.json").write_text(json.dumps({old_key: [123, 4.5e6]}))  # written before traffic existed
    calls = []

    def count_traffic(workload, options):
        calls.append(workload.name)
        return 1000.0, 10.0
    adapter = SimpleNamespace(NAME="torch", software=lambda: {"torch": "9.9"}, count_traffic=count_traffic,
                              count=lambda w, o: pytest.fail("the old entry must be used"))
    assert cached_count(adapter, WORKLOADS["cnn"], {}) == (123, 4.5e6)
    assert cached_traffic(adapter, WORKLOADS["cnn"], {}) == (1000.0, 10.0)
    assert cached_traffic(adapter, WORKLOADS["cnn"], {}) == (1000.0, 10.0)
    assert calls == ["cnn"]  # counted once, then read from the file
    assert json.loads((tmp_path / "counts.json").read_text()) == {old_key: [123, 4.5e6],
                                                                  old_key + "|traffic": [1000.0, 10.0]}
