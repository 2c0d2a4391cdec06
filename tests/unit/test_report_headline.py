"""The report's headline over more than one machine's results: found by an audit of the page made
from docs/results/gpu-h100.bundle.json and the two gpu-h200 bundles. The summary called catsdogs
"fastest on" the H100 only because the H200 never ran bf16 with torch.compile, and resnet
"fastest on" the H200 through JAX, which the H100 never ran; its speed-up over the CPU set an
H200 over the H100 machine's CPU while the chart beside it sets each GPU against its own
machine's CPU only; and the header listed "Devices cpu, cuda:0" for an H100, an H200 and a
Xeon. Results are built by hand; no trial runs."""

from __future__ import annotations

import re

import pytest

from rigbench.analysis.speedups import speedups_over_cpu
from rigbench.analysis.summary import machines_once, summary_rows
from rigbench.reports.summary_table import machine_cards, summary_cells
from tests.unit.test_device_identity import H100, H200, MACHINES, XEON, on


def catsdogs_and_resnet():
    """catsdogs: the H100 alone ran bf16 compiled (the fastest), both ran fp32 eager at batch 128,
    where the H200 is 1.25x the H100; resnet: JAX on the H200 alone (the fastest), torch on the
    H100 alone."""
    return [on("h100", workload="catsdogs", precision="bf16", compile="default", samples_per_s=6400.0),
            on("h100", workload="catsdogs", samples_per_s=800.0),
            on("h200", workload="catsdogs", samples_per_s=1000.0),
            on("h200", "jax", workload="resnet", samples_per_s=48_000.0),
            on("h100", workload="resnet", samples_per_s=21_000.0)]


def test_devices_are_compared_only_at_configurations_both_ran():
    catsdogs, resnet = summary_rows(catsdogs_and_resnet(), machines=MACHINES)
    assert catsdogs.best.device_name == H100 and catsdogs.best.spec.precision == "bf16"
    [pair] = catsdogs.devices
    # like for like the H200 is the faster: the H100's fastest configuration is one it alone ran
    assert (pair.device, pair.other, pair.shared) == (H100, H200, 1)
    assert pair.ratio == pytest.approx(0.8)
    [pair] = resnet.devices
    assert (pair.device, pair.other, pair.shared, pair.ratio) == (H200, H100, 0, None)
    # the CPU is not set against a GPU here (that is the speed-up's column), nor a device with itself
    assert summary_rows([on("h100", device="cpu"), on("h100")], machines=MACHINES)[0].devices == []


def test_the_summary_cells_say_what_the_fastest_configuration_was_and_what_was_compared():
    catsdogs, resnet = summary_cells(summary_rows(catsdogs_and_resnet(), machines=MACHINES))
    # framework, precision, compile (eager said, not left out) and batch
    assert catsdogs["config"] == "torch · bf16 · compile · batch 128"
    assert resnet["config"] == "jax · fp32 · eager · batch 128"
    assert catsdogs["devices_note"] == f"like for like: {H200} 1.25× {H100} (1 configuration both ran)"
    assert resnet["devices_note"] == f"{H100} ran none of the same configurations: no device comparison"
    # one GPU only: nothing to compare
    [alone] = summary_cells(summary_rows([on("h100")], machines=MACHINES))
    assert alone["devices_note"] == ""


def test_the_speed_up_over_the_cpu_is_over_the_cpu_of_the_gpus_own_machine_only():
    """The headline and the "Speed-up over the CPU" chart follow one rule: a GPU over another
    machine's CPU is no speed-up of either machine (a GPU over a slow laptop read in the thousands)."""
    cpu = on("h100", device="cpu", samples_per_s=100.0)
    results = [cpu, on("h100", samples_per_s=1000.0), on("h200", samples_per_s=2000.0)]
    [row] = summary_rows(results, machines=MACHINES)
    assert row.best.device_name == H200 and row.cpu_base is None and row.speedup_over_cpu is None
    assert row.cpu_elsewhere
    # the chart has no H200 bar either: its machine measured no CPU trial
    assert [r["device_name"] for r in speedups_over_cpu(results, MACHINES)] == [H100]
    [cell] = summary_cells([row])
    assert cell["speedup"] == "-"
    assert cell["speedup_note"] == "no CPU trial on its machine (the CPU trials here are another machine's)"
    # with a CPU trial of its own machine: over that one, as the chart
    own = on("h200", device="cpu", samples_per_s=250.0)
    [row] = summary_rows([*results, own], machines=MACHINES)
    assert row.cpu_base.trials == (own,) and row.speedup_over_cpu == pytest.approx(8.0) and not row.cpu_elsewhere
    chart = {r["device_name"]: r["speedup"] for r in speedups_over_cpu([*results, own], MACHINES)}
    assert chart[H200] == pytest.approx(row.speedup_over_cpu)
    # no machine has a CPU trial: said so
    [row] = summary_rows(results[1:], machines=MACHINES)
    assert not row.cpu_elsewhere and summary_cells([row])[0]["speedup_note"] == "no CPU trial"


def test_the_header_names_devices_by_model_and_counts_gpus_by_serial():
    pytest.importorskip("jinja2")
    from rigbench.reports import html

    lease = {run: {**machine, "gpus": [{**machine["gpus"][0], "uuid": f"GPU-{run}"}]} for run, machine in MACHINES.items()}
    machines = {**lease, "h200b": {**MACHINES["h200"], "gpus": [{"name": H200, "uuid": "GPU-other"}]}}
    unnamed = on("h100", status="diverged").model_copy(update={"device_name": None})  # it recorded no name
    results = [*catsdogs_and_resnet(), on("h100", device="cpu"),
               on("h200", workload="mlp").model_copy(update={"run_id": "h200b"}), unnamed]
    page, _ = html.render(results, machines)
    header = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page[page.index("<header>"):page.index("<nav>")]))
    assert f"Devices {XEON}, {H100}, {H200} " in header and "cuda:0" not in header
    # two leases of one machine type are one machine, said so, with their cards counted
    assert "3 on 2 machines (3 GPUs by serial number" in header
    entries = machines_once(results, machines)
    assert [len(e.gpu_serials) for e in entries] == [1, 2]
    cards = machine_cards(entries, results, {})
    assert cards[1]["headline"].endswith(f"{H200} (2 cards over its runs)")
    assert cards[0]["headline"].endswith(H100)
