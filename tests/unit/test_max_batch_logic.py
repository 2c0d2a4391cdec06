"""max-batch's pure logic: the probe sequence, the end of the bisection, the least-squares
memory model, the rounding and the recommendation; hand-computed numbers, no children."""

import pytest

from rigbench.experiments.max_batch import (
    MIB,
    MaxBatchOutcome,
    counted_crash,
    crash_over_limit,
    fit_memory_model,
    next_probe,
    recommend,
    replay,
    round_batch,
)
from rigbench.experiments.max_batch_logic import falling_peak, fitted
from rigbench.spec import Metrics, Result, TrialSpec


def search(fits, start, max_batch=65536, tolerance=0.0):
    """Drive next_probe with an oracle; returns the probes in order, largest ok, smallest oom."""
    ok, oom, probes = [], [], []
    while (batch := next_probe(ok, oom, start, max_batch, tolerance)) is not None:
        assert batch not in probes, "a batch is never probed twice"
        probes.append(batch)
        (ok if fits(batch) else oom).append(batch)
    return probes, max(ok, default=None), min(oom, default=None)


def test_grows_by_doubling_then_bisects_to_the_exact_batch():
    probes, largest_ok, smallest_oom = search(lambda b: b <= 300, start=8)
    # 8..256 fit, 512 does not; then (256+512)//2 = 384 oom, 320 oom, 288 ok, 304 oom,
    # 296 ok, 300 ok, 302 oom, 301 oom: 301 - 300 = 1 ends the search.
    assert probes == [8, 16, 32, 64, 128, 256, 512, 384, 320, 288, 304, 296, 300, 302, 301]
    assert (largest_ok, smallest_oom) == (300, 301)


def test_tolerance_stops_the_bisection_early():
    # lo=256, hi=512: 256 > 0.25*256 = 64 -> 384 (oom); 128 > 64 -> 320 (oom); 64 <= 64: stop.
    probes, largest_ok, smallest_oom = search(lambda b: b <= 300, start=8, tolerance=0.25)
    assert probes == [8, 16, 32, 64, 128, 256, 512, 384, 320]
    assert (largest_ok, smallest_oom) == (256, 320)


def test_the_default_tolerance_ends_within_five_percent_in_fewer_probes_than_one_sample():
    from rigbench.experiments.max_batch import DEFAULT_START, DEFAULT_TOLERANCE

    # the dev VM's mlp under 2 GiB: 36,366 ran, 36,367 did not. Doubling 8..32768 (13 ok),
    # 65536 oom; then 49152, 40960, 36864 oom, 34816 ok (2048 > 0.05 x 34816), 35840 ok
    # (1024 <= 1792): stop. Down to one sample it took 10 probes more.
    fits = lambda b: b <= 36366  # noqa: E731
    probes, largest_ok, smallest_oom = search(fits, start=DEFAULT_START, tolerance=DEFAULT_TOLERANCE)
    assert probes[-6:] == [65536, 49152, 40960, 36864, 34816, 35840] and len(probes) == 19
    assert (largest_ok, smallest_oom) == (35840, 36864)
    assert smallest_oom - largest_ok <= DEFAULT_TOLERANCE * largest_ok
    assert len(search(fits, start=DEFAULT_START, tolerance=0.0)[0]) == 29


def test_the_command_and_the_library_share_the_search_defaults():
    import inspect

    import typer.main

    from rigbench.cli import app
    from rigbench.experiments import max_batch

    command = typer.main.get_command(app).commands["max-batch"]  # type: ignore[attr-defined]
    cli = {p.name: p.default for p in command.params}
    library = inspect.signature(max_batch.find_max_batch).parameters
    for cli_name, library_name in [("start", "start"), ("max_", "max_batch"), ("tolerance", "tolerance"),
                                   ("margin", "margin")]:
        assert cli[cli_name] == library[library_name].default, cli_name
    assert cli["tolerance"] == 0.05


def test_growth_leaps_where_the_memory_line_leaves_room_and_doubles_where_it_does_not():
    from rigbench.experiments.max_batch import LEAP

    grow = lambda lo, room, leap=LEAP: next_probe([lo], [], 8, 65536, 0.0, room, leap)  # noqa: E731
    assert grow(16, None) == 32                     # no line yet: doubling
    assert grow(16, 10_000) == 128                  # x8 lands at 128 <= 10,000 / 2
    assert grow(16, 200) == 64                      # x8 would land past 200 / 2, x4 does not
    assert grow(16, 100) == 32                      # near the limit: doubling
    assert grow(16, 10_000, leap=2) == 32           # a search stored before leaps doubled
    assert grow(16, 10_000) == 128 and grow(60_000, 10**9) == 65536  # never past --max


