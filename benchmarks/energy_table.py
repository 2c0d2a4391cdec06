"""Energy per sample of stored trials, beside power x time from the same trials' power samples.

For each successful speed trial with a measured GPU energy: samples/s, the energy counter's
joules over the measured window, joules per sample, and the cross-check NVML power mean x the
window's length (the timed steps' summed time), with the ratio counter / (power x time). The two
come from different NVML readings: the counter (mJ, updated every ~100 ms on an H100) and board
power (a ~1 s moving average sampled at 10 Hz), so they agree only as well as power is steady.
The last columns repeat the check over the whole trial (every tracker sample, warm-up included,
a span several times the window): the counter's joules between the first and last sample over
the trapezoid of the sampled power, where the power average's lag weighs less.

Usage: python benchmarks/energy_table.py [--db URL] [--workloads cnn,resnet,catsdogs]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from rigbench.store import Store


def whole_trial(samples: Sequence[dict[str, Any]]) -> tuple[float, float, float] | None:
    """(span s, counter J, trapezoid of sampled power J) over the samples that carry both."""
    both = [s for s in samples if "gpu_power_w" in s and "gpu_energy_j" in s]
    if len(both) < 2:
        return None
    trapezoid = sum((a["gpu_power_w"] + b["gpu_power_w"]) / 2 * (b["t"] - a["t"]) for a, b in zip(both, both[1:]))
    return both[-1]["t"] - both[0]["t"], both[-1]["gpu_energy_j"] - both[0]["gpu_energy_j"], trapezoid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default=None)
    parser.add_argument("--workloads", default="cnn,resnet,catsdogs")
    args = parser.parse_args()
    wanted = set(args.workloads.split(","))
    store = Store(args.db, create=False)
    rows = []
    for r in store.full(store.list()):
        m = r.metrics
        if r.status != "ok" or r.spec.kind != "speed" or r.spec.workload not in wanted or m.gpu_energy_j is None:
            continue
        window_s = m.steps_measured * (m.step_time_ms_mean or 0) / 1000
        power_time = (m.gpu_power_w_mean or 0) * window_s
        span, counter, trapezoid = whole_trial(r.tracker_samples) or (float("nan"),) * 3
        rows.append((r.spec.workload, r.spec.framework, r.spec.batch_size, r.spec.precision,
                     "" if r.spec.compile in (None, False, "off") else str(r.spec.compile), m.samples_per_s, m.gpu_energy_j, m.energy_per_sample_j,
                     m.gpu_power_w_mean, window_s, power_time, m.gpu_energy_j / power_time if power_time else float("nan"),
                     span, counter / trapezoid if trapezoid else float("nan")))
    print(f"{'workload':9s} {'framework':11s} {'batch':>5s} {'prec':4s} {'compile':7s} {'samples/s':>10s} {'counter J':>10s} "
          f"{'mJ/sample':>10s} {'mean W':>7s} {'window s':>8s} {'W x s':>8s} {'ratio':>6s} {'trial s':>7s} {'ratio':>6s}")
    for w, f, b, p, c, sps, j, jps, watts, win, pt, ratio, span, whole in sorted(rows):
        print(f"{w:9s} {f:11s} {b:5d} {p:4s} {c:7s} {sps:10.1f} {j:10.1f} {jps * 1e3:10.3f} {watts:7.1f} {win:8.2f} "
              f"{pt:8.1f} {ratio:6.3f} {span:7.1f} {whole:6.3f}")


if __name__ == "__main__":
    main()
