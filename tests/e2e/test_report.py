"""`rigbench report` end to end: real CPU trials, the real CLI in a subprocess, and the page
opened offline in real headless Chromium (Debian's `chromium`, driven by playwright)."""

import json
import os
import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("torch")
for _module in ("plotly", "jinja2", "matplotlib"):
    pytest.importorskip(_module, reason="the report extra is not installed: pip install -e '.[report]'")

from typer.testing import CliRunner  # noqa: E402

from rigbench import api, cli  # noqa: E402
from rigbench.fingerprint import machine_key  # noqa: E402
from rigbench.reports.cells import interval  # noqa: E402
from rigbench.spec import Metrics  # noqa: E402
from rigbench.store import Store  # noqa: E402
from rigbench.store.calibrations import add_calibration  # noqa: E402
from rigbench.workloads import WORKLOADS  # noqa: E402
from tests.e2e.test_bad_input import assert_one_line_error  # noqa: E402
from tests.unit.test_report_data import every_kind_of_result  # noqa: E402

pytestmark = pytest.mark.timeout(300)

PWNED = "<script>window.__pwned=1</script>"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
H100_BUNDLE = Path(__file__).resolve().parents[2] / "docs" / "results" / "gpu-h100.bundle.json"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def rigbench(*args):
    return subprocess.run([sys.executable, "-m", "rigbench", *args], check=False, capture_output=True,
                          text=True, timeout=240)


@pytest.fixture(scope="module")
def filled_db(tmp_path_factory):
    """4 real CPU trials (mlp and cnn at batch 8 and 16) plus one crashed trial whose error
    text is a script tag. Module-scoped: the trials take ~30-40 s."""
    base = tmp_path_factory.mktemp("report")
    db = str(base / "report.db")
    with pytest.MonkeyPatch.context() as mp:  # conftest's isolation is per test, this runs before it
        mp.setenv("RIGBENCH_CACHE_DIR", str(base / "cache"))
        specs = api.plan_run(workloads=["mlp", "cnn"], devices=["cpu"], batch_sizes=[8, 16],
                             quick=True, threads=1)
        outcome = api.run(specs, db=db, command="pytest: report fixture")
    assert [r.status for r in outcome.results] == ["ok"] * 4, [r.error for r in outcome.results]
    crashed = outcome.results[0].model_copy(update={
        "id": None, "status": "crash", "metrics": Metrics(),
        "error": f"RuntimeError: boom\n{PWNED}"})
    Store(db).add_result(crashed)
    return db