def test_a_leap_that_overshoots_still_ends_at_the_boundary():
    # a line too optimistic (room 1,000,000 where 5,000 fits): x8 from 16 overshoots at 1024,
    # and the bisection still finds the same boundary as doubling does
    ok, oom, probes = [], [], []
    while (batch := next_probe(ok, oom, 8, 65536, 0.0, 1_000_000, 8)) is not None:
        probes.append(batch)
        (ok if batch <= 5000 else oom).append(batch)
    assert probes[:5] == [8, 64, 512, 4096, 32768] and (max(ok), min(oom)) == (5000, 5001)
    assert (max(ok), min(oom)) == search(lambda b: b <= 5000, start=8)[1:]


def test_limit_batch_is_where_the_line_through_the_probes_that_ran_meets_the_limit():
    from rigbench.experiments.max_batch import limit_batch

    def probe(batch, status="ok", peak=None):
        return Result(run_id="r", created_at="t", status=status,
                      spec=TrialSpec(kind="probe", workload="mlp", batch_size=batch),
                      metrics=Metrics(capped_peak_mib=peak if peak is not None else 300.0 + 0.5 * batch))
    probes = [probe(8), probe(16), probe(32, "oom")]
    assert limit_batch(probes, 1024 * MIB) == 1448  # (1024 - 300) / 0.5
    assert limit_batch(probes, None) is None and limit_batch(probes[:1], 1024 * MIB) is None  # no line
    assert limit_batch([probe(8, peak=400.0), probe(16, peak=390.0)], 1024 * MIB) is None  # it does not grow


def test_the_cap_ends_the_search_without_an_oom():
    probes, largest_ok, smallest_oom = search(lambda b: True, start=100, max_batch=500)
    assert probes == [100, 200, 400, 500]
    assert (largest_ok, smallest_oom) == (500, None)


def test_oom_at_the_start_bisects_downwards():
    # 8 oom: bisect between "nothing" (0) and 8 -> 4 ok, 6 oom, 5 ok; 6 - 5 = 1: stop.
    assert search(lambda b: b <= 5, start=8) == ([8, 4, 6, 5], 5, 6)
    # nothing fits: 2 oom, 1 oom, and there is nothing below 1
    assert search(lambda b: False, start=2) == ([2, 1], None, 1)


def test_least_squares_fit():
    assert fit_memory_model([(100, 300.0), (200, 500.0), (300, 700.0)]) == pytest.approx((100.0, 2.0))
    # (1,1), (2,3), (3,2): mean (2, 2); sxx = 2, sxy = 1 -> slope 0.5, intercept 1.0
    assert fit_memory_model([(1, 1.0), (2, 3.0), (3, 2.0)]) == pytest.approx((1.0, 0.5))
    assert fit_memory_model([(64, 1.0), (64, 2.0)]) is None  # one batch cannot give a slope
    assert fit_memory_model([]) is None


def test_rounding_to_multiples_of_eight():
    assert [round_batch(b) for b in (1, 7, 8, 15, 16, 203, 300)] == [1, 7, 8, 8, 16, 200, 296]


def test_recommendation_leaves_the_margin_by_the_model():
    # limit 1000, 10% margin: budget 900; (900 - 100) / 2 = 400 samples
    batch, reason = recommend(1000, (100.0, 2.0), 0.1, largest_ok=1000)
    assert batch == 400 and "leaving 10% free" in reason
    # per sample 3: floor(800 / 3) = 266 -> 264
    batch, reason = recommend(1000, (100.0, 3.0), 0.1, largest_ok=1000)
    assert batch == 264 and "rounded down from 266" in reason


def test_recommendation_never_exceeds_the_largest_batch_that_ran():
    batch, reason = recommend(1000, (100.0, 2.0), 0.1, largest_ok=300)
    assert batch == 296  # min(400, 300) = 300, rounded down to a multiple of 8
    assert "capped at the largest batch that ran (300)" in reason


