"""Stored text is printed literally (never as rich markup), is clipped to the stated limits of
rigbench.textlimits on import, on storing and on display, and trials of a workload this
rigbench does not define are kept, labelled and never fatal to other commands."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from rigbench import api, cli
from rigbench.child_report import ChildReport
from rigbench.reports import terminal
from rigbench.runner.assemble import build_result
from rigbench.runner.launchers import Outcome
from rigbench.spec import Metrics, Result, TrialSpec
from rigbench.store import Store
from rigbench.store.bundle import dump_bundle, export_bundle
from rigbench.textlimits import ERROR_CHARS, NAME_CHARS, clip, clip_result

OOM = "[enforce fail at alloc_cpu.cpp:127] data. DefaultCPUAllocator: not enough memory"
CLOSE = "[/]"
BOLD = "[bold]x[/bold]"
HOSTILE = (OOM, CLOSE, BOLD)
MACHINE = {"hostname": "box", "cpu_model": f"CPU {BOLD}", "cpu_cores_logical": 2, "gpus": []}


def result(run_id: str, workload: str = "mlp", options: dict | None = None, status: str = "ok",
           error: str | None = None, device_name: str = f"CPU {BOLD}", software: str = f"2.13 {CLOSE}",
           **spec: object) -> Result:
    return Result(
        run_id=run_id, created_at="2026-01-01T00:00:00+00:00",
        spec=TrialSpec(**{"workload": workload, "workload_options": options or {}, "device": "cpu",
                          "batch_size": 32, **spec}),
        status=status, error=error, device_name=device_name,
        metrics=Metrics(samples_per_s=320.5, samples_per_s_ci=(300.0, 340.0), steps_measured=3,
                        flops_per_sample=1e9, params=1000),
        software={"torch": software}, step_times_s=[0.1, 0.11, 0.09, 0.1, 0.1, 0.12, 0.1, 0.09])


def invoke(*args: str) -> object:
    proc = CliRunner().invoke(cli.app, list(args))
    assert proc.exit_code == 0, proc.output
    return proc


@pytest.fixture()
def hostile(tmp_path):
    """Two runs of the same trial whose option, error, device name and software hold markup."""
    store = Store(str(tmp_path / "h.db"))
    for run_id in ("runA", "runB"):
        store.add_run(run_id, "2026-01-01T00:00:00+00:00", "rigbench run", MACHINE)
        store.add_result(result(run_id, options={"tag": CLOSE}))
        store.add_result(result(run_id, status="oom", error=f"{OOM} {CLOSE} {BOLD}", batch_size=64)
                         .model_copy(update={"metrics": Metrics()}))
    return store


def test_results_list_show_compare_roofline_print_markup_verbatim(hostile):
    db = hostile.url
    listed = invoke("results", "list", "--db", db).stdout
    assert f"mlp:tag={CLOSE}" in listed
    oom_id = next(r.id for r in hostile.list() if r.status == "oom")
    shown = invoke("results", "show", str(oom_id), "--db", db).stdout
    for text in HOSTILE:
        assert text in shown, text
    assert f"CPU {BOLD}" in shown and f"2.13 {CLOSE}" in shown
    compared = invoke("compare", "runA", "runB", "--db", db).stdout
    assert f"mlp:tag={CLOSE}" in compared and f"CPU {BOLD}" in compared
    roof = invoke("roofline", "--db", db).stdout
    assert f"mlp:tag={CLOSE}" in roof and f"CPU {BOLD}" in roof


def test_run_table_and_workloads_print_markup_verbatim(monkeypatch, tmp_path):
    done = result("abc123", options={"tag": CLOSE}, status="oom", error=f"{OOM} {CLOSE}")
    done = done.model_copy(update={"id": 7})
    monkeypatch.setattr(api, "plan_run", lambda **kw: [done.spec])
    monkeypatch.setattr(api, "run", lambda specs, **kw: api.RunOutcome("abc123", "sqlite:///x.db", [done], False))
    ran = invoke("run", "mlp", "--db", str(tmp_path / "x.db"))
    assert f"mlp:tag={CLOSE}" in ran.stdout

    row = {"name": "catsdogs", "task": "classification", "input_shape": [3, 256, 256], "dataset": "catsdogs",
           "dataset_train_size": 20000, "default_batch": 16, "params": 1, "train_flops_per_sample": 1e9,
           "options": {"tag": CLOSE}, "origin": f"first block [m,256,256,32] {CLOSE} {BOLD}"}
    monkeypatch.setattr(api, "workloads_info", lambda: [row])
    listed = invoke("workloads").stdout
    assert f"first block [m,256,256,32] {CLOSE} {BOLD}" in listed and f"tag={CLOSE}" in listed


def test_status_keeps_its_colour_and_noisy_mark_shows():
    r = result("r", status="oom", error=OOM)
    noisy = result("r")
    noisy.metrics.noisy = True
    table = terminal.results_table([r, noisy])
    status, _ = table.cells("status")
    assert status.plain == "oom" and str(status.style) == "yellow"
    oom_speed, speed = table.cells("samples/s [95% CI]")
    assert speed.plain == "320 [300–340] noisy" and oom_speed.plain == "-"  # an oom measured nothing


# --------------------------------------------------------------------------- lengths


def test_clip_notes_the_length():
    assert clip("abc", 3) == "abc"
    assert clip("x" * 10, 4) == "xxxx ... [truncated: 10 characters]"
    assert clip(clip("x" * 10, 4), 4) == "xxxx ... [truncated: 10 characters]"  # the first length stays
    huge = result("r", error="e" * 300_000, device_name="d" * 1000, software="s" * 1000,
                  options={"k" * 500: "v" * 500})
    small = clip_result(huge)
    assert len(small.error) < ERROR_CHARS + 50 and small.error.endswith("[truncated: 300,000 characters]")
    assert len(small.device_name) < NAME_CHARS + 50 and len(small.software["torch"]) < NAME_CHARS + 50
    [(key, value)] = small.spec.workload_options.items()
    assert len(key) < NAME_CHARS + 50 and len(value) < NAME_CHARS + 50
    assert small.step_times_s == huge.step_times_s and small.metrics == huge.metrics


def test_a_childs_huge_error_is_stored_clipped():
    spec = TrialSpec(workload="mlp", batch_size=8)
    built = build_result(spec, Outcome(reports=[ChildReport(status="crash", error="E" * 1_000_000)]), "r")
    assert len(built.error) < ERROR_CHARS + 50 and "[truncated: 1,000,000 characters]" in built.error


def truncated(size: int, table: str) -> bool:
    """The truncation note is in `table`, however the table wrapped it."""
    return f"[truncated:{size:,}characters]" in re.sub(r"[\s│]", "", table)


def test_a_20mb_error_in_a_bundle_is_clipped_on_import_show_and_report(tmp_path):
    size = 20_000_000
    source = Store(str(tmp_path / "src.db"))
    source.add_run("r1", "2026-01-01T00:00:00+00:00", "rigbench run", MACHINE)
    source.add_result(result("r1", status="crash", error="E" * size).model_copy(update={"metrics": Metrics()}))
    source.add_result(result("r1"))
    bundle = tmp_path / "big.json"
    bundle.write_text(dump_bundle(export_bundle(source)))
    db = str(tmp_path / "d.db")
    invoke("results", "import", str(bundle), "--db", db)
    stored = Store(db)
    crash = next(r for r in stored.list() if r.status == "crash")
    assert len(crash.error) < ERROR_CHARS + 50 and f"[truncated: {size:,} characters]" in crash.error

    shown = invoke("results", "show", str(crash.id), "--db", db).stdout
    assert truncated(size, shown) and len(shown) < 4 * ERROR_CHARS

    # a database that holds the huge text already (written before clipping) shows it clipped too
    source_crash = next(r for r in source.list() if r.status == "crash")
    old = invoke("results", "show", str(source_crash.id), "--db", source.url).stdout
    assert truncated(size, old) and len(old) < 4 * ERROR_CHARS
    out = tmp_path / "r.html"
    invoke("report", "--db", source.url, "--out", str(out))
    page = out.read_text()
    assert f"[truncated: {size:,} characters]" in page and out.stat().st_size < size / 2


# --------------------------------------------------------------------------- unknown workloads


def test_a_trial_of_an_unknown_workload_is_kept_and_never_fatal(tmp_path, monkeypatch):
    source = Store(str(tmp_path / "src.db"))
    source.add_run("r1", "2026-01-01T00:00:00+00:00", "rigbench run", MACHINE)
    source.add_result(result("r1", device_name="CPU X"))
    source.add_result(result("r1", workload="newnet", options={"size": 3}, device_name="CPU X"))
    source.add_result(result("r1", workload="mlp", framework="jaxish", device="tpu:0", device_name="TPU v9"))
    source.add_run("r2", "2026-01-02T00:00:00+00:00", "rigbench run", MACHINE)
    source.add_result(result("r2", device_name="CPU X"))
    source.add_result(result("r2", workload="newnet", options={"size": 3}, device_name="CPU X"))
    bundle = tmp_path / "b.json"
    bundle.write_text(dump_bundle(export_bundle(source)))
    db = str(tmp_path / "d.db")
    imported = invoke("results", "import", str(bundle), "--db", db)
    assert "5 results" in imported.stdout
    assert [r.spec.workload for r in Store(db).list(run_id="r1")] == ["mlp", "newnet", "mlp"]

    listed = invoke("results", "list", "--db", db).stdout
    assert "newnet:size=3 (unknown to this rigbench)" in listed and "tpu:0" in listed
    newnet = next(r for r in Store(db).list() if r.spec.workload == "newnet")
    shown = invoke("results", "show", str(newnet.id), "--db", db).stdout
    assert "newnet (unknown to this rigbench)" in shown and "is unknown to this rigbench" in shown
    exported = json.loads(invoke("results", "export", "--db", db).stdout)
    assert [r["workload"] for r in exported] == ["mlp", "newnet", "mlp", "mlp", "newnet"]
    compared = invoke("compare", "r1", "r2", "--db", db).stdout
    assert "newnet:size=3 (unknown to this rigbench)" in compared and "no change: 2" in compared

    roof = invoke("roofline", "--db", db, "--json").stdout
    rows = {r["label"].split()[0]: r for r in json.loads(roof)}
    assert rows["mlp"]["achieved_flops"] == pytest.approx(320.5e9)
    assert rows["newnet:size=3"]["intensity"] is None
    assert any("unknown to this rigbench" in n for n in rows["newnet:size=3"]["notes"])
    table = invoke("roofline", "--db", db).stdout
    assert "newnet:size=3 (unknown to this rigbench)" in table and "mlp" in table

    out = tmp_path / "r.html"
    invoke("report", "--db", db, "--out", str(out))
    page = out.read_text()
    assert "newnet" in page and "unknown to this rigbench" in page and "mlp torch cpu b32" in page

    published = invoke("compare", "--published", "--db", db).stdout
    assert "No stored result of" in published  # ran through the published tables
    score = CliRunner().invoke(cli.app, ["score", "--db", db])
    # nothing of the suite here: its normal one-line error, not a failure over the unknown trial
    assert score.exit_code in (0, 2), score.output
    assert "Traceback" not in score.output and "unknown workload" not in score.output
    if score.exit_code == 2:
        assert score.output.count("\n") == 1 and score.output.startswith("rigbench: error:")


def test_filters_that_match_nothing_say_so(hostile, tmp_path):
    # `results list --workload nosuch` printed an empty table and exit 0, as if nothing were wrong.
    db = hostile.url
    listed = invoke("results", "list", "--workload", "cnn", "--status", "oom", "--db", db)
    assert listed.stdout == "" and f"no results match --workload cnn --status oom in {db}" in listed.stderr
    # a workload that is neither rigbench's nor stored is a typo: exit 2, naming the known ones
    typo = CliRunner().invoke(cli.app, ["results", "list", "--workload", "cnnn", "--db", db])
    assert typo.exit_code == 2 and typo.stdout == "" and typo.stderr.count("\n") == 1
    assert "--workload 'cnnn' is neither a workload rigbench knows nor one stored in" in typo.stderr
    assert "choose from mlp, autoencoder, cnn," in typo.stderr
    # a stored workload this rigbench does not define is found, even by a status it has none of
    hostile.add_result(result("runA", workload="newnet"))
    assert "newnet" in invoke("results", "list", "--workload", "newnet", "--db", db).stdout
    none = invoke("results", "list", "--workload", "newnet", "--status", "oom", "--db", db)
    assert f"no results match --workload newnet --status oom in {db}" in none.stderr
    # a run id that names no stored run is a typo, said as `report` says it: exit 2, nothing printed
    for command in (["results", "export"], ["results", "export", "--format", "csv"], ["results", "list"]):
        typo = CliRunner().invoke(cli.app, [*command, "--run", "nosuch", "--db", db])
        assert typo.exit_code == 2 and typo.stdout == "" and "no run 'nosuch' in" in typo.stderr
    empty = str(tmp_path / "empty.db")
    Store(empty)
    assert "no results stored yet in" in invoke("results", "list", "--db", empty).stderr


def test_a_workload_with_options_lists_the_trials_of_those_values(tmp_path):
    """`results list --workload resnet:depth=56` (a reference `run` takes) was called a typo;
    an empty --workload listed everything."""
    store = Store(str(tmp_path / "w.db"))
    store.add_run("r", "2026-01-01T00:00:00+00:00", "rigbench run", {})
    for options in ({}, {"depth": 56}, {"depth": 20}):
        store.add_result(result("r", workload="resnet", options=options))
    db = str(tmp_path / "w.db")

    def ids(ref):
        done = CliRunner().invoke(cli.app, ["results", "list", "--workload", ref, "--db", db, "--limit", "2"])
        assert done.exit_code == 0, done.output
        return [line.split()[0] for line in done.stdout.splitlines() if line.strip()[:1].isdigit()]

    assert ids("resnet:depth=56") == ["2"]
    assert ids("resnet:depth=20") == ["1", "3"]  # 20 is resnet's default depth: the first trial is one too
    assert ids("resnet") == ["2", "3"]  # the newest two, as --limit says
    none = CliRunner().invoke(cli.app, ["results", "list", "--workload", "resnet:depth=110", "--db", db])
    assert none.exit_code == 0 and "no results match --workload resnet:depth=110" in none.stderr
    for bad, words in (("resnet:depth=7", "option depth=7 of 'resnet' must be one of"), ("", "--workload is empty")):
        refused = CliRunner().invoke(cli.app, ["results", "list", "--workload", bad, "--db", db])
        assert refused.exit_code == 2 and words in refused.stderr, refused.output


# ------------------------------------------------------------------ terminal control characters

SCREEN = "\x1b[2J\x1b]0;pwned\x07evil"


def test_control_characters_in_stored_text_are_shown_not_sent(tmp_path):
    # a bundle's workload clears the screen and sets the window's title; its error turns red
    source = Store(str(tmp_path / "s.db"))
    source.add_run("r1", "2026-01-01T00:00:00+00:00", "rigbench run", {**MACHINE, "cpu_model": "CPU\x1b[5m"})
    source.add_result(result("r1", workload=SCREEN, status="crash", error="boom \x1b[31mred\x1b[0m\x9b\x7f\r")
                      .model_copy(update={"metrics": Metrics()}))
    bundle = tmp_path / "b.json"
    bundle.write_text(dump_bundle(export_bundle(source)))
    db = str(tmp_path / "d.db")
    invoke("results", "import", str(bundle), "--db", db)
    assert Store(db).list()[0].spec.workload == SCREEN  # stored as it came: data, not display
    listed = invoke("results", "list", "--db", db).stdout
    shown = invoke("results", "show", "1", "--db", db).stdout
    for printed in (listed, shown):
        assert not any(c in printed for c in "\x1b\x07\x9b\x7f\r"), repr(printed)
        assert r"\x1b[2J\x1b]0;pwned\x07evil" in printed
    assert r"boom \x1b[31mred\x1b[0m\x9b\x7f\x0d" in shown and r"CPU\x1b[5m" in shown


def test_a_cell_keeps_its_style_and_line_breaks_when_control_characters_are_written_out():
    from rich.console import Console
    from rich.text import Text

    from rigbench.reports.table_fit import Column, FitTable
    from rigbench.textlimits import visible

    assert visible("a\tb\nc\x00\x1b\x7f\x85") == "a\tb\nc\\x00\\x1b\\x7f\\x85"
    table = FitTable([Column("a"), Column("b", wrap=True)], title="t\x1b[2J")
    table.add_row(Text("x\x1b[1m", style="bold"), "line 1\nline\x1b 2")
    assert table.cells("a")[0].plain == "x\\x1b[1m" and table.cells("a")[0].style == "bold"
    console = Console(width=80, record=True)
    console.print(table)
    text = console.export_text()
    assert "\x1b" not in text and "t\\x1b[2J" in text and "line\\x1b 2" in text


def test_the_commands_consoles_write_control_characters_out_in_plain_lines():
    """A note or message quoting stored text (a device name in `compare`'s notes, an error in a
    one-line outcome) goes through cli.common's consoles, which write control characters out."""
    import io

    from rigbench.cli.console import _Console

    buffer = io.StringIO()
    console = _Console(file=buffer, markup=False, width=100)
    console.print("devices: GPU\x1b[2J -> CPU\x07", "[bold]kept[/bold]", highlight=False)
    assert buffer.getvalue() == "devices: GPU\\x1b[2J -> CPU\\x07 [bold]kept[/bold]\n"