@pytest.fixture(scope="module")
def report_page(filled_db, tmp_path_factory):
    path = tmp_path_factory.mktemp("page") / "report.html"
    proc = rigbench("report", "--db", filled_db, "--out", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "5 trials, 4 charts" in proc.stdout
    return path


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium; .ci/run installs it)")
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="playwright is missing (pip install -e '.[test]')")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def open_offline(browser, path):
    """A page showing `path`, with every request that is not file:// or data: aborted.
    Returns (page, console and page errors, blocked URLs)."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors, blocked = [], []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    def only_local(route):
        if route.request.url.startswith(("file:", "data:")):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()
    page.route("**/*", only_local)
    page.goto(path.as_uri())
    page.wait_for_function("document.querySelectorAll('.chart').length > 0 && "
                           "document.querySelectorAll('.chart').length === "
                           "document.querySelectorAll('.chart.js-plotly-plot').length")
    return page, errors, blocked


def drawn_charts(page):
    """chart id -> (points per trace in its data, drawn SVG points)."""
    rows = page.evaluate("""Array.from(document.querySelectorAll('.chart')).map(el => [
        el.id, (el.data || []).map(t => (t.x || []).length), el.querySelectorAll('.point').length])""")
    return {chart_id: (lengths, points) for chart_id, lengths, points in rows}


def test_page_is_one_self_contained_file(report_page):
    text = report_page.read_text(encoding="utf-8")
    assert text.count("* plotly.js v") == 1  # the library once, not once per chart
    assert "<script src" not in text and "<link" not in text
    assert PWNED not in text  # only ever escaped
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in text
    assert "docs/METHODOLOGY.md" in text


def test_page_in_chromium_offline(report_page, browser):
    page, errors, blocked = open_offline(browser, report_page)
    try:
        assert errors == [] and blocked == []
        charts = drawn_charts(page)
        # no GPU: no empty GPU charts; real trials carry FLOPs and traffic: a roofline
        assert set(charts) == {"chart-speed", "chart-cpu", "chart-rss", "chart-roofline"}
        for chart_id, (lengths, points) in charts.items():
            # mlp and cnn, batch 8 and 16 each (then the roofline's ceilings, if this CPU has any)
            assert lengths[:2] == [2, 2], chart_id
            assert points >= 4, chart_id
        assert page.evaluate("typeof window.__pwned") == "undefined"
        cell = page.locator("#failed pre.error")
        assert cell.count() == 1 and cell.is_visible()
        assert PWNED in cell.inner_text()
        assert page.locator("#speedup, #scaling").count() == 0  # no data, no section

        # hovering a point shows its exact value and the trial's spec. A knee mark can sit on a
        # point (the knee is at the smallest batch when the next one measured no faster), and
        # then its label answers the hover: try the next point.
        text = ""
        for i in range(4):
            point = page.locator("#chart-speed .point").nth(i)
            point.scroll_into_view_if_needed()
            box = point.bounding_box()
            # approach the point as a pointer does (plotly's hover follows mouse movement over the plot)
            page.mouse.move(box["x"] + box["width"] / 2 - 6, box["y"] + box["height"] / 2)
            page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2, steps=3)
            hover = page.locator("#chart-speed .hovertext").first
            hover.wait_for(timeout=10000)
            text = hover.text_content() or ""  # an SVG element: no innerText
            if "samples/s (95% CI" in text:
                break
            page.mouse.move(0, 0)
        assert "samples/s (95% CI" in text and "torch cpu b" in text and "trial " in text
        page.mouse.move(0, 0)

        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
    finally:
        page.close()


def test_every_chart_kind_draws_in_chromium(tmp_path, browser):
    """GPU, speed-up, precision, thread and roofline charts, from results built here (no GPU needed)."""
    db = str(tmp_path / "kinds.db")
    store = Store(db)
    # stored names of textlimits' 256 characters without a space: the page keeps its width
    cpu_name, host = "Test CPU " + "x" * 247, "<b>host</b>" + "y" * 245
    store.add_run("r1", "2026-01-01T00:00:00+00:00", "test", {"hostname": host})
    # two trials with counted FLOPs and estimated traffic: one on a calibrated CPU, one on a
    # GPU in the spec sheets, so the roofline draws both kinds of ceiling
    roofline_data = {"flops_per_sample": 2e7, "bytes_per_sample": 2e6, "params": 100_000}
    devices = {(8, "cpu"): cpu_name, (16, "cuda:0"): "NVIDIA H100 80GB HBM3"}
    for result in every_kind_of_result():
        name = devices.get((result.spec.batch_size, result.spec.device))
        if name:  # every precision: a device's bf16 and fp32 trials pair by its model (the precision chart)
            result = result.model_copy(update={"device_name": name})
        if name and result.spec.precision == "fp32" and result.status == "ok" and result.threads == 1:
            result = result.model_copy(update={"metrics": result.metrics.model_copy(update=roofline_data)})
        store.add_result(result)
    add_calibration(store, "r1", "2026-01-01T00:00:00+00:00", {
        "device": "cpu", "device_name": cpu_name, "measurements": [
            {"kind": "matmul", "precision": "fp32", "status": "ok", "value": 1e11, "unit": "FLOP/s", "detail": {}},
            {"kind": "memory_bandwidth", "precision": None, "status": "ok", "value": 1e10, "unit": "B/s", "detail": {}}]})
    done = api.report(str(tmp_path / "kinds.html"), db=db)
    assert done.charts == ["speed", "speedup_cpu", "roofline", "predicted", "precision", "threads",
                           "cpu", "gpu", "rss", "gpu_mem"]
    page, errors, blocked = open_offline(browser, tmp_path / "kinds.html")
    try:
        assert errors == [] and blocked == []
        charts = drawn_charts(page)
        assert len(charts) == 10
        for chart_id, (lengths, points) in charts.items():
            assert lengths and all(lengths) and points > 0, chart_id
        # the two trials, then the calibrated CPU roof and the H100's spec-sheet roof (3 points each)
        assert charts["chart-roofline"][0] == [1, 1, 3, 3]
        axes = page.evaluate("(el => [el.layout.xaxis.type, el.layout.yaxis.type, el.getBoundingClientRect().height])"
                             "(document.getElementById('chart-roofline'))")
        assert axes[:2] == ["log", "log"] and axes[2] >= 400  # issue 14: a roofline that can be read
        assert host in page.locator("#machine").inner_text()
        assert cpu_name in page.locator("header").inner_text()  # its devices
        # they break instead: the page was 2,636 px wide at 1,400 with a long device name
        assert page.evaluate("document.documentElement.scrollWidth") <= 1400
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "report-all-kinds.png"), full_page=True)
    finally:
        page.close()


def test_png_per_chart(filled_db, tmp_path):
    proc = rigbench("report", "--db", filled_db, "--out", str(tmp_path / "r.html"),
                    "--png", str(tmp_path / "png"))
    assert proc.returncode == 0, proc.stderr
    files = sorted((tmp_path / "png").iterdir())
    assert [f.name for f in files] == ["cpu.png", "roofline.png", "rss.png", "speed.png"]
    for f in files:
        data = f.read_bytes()
        assert data.startswith(PNG_SIGNATURE) and len(data) > 5000


def test_where_and_run_select_trials(filled_db, tmp_path):
    run_id = Store(filled_db).list()[0].run_id
    proc = rigbench("report", "--db", filled_db, "--run", run_id, "--where", "workload=cnn",
                    "--where", "batch_size=16", "--out", str(tmp_path / "cnn.html"))
    assert proc.returncode == 0, proc.stderr
    assert "1 trial, 4 charts" in proc.stdout
    # only failures: the page still has the machine and the failed-trials table, and no charts
    proc = rigbench("report", "--db", filled_db, "--where", "status=crash", "--out", str(tmp_path / "f.html"),
                    "--png", str(tmp_path / "none"))
    assert proc.returncode == 0, proc.stderr
    assert "1 trial, 0 charts" in proc.stdout and f"PNGs: 0 in {tmp_path / 'none'}" in proc.stdout
    assert "&lt;script&gt;window.__pwned" in (tmp_path / "f.html").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def h100_db(tmp_path_factory):
    """The H100 session's 46 real results (energy measured by NVML's counter), imported into a
    fresh database by the CLI; the bundle file itself is only read."""
    db = str(tmp_path_factory.mktemp("h100") / "h100.db")
    proc = rigbench("results", "import", str(H100_BUNDLE), "--db", db)
    assert proc.returncode == 0, proc.stderr
    return db


def test_energy_charts_from_real_h100_results(h100_db, tmp_path, browser):
    bundle = json.loads(H100_BUNDLE.read_text(encoding="utf-8"))
    # speed trials with a measured energy per sample, per workload, counted from the file itself
    measured = Counter(r["spec"]["workload"] for r in bundle["results"] if r["spec"]["kind"] == "speed"
                       and r["status"] == "ok" and r["metrics"].get("energy_per_sample_j"))
    assert measured == {"cnn": 6, "resnet": 6, "catsdogs": 6}
    done = api.report(str(tmp_path / "h100.html"), db=h100_db, png_dir=str(tmp_path / "png"))
    energy = [c for c in done.charts if c.startswith("energy_")]
    assert energy == [f"energy_{kind}_{w}" for w in ("catsdogs", "cnn", "resnet") for kind in ("batch", "pareto")]
    assert {Path(p).name for p in done.pngs} >= {f"{c}.png" for c in energy}
    page, errors, blocked = open_offline(browser, tmp_path / "h100.html")
    try:
        assert errors == [] and blocked == []
        charts = drawn_charts(page)
        for workload, n in measured.items():
            lengths, points = charts[f"chart-energy_batch_{workload}"]
            assert sum(lengths) == n and points == n, workload
            lengths, points = charts[f"chart-energy_pareto_{workload}"]
            assert sum(lengths[:-1]) == n and points == sum(lengths), workload
        # one line per precision (catsdogs: and its compiled bf16 trial, in another run)
        assert charts["chart-energy_batch_cnn"][0] == [3, 3]
        assert charts["chart-energy_batch_catsdogs"][0] == [3, 2, 1]
        # the fronts: cnn's b512 fp32 (fastest) and b512 bf16 (least J/sample); resnet's b512
        # bf16 and catsdogs' compiled bf16 b64 beat every other trial on both
        fronts = page.evaluate("""['cnn', 'resnet', 'catsdogs'].map(w => {
            const t = document.getElementById('chart-energy_pareto_' + w).data.slice(-1)[0];
            return [t.name, t.x.length, t.line.dash]; })""")
        assert fronts == [["Pareto front", 2, "dash"], ["Pareto front", 1, "dash"], ["Pareto front", 1, "dash"]]
        ARTIFACTS.mkdir(exist_ok=True)
        page.locator("#energy").screenshot(path=str(ARTIFACTS / "report-energy.png"))
    finally:
        page.close()


@pytest.mark.parametrize("args,message", [
    (["--where", "colour=red"], "unknown --where key 'colour': use workload, device, device_name, framework"),
    (["--where", "batch_size"], "--where 'batch_size' must be KEY=VALUE"),
    (["--where", "batch_size=big"], "batch_size must be a whole number"),
    (["--where", "workload=resnet"], "match --where workload=resnet"),
    (["--run", "nosuchrun"], "no results stored for --run 'nosuchrun'"),
])
def test_bad_selection_is_one_line_exit_2(filled_db, tmp_path, args, message):
    # In process, as tests/e2e/test_bad_input.py: a process of its own only added its start-up
    # (tests/e2e/test_cli.py checks a real process's exit 2 and one line)
    assert_one_line_error(CliRunner().invoke(cli.app, ["report", "--db", filled_db, "--out", str(tmp_path / "x.html"),
                                                       *args]), message)
    assert not (tmp_path / "x.html").exists()


# --------------------------------------------------------------------------- the page people read first (issue 14)

#: Where the test run writes its screenshot of the page (1400 px wide) for people to look at.
SCREENSHOT_ENV = "RIGBENCH_REPORT_SCREENSHOT"


@pytest.fixture(scope="module")
def demo_report(filled_db, tmp_path_factory):
    """The real CPU trials and the H100 session's 46 results in one database, with a repeat of its
    mlp trial, reported by the CLI with --screenshot (the docs' command): two machines, the H100
    bundle's workloads, GPU:CPU pairs.
    Returns (database, page, screenshot)."""
    if not Path(CHROMIUM).exists():  # --screenshot drives it, as the browser fixture does
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium; .ci/run installs it)")
    base = tmp_path_factory.mktemp("demo")
    db = base / "demo.db"
    db.write_bytes(Path(filled_db).read_bytes())
    proc = rigbench("results", "import", str(H100_BUNDLE), "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    # a repeat of the H100's mlp trial in its run, 20% slower: the headline must show their mean
    store = Store(str(db))
    h100_mlp = next(r for r in store.list() if r.spec.workload == "mlp" and r.spec.device != "cpu")
    slower = h100_mlp.metrics.model_copy(update={"samples_per_s": 0.8 * (h100_mlp.metrics.samples_per_s or 0)})
    store.add_result(h100_mlp.model_copy(update={"id": None, "metrics": slower}))
    shot = Path(os.environ.get(SCREENSHOT_ENV) or base / "report-top.png")
    proc = rigbench("report", "--db", str(db), "--out", str(base / "demo.html"), "--screenshot", str(shot))
    assert proc.returncode == 0, proc.stderr
    assert f"Screenshot: {shot}" in proc.stdout
    return str(db), base / "demo.html", shot


@pytest.fixture(scope="module")
def demo_page(demo_report, browser):
    page, errors, blocked = open_offline(browser, demo_report[1])
    assert errors == [] and blocked == []
    yield page
    page.close()


def _speed_trials(db):
    return [r for r in Store(db).list() if r.spec.kind == "speed" and r.status == "ok" and r.metrics.samples_per_s]


def _network(r):
    """The workload as the page names a network, computed here from the registry."""
    name = r.spec.workload + "".join(f":{k}={v}" for k, v in sorted(r.spec.workload_options.items()))
    current = WORKLOADS[r.spec.workload].revision
    return name if r.spec.workload_revision == current else f"{name} (revision {r.spec.workload_revision})"


def test_summary_table_is_the_database_fastest_configuration_per_workload(demo_report, demo_page):
    store = Store(demo_report[0])
    # per network, machine (fingerprint.machine_key: the H100 VM and the CPU-only dev VM share a
    # CPU name) and configuration: the trials of its newest run
    newest: dict[tuple, list] = {}
    for r in sorted(_speed_trials(demo_report[0]), key=lambda r: r.id):
        key = (_network(r), machine_key(store.machine(r.run_id)), r.spec.config_key())
        newest[key] = [t for t in newest.get(key, []) if t.run_id == r.run_id] + [r]
    best, cpu = {}, {}  # cpu: (network, machine) -> the fastest CPU configuration's geometric mean there
    for (network, machine, _), trials in newest.items():
        figure = statistics.geometric_mean(t.metrics.samples_per_s for t in trials)
        if trials[0].spec.device == "cpu":
            cpu[(network, machine)] = max(figure, cpu.get((network, machine), 0.0))
        if network not in best or figure > best[network][0]:
            best[network] = (figure, trials)
    assert any(len(trials) > 1 for _, trials in best.values())  # the data has repeats to average
    rows = demo_page.evaluate("""Array.from(document.querySelectorAll('#summary tr[data-workload]')).map(tr =>
        [tr.dataset.workload, Number(tr.dataset.trial), tr.querySelector('.device').innerText,
         tr.querySelector('.sps').innerText, tr.querySelector('.speedup').innerText])""")
    assert [row[0] for row in rows] == sorted(best)
    for workload, trial, device, sps, speedup in rows:
        figure, trials = best[workload]
        r = trials[-1]
        assert trial == r.id and device.startswith(r.device_name or r.spec.device), workload
        if len(trials) > 1:
            assert "mean of trials " + ", ".join(str(t.id) for t in trials) in device, workload
        assert sps.split("\n")[0] == interval(figure, None), workload  # as `results list` rounds it
        # over the CPU of the best configuration's own machine only (the speed-up chart's rule)
        base = cpu.get((workload, machine_key(store.machine(r.run_id))))
        ratio = figure / base if base else None
        assert speedup.split("\n")[0] == ("-" if ratio is None else f"{ratio:,.2f}×"), workload
    # above the fold at 1400 x 900: the summary starts on the first screen
    assert demo_page.locator("#summary").bounding_box()["y"] < 900
    # two machines, each described once however many runs it has
    assert demo_page.locator("header .machines li").count() == 2
    # printed (to PDF): no navigation, charts kept whole
    demo_page.emulate_media(media="print")
    try:
        assert demo_page.evaluate("getComputedStyle(document.querySelector('nav')).display") == "none"
        assert demo_page.evaluate("getComputedStyle(document.querySelector('.chart')).breakInside") == "avoid"
    finally:
        demo_page.emulate_media(media="screen")


def test_one_panel_per_workload_and_legends_name_only_what_varies(demo_report, demo_page):
    trials = _speed_trials(demo_report[0])
    panels = demo_page.evaluate("""document.getElementById('chart-speed').layout.annotations
        .map(a => a.text.replace(/<[^>]+>/g, ''))""")
    assert panels == sorted({_network(r) for r in trials})
    # the speed legend: one entry per configuration but for workload, batch and run (the device
    # by its name), plus the knee marker; never more
    configs = {(r.device_name or r.spec.device,
                r.spec.config_key(ignore=("workload", "workload_options", "workload_revision", "batch_size", "device")))
               for r in trials}
    charts = demo_page.evaluate("""Array.from(document.querySelectorAll('.chart')).map(el => [el.id,
        el.data.filter(t => t.showlegend !== false).map(t => t.name),
        el.getBoundingClientRect().bottom,
        (el.querySelector('.legend') || el).getBoundingClientRect().bottom])""")
    for chart_id, names, chart_bottom, legend_bottom in charts:
        assert len(names) == len(set(names)), chart_id  # one entry per name
        assert legend_bottom <= chart_bottom + 1, chart_id  # the whole legend shows: no scrolling
    speed_names = dict((c[0], c[1]) for c in charts)["chart-speed"]
    assert len([n for n in speed_names if not n.startswith("knee")]) == len(configs)
    assert not any(n.startswith("torch") or " · torch" in n for n in speed_names)  # constant: said once
    assert "same for every series: torch" in demo_page.evaluate(
        "document.getElementById('chart-speed').layout.title.subtitle.text")


def test_screenshot_of_the_page_at_1400_px(demo_report):
    data = demo_report[2].read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width == 1400 and 900 <= height <= 2000