def test_recommendation_without_a_usable_model_or_room():
    assert recommend(1000, None, 0.1, largest_ok=203)[0] == 200
    assert "fewer than two batch sizes ran" in recommend(1000, None, 0.1, largest_ok=203)[1]
    assert recommend(1000, (100.0, -1.0), 0.1, largest_ok=50)[0] == 48
    assert recommend(1000, None, 0.1, largest_ok=None) == (None, "no probe ran")
    # `max-batch mlp --start 3 --max 5` said "(5), rounded down to a multiple of 8" of a 5 it kept
    batch, reason = recommend(1000, (530.0, -4.6), 0.1, largest_ok=5)
    assert batch == 5 and reason.endswith("the largest batch that ran (5)")
    assert recommend(1000, None, 0.1, largest_ok=203)[1].endswith("(203), rounded down to a multiple of 8")


def test_nothing_fits_names_the_probes_that_ran() -> None:
    tried = [(8, "oom"), (4, "oom"), (2, "oom"), (1, "oom")]
    batch, reason = recommend(1000, None, 0.1, largest_ok=None, tried=tried)
    assert batch is None
    assert reason == ("4 probes ran and none succeeded (batch 8 oom, batch 4 oom, batch 2 oom, "
                      "batch 1 oom): not even batch 1 fits under the limit, so the framework's own needs "
                      "(its runtime, compiler and threads) are over it: raise --memory-limit")
    reason = recommend(1000, None, 0.1, largest_ok=None, tried=[(16, "crash")])[1]
    assert reason == "1 probe ran and none succeeded (batch 16 crash)"
    # fixed part 950 > 90% of the limit: no batch keeps the margin, but batches ran (TensorFlow's
    # mlp under 1.5 GiB ran 5,974 and recommended none, exit 1): the largest that ran, said so
    batch, reason = recommend(1000, (950.0, 1.0), 0.1, largest_ok=13)
    assert batch == 8 and "leaves no room" in reason and "no margin could be kept" in reason
    assert "(13), rounded down to a multiple of 8" in reason


def probe(batch, status, rss, error=None):
    spec = TrialSpec(workload="cnn", batch_size=batch)
    return Result(id=batch, run_id="r", created_at="t", spec=spec, status=status, error=error,
                  metrics=Metrics(rss_peak_mib=rss))


#: A native crash's stored error, as runner/launchers/steps.describe_exit writes it.
SEGFAULT = "Fatal Python error: Segmentation fault\nthe trial's process was killed by SIGSEGV"


def outcome_of(probes, **kw):
    values = dict(workload="cnn", device="cpu", precision="fp32", limit_bytes=1024 * MIB,
                  probes=probes, largest_ok=64, smallest_oom=128, fixed_bytes=300 * MIB,
                  per_sample_bytes=MIB, recommended=64, margin=0.1, run_id="r",
                  memory_metric="rss_peak_mib", reason="because", limit_source="--memory-limit")
    return MaxBatchOutcome(**{**values, **kw})


def test_outcome_as_json_lists_every_probe():
    outcome = outcome_of([probe(64, "ok", 360.0), probe(128, "oom", None)])
    data = outcome.to_dict()
    assert [(p["batch_size"], p["status"], p["peak_mib"]) for p in data["probes"]] == [
        (64, "ok", 360.0), (128, "oom", None)]
    assert (data["largest_ok"], data["smallest_oom"], data["recommended"]) == (64, 128, 64)
    assert data["limit_bytes"] == 1024 * MIB and data["stopped_by"] is None


#: torch's catsdogs max-batch on an H200 (docs/results/gpu-h200-lease4.md): batch, NVML peak MiB;
#: batches 3072 and 4096 ran out of memory.
H200_CATSDOGS = [(1024, 133_794.0), (2048, 130_532.0), (2560, 136_542.0)]


def gpu_probe(batch, peak_mib, device="cuda:0"):
    spec = TrialSpec(workload="catsdogs", batch_size=batch, device=device)
    return Result(id=batch, run_id="r", created_at="t", spec=spec, status="ok",
                  metrics=Metrics(gpu_mem_peak_mib=peak_mib, capped_peak_mib=peak_mib))