def test_control_characters_in_stored_text_are_written_out_in_the_report_and_its_pngs(tmp_path):
    """The HTML report (text, chart names, labels, hover text) and the PNGs show stored text as
    the terminal does: a raw ESC was written into the page, and matplotlib warned "Glyph 27 ()
    missing from font(s)" for each PNG label that held one."""
    import warnings

    store = Store(str(tmp_path / "c.db"))
    store.add_run("r1", "2026-01-01T00:00:00+00:00", "rigbench run \x1b[2J", {**MACHINE, "cpu_model": "CPU\x1b[5m"})
    for batch in (16, 32):
        store.add_result(result("r1", options={"tag": "<b>\x1b[31m"}, device_name="CPU\x1b[5m &amp;", batch_size=batch))
    store.add_result(result("r1", workload=SCREEN, status="crash", error="boom \x1b[31mred")
                     .model_copy(update={"metrics": Metrics()}))
    out, pngs = tmp_path / "r.html", tmp_path / "png"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        invoke("report", "--db", store.url, "--out", str(out), "--png", str(pngs))
    assert not [str(w.message) for w in caught if "Glyph" in str(w.message)]
    assert list(pngs.glob("*.png"))
    page = out.read_text()
    assert not any(c in page for c in "\x1b\x07")
    assert r"boom \x1b[31mred" in page and r"CPU\x1b[5m &amp;amp;" in page  # escaped once, as before
    charts = page.split('id="rigbench-charts">', 1)[1].split("</script>", 1)[0]
    assert "\\u001b" not in charts  # JSON's escape of a raw ESC, which plotly would draw
    text = json.dumps(json.loads(charts))
    assert r"CPU\\x1b[5m &amp;amp;" in text and r"tag=&lt;b&gt;\\x1b[31m" in text  # names, hover: HTML-escaped once