def test_a_peak_that_falls_as_the_batch_grows_on_a_gpu_gives_no_line_and_says_why():
    """cuDNN's workspace takes what memory is free, so the line through these peaks read 128.5
    GiB fixed + 1.078 MiB a sample, and `recommended` said the model itself left no room."""
    points = [(b, mib * MIB) for b, mib in H200_CATSDOGS]
    why = falling_peak(points)
    assert why is not None and "from 133,794 MiB at batch 1024 to 130,532 MiB at 2048" in why
    assert falling_peak([(1024, 100.0 * MIB), (2048, 99.5 * MIB)]) is None, "within 1%: noise"
    assert falling_peak([(768, 62_308.0 * MIB), (1536, 79_198.0 * MIB)]) is None  # the H100's, growing

    probes = [gpu_probe(b, mib) for b, mib in H200_CATSDOGS]
    metric, line, unfit = fitted("cuda:0", probes)
    assert (metric, line, unfit) == ("gpu_mem_peak_mib", None, why)
    batch, reason = recommend(143_771 * MIB, line, 0.1, largest_ok=2560, unfit=unfit)
    assert batch == 2560 and reason.startswith("no usable memory model (the peak fell as the batch grew")
    assert "the largest batch that ran (2560)" in reason
    # on the CPU a capped peak that dips is the allocator's noise: the line is fitted as before
    assert fitted("cpu", [gpu_probe(b, mib, device="cpu") for b, mib in H200_CATSDOGS])[1:] == (
        fit_memory_model(points), None)


def test_a_search_without_a_line_says_why_in_its_summary_and_json():
    from rigbench.cli.console import out
    from rigbench.cli.max_batch import _print_max_batch

    why = falling_peak([(b, mib * MIB) for b, mib in H200_CATSDOGS])
    outcome = outcome_of([gpu_probe(b, mib) for b, mib in H200_CATSDOGS], device="cuda:0", fixed_bytes=None,
                         per_sample_bytes=None, unfit=why, memory_metric="gpu_mem_peak_mib")
    with out.capture() as captured:
        _print_max_batch(outcome, db=None)
    assert f"memory model: none ({why})" in " ".join(captured.get().split())
    assert outcome.to_dict()["unfit"] == why


def test_printed_summary_names_the_model_the_stop_and_the_recommendation():
    from rigbench.cli.console import out
    from rigbench.cli.max_batch import _print_max_batch

    stop = probe(128, "timeout", None)
    outcome = outcome_of([probe(32, "ok", 332.0), probe(64, "ok", 364.0), stop],
                         smallest_oom=None, stopped=stop, max_batch=4096)
    with out.capture() as captured:
        _print_max_batch(outcome, db=None)
    text = captured.get()
    assert "limit: 1.0 GiB (--memory-limit)" in text
    assert "memory model (least squares over 2 ok probes, rss_peak_mib): 300.0 MiB + 1.000 MiB per sample" in text
    assert "largest ok: 64; smallest oom: none found" in text
    assert "search stopped at batch 128: status timeout" in text and "not counted as out of memory" in text
    assert "recommended batch: 64 (because)" in text


def test_a_crash_counts_as_oom_only_where_the_model_puts_the_batch_over_the_limit():
    # The line 300 MiB + 2 MiB per sample puts batch 512 at 1,324 MiB, batch 256 at 812 MiB.
    line, limit = (300 * MIB, 2 * MIB), 1024 * MIB
    assert crash_over_limit(512, line, limit) == 1324 * MIB
    assert crash_over_limit(256, line, limit) is None  # it fits: a crash, not memory
    assert crash_over_limit(512, None, limit) is None  # no line, no evidence
    assert crash_over_limit(512, (300 * MIB, 0.0), limit) is None  # flat: says nothing
    assert crash_over_limit(512, line, None) is None


def test_the_search_fits_the_line_to_the_probes_that_ran_to_judge_a_crash():
    probes = [probe(128, "ok", 556.0), probe(256, "ok", 812.0)]  # 300 MiB + 2 MiB per sample
    crash = probe(512, "crash", None, SEGFAULT)
    assert counted_crash(crash, probes, 1024 * MIB) == (
        512, "the trial's process was killed by SIGSEGV", pytest.approx(1324 * MIB))
    assert counted_crash(crash, probes, 2048 * MIB) is None  # under the limit: a crash
    assert counted_crash(crash, probes[:1], 1024 * MIB) is None  # one point makes no line
    # TensorFlow's other way to fail there: a Python exception, its headline kept
    aborted = probe(512, "crash", None, "Traceback (most recent call last):\nAbortedError: could not execute a primitive")
    assert counted_crash(aborted, probes, 1024 * MIB)[1] == "AbortedError: could not execute a primitive"
    assert counted_crash(probe(512, "timeout", None, "too slow"), probes, 1024 * MIB) is None  # not a crash


def test_a_crash_counted_as_oom_is_named_in_the_summary_and_the_json():
    from rigbench.cli.console import out
    from rigbench.cli.max_batch import _print_max_batch

    probes = [probe(128, "ok", 556.0), probe(256, "ok", 812.0), probe(512, "crash", None, SEGFAULT)]
    counted = (512, "the trial's process was killed by SIGSEGV", 1324 * MIB)
    outcome = outcome_of(probes, largest_ok=256, smallest_oom=512, crashes_over_limit=[counted])
    assert outcome.to_dict()["crashes_counted_as_oom"] == [
        {"batch_size": 512, "error": "the trial's process was killed by SIGSEGV", "model_bytes": 1324 * MIB}]
    with out.capture() as captured:
        _print_max_batch(outcome, db=None)
    text = captured.get()
    assert ("batch 512 crashed (the trial's process was killed by SIGSEGV) where the memory model puts it at "
            "1,324 MiB, over the 1,024 MiB limit: counted as out of memory") in text


def test_a_crash_without_a_model_stops_the_search_and_says_how_to_tell():
    from rigbench.cli.console import out
    from rigbench.cli.max_batch import _print_max_batch

    stop = probe(512, "crash", None, SEGFAULT)
    outcome = outcome_of([probe(256, "ok", 812.0), stop], largest_ok=256, smallest_oom=None, stopped=stop,
                         fixed_bytes=None, per_sample_bytes=None)
    assert outcome.stopped_by_crash
    assert not outcome_of([stop], stopped=stop, device="cuda:0").stopped_by_crash  # the cap is the CPU's
    with out.capture() as captured:
        _print_max_batch(outcome, db=None)
    text = captured.get()
    assert "search stopped at batch 512: status crash" in text and "try a smaller --start" in text
    # with a line that puts the batch within the limit, the crash is a crash, and the page says why
    within = outcome_of([probe(128, "ok", 556.0), probe(256, "ok", 812.0), stop], largest_ok=256,
                        smallest_oom=None, stopped=stop, fixed_bytes=300 * MIB, per_sample_bytes=0.5 * MIB)
    with out.capture() as captured:
        _print_max_batch(within, db=None)
    text = captured.get()
    assert "the memory model puts batch 512 at 556 MiB, within the 1,024 MiB limit" in text and "--start" not in text


def test_a_stored_search_that_ran_to_its_end_reads_as_complete_and_one_stopped_early_does_not():
    """replay on the probes next_probe makes: every finished search at any tolerance may have
    ended by its rule; cut right after its first oom (Ctrl-C before the bisection), it did not.
    A counted crash is an oom; the framework alone above the limit ends a search at once."""
    for tolerance in (0.0, 0.25, 0.9):
        order, _, _ = search(lambda b: b <= 300, start=8, tolerance=tolerance)
        probes = [probe(b, "ok" if b <= 300 else "oom", 300.0 + b) for b in order]
        assert replay(probes, 1024 * MIB)[2] is None, tolerance
        assert replay(probes[:7], 1024 * MIB)[2] == "it stopped before trying the batches between 256 and 512"
    downwards = [probe(b, "oom", None) for b in (8, 4)]
    assert replay(downwards, 1024 * MIB) == ([], [8, 4], "it stopped before trying the batches below 4")
    below = probe(8, "oom", None, "the memory limit (300 MiB) is below what the framework alone takes (306 MiB)")
    assert replay([below], 300 * MIB)[2] is None
    crashed = [probe(128, "ok", 556.0), probe(256, "ok", 812.0), probe(512, "crash", None, SEGFAULT),
               probe(384, "ok", 1068.0)]  # the line puts 512 at 1,324 MiB, over 1 GiB: counted
    assert replay(crashed, 1024 * MIB) == ([128, 256, 384], [512], None)
    assert replay(crashed, 2048 * MIB)[2] == "it stopped at batch 512, which ended crash"


def test_an_interrupted_search_without_an_oom_says_it_found_no_ceiling():
    """`max-batch` stopped by Ctrl-C after 5 ok probes said `recommended batch: 1024 (capped at the
    largest batch that ran)` where `recommend` called the same search one that caps nothing."""
    from rigbench.cli.console import out
    from rigbench.cli.max_batch import _print_max_batch

    outcome = outcome_of([probe(32, "ok", 332.0), probe(64, "ok", 364.0)], smallest_oom=None, interrupted=True)
    with out.capture() as captured:
        _print_max_batch(outcome, db=None)
    assert "none ran out of memory, so larger batches may fit" in captured.get()
    with out.capture() as captured:
        _print_max_batch(outcome_of([probe(64, "ok", 364.0), probe(128, "oom", None)], interrupted=True), db=None)
    assert "interrupted: the figures above rest on the probes that finished\n" in captured.get()