def test_clip_value_clips_every_string_and_keeps_every_number_as_it_is():
    from rigbench.textlimits import clip_value

    long = "x" * 20
    value = {long: [1, 2.5, True, None, (long, 3)], "n": {"k": long, "f": float("inf"), "b": False},
             "ci": (9.0, 11.0)}
    clipped = clip_value(value, 5)
    short = clip(long, 5)
    assert clipped == {short: [1, 2.5, True, None, (short, 3)], "n": {"k": short, "f": float("inf"), "b": False},
                       "ci": (9.0, 11.0)}
    assert clipped["n"]["b"] is False and clipped[short][2] is True and isinstance(clipped[short][4], tuple)
    spec = clip_value(TrialSpec(workload="mlp", batch_size=8, framework=long), 5)
    assert spec.framework == short and spec.batch_size == 8


def test_clip_result_gives_the_result_itself_where_nothing_is_long_and_a_copy_where_anything_is():
    # a report over a fleet's database clips every result: one that needs nothing is not copied
    plain = result("r", error="boom", device_name="cpu", software="2.13.0", options={"k": "v"})
    assert clip_result(plain) is plain
    long = "v" * 1000
    note = "[truncated: 1,000 characters]"
    in_options = plain.model_copy(update={"spec": plain.spec.model_copy(update={"workload_options": {"k": long}})})
    assert clip_result(in_options).spec.workload_options["k"].endswith(note)
    in_tracker = plain.model_copy(update={"tracker_samples": [{"t": 1.0}, {long: 2.0}]})
    assert list(clip_result(in_tracker).tracker_samples[1])[0].endswith(note)
    assert clip_result(in_tracker).tracker_samples[0] == {"t": 1.0}
    assert in_options.spec.workload_options["k"] == long and list(in_tracker.tracker_samples[1]) == [long]  # not changed


def test_clip_result_clips_long_names_among_many_numbers_as_it_clips_them_alone():
    # raw samples are told apart in bulk (clip_value's fast paths): a long name among them is still found
    from rigbench.rank_record import RankRecord
    from rigbench.spec import EpochRecord
    from rigbench.textlimits import clip_value

    long, steps = "k" * 300, [0.1] * 200
    short = clip(long, NAME_CHARS)
    samples = [{"t": float(i), "rss_bytes": None} for i in range(50)]
    plain = result("r", error="boom", device_name="cpu", software="2.13.0").model_copy(update={
        "step_times_s": steps, "tracker_samples": samples, "loss_curve": [1.0, 2.0], "lr_curve": [(1.0, 2.0, 3.0)],
        "epoch_records": [EpochRecord(epoch=1, steps=2, train_loss=1.0, train_seconds=1.0, eval_seconds=0.5,
                                      extra={"loss_d": 0.5})],
        "ranks": [RankRecord(rank=0, status="ok", host="node1")]})
    assert clip_result(plain) is plain
    wide = plain.model_copy(update={
        "tracker_samples": [*samples, {"t": 60.0, long: 1.0}],
        "epoch_records": [plain.epoch_records[0].model_copy(update={"extra": {long: 0.5}})],
        "ranks": [RankRecord(rank=0, status="ok", host=long)],
        "software": {"torch": "2.13.0", "build": {"flags": ["-O2", long], "n": 3}}})
    clipped = clip_result(wide)
    assert clipped.tracker_samples == [*samples, {"t": 60.0, short: 1.0}]
    assert clipped.tracker_samples[0] is samples[0] and clipped.step_times_s is steps  # what needed nothing is kept
    assert clipped.epoch_records[0].extra == {short: 0.5} and clipped.ranks[0].host == short
    assert clipped.software == {"torch": "2.13.0", "build": {"flags": ["-O2", short], "n": 3}}
    assert wide.tracker_samples[-1] == {"t": 60.0, long: 1.0}  # the given result is not changed
    # not strings at all, or not only: an int key, a number subclass, a string among numbers
    assert clip_value([{1: long}, {"t": 1.0}], 5) == [{1: clip(long, 5)}, {"t": 1.0}]
    assert clip_value([1.0, 2, None, True, long], 5) == [1.0, 2, None, True, clip(long, 5)]
    assert clip_value({"a": 1, long: None}, 5) == {"a": 1, clip(long, 5): None}
