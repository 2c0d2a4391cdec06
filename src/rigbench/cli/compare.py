"""Against known results: `compare` (published tables, or two runs/machines), `score`, and
`results import` (its counterpart `results export --format bundle` lives in core.py)."""

from __future__ import annotations

from typing import Any

import typer
from rich.text import Text

from rigbench import api
from rigbench.cli.common import DB_HELP, WHERE_KEYS_HELP, _check_precision, app, handles_usage_errors, results_app
from rigbench.cli.console import err, out, working
from rigbench.errors import UsageError
from rigbench.json_text import strict_json
from rigbench.units import split_list


@app.command(short_help="Compare with published results, machines or frameworks.")
@handles_usage_errors
def compare(
    items: list[str] | None = typer.Argument(None, metavar="[RUN_A RUN_B | SOURCE... | WORKLOAD...]", help="Two run ids or results-bundle files to compare (A before, B after); with --published, the published sources to use: yin2020, shi2016, community (default: all); with --frameworks, the workloads, NAME or NAME:key=value for one set of options (default: every one measured)."),
    published: bool = typer.Option(False, "--published", help="Put this machine's stored results beside published tables (the thesis's GTX 1060, Shi et al. 2016, community epoch times): measured, spec-predicted and CPU-utilisation-normalised speed-ups."),
    frameworks: bool = typer.Option(False, "--frameworks", help="Frameworks side by side, the thesis's Table 5 layout: per workload and set of options, each framework and device's steps/s (and tokens/s for a language model), MFU, CPU %, GPU %, host and GPU memory at one batch size, with the thesis's own rows beside the CIFAR-10 CNN (cnn)."),
    batch_size: int | None = typer.Option(None, "--batch-size", "-b", help="With --frameworks: the batch size to show (default: the thesis's 128 for cnn where measured, else the batch the most frameworks were measured at; on a tie the workload's default batch, then its --quick batch, then the largest)."),
    precision: list[str] | None = typer.Option(None, "--precision", metavar="P", help="With --frameworks: the precisions to show, repeated or comma-separated, e.g. --precision bf16 (default: every one measured, a table each; MFU against the peak at that precision)."),
    all_frameworks: bool = typer.Option(False, "--all-frameworks", help="With --published: show every framework's published rows (default: only the rows of our framework's family when the source has some)."),
    run_id: list[str] | None = typer.Option(None, "--run", metavar="ID", help="With --published or --frameworks: use these runs' results instead of every stored result of this machine."),
    where_a: list[str] | None = typer.Option(None, "--where-a", metavar="KEY=VALUE", help="Filter side A (over RUN_A, or every stored result when RUN_A is not given); repeatable. " + WHERE_KEYS_HELP),
    where_b: list[str] | None = typer.Option(None, "--where-b", metavar="KEY=VALUE", help="Filter side B, as --where-a. A key both sides name with different values (device=cpu against device=cuda:0) is what they are split by: trials pair across it."),
    across_versions: bool = typer.Option(False, "--across-versions", help="Compare pairs whose software versions differ (torch, CUDA, cuDNN...) and flag them, instead of marking them incomparable."),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print only JSON on stdout."),
) -> None:
    """Compare with known results: published tables (--published) or another run/machine, reporting only significant changes."""
    items = items or []
    if frameworks:
        if published or where_a or where_b or across_versions or all_frameworks:
            raise UsageError("--frameworks takes workloads, --run, --batch-size, --precision and --json; "
                             "leave the other options out")
        precisions = split_list(precision, "--precision")
        for p in precisions:
            _check_precision(p)
        _frameworks(items, run_id or [], batch_size, precisions, db, as_json)
        return
    if batch_size is not None or precision:
        raise UsageError("--batch-size and --precision go with --frameworks")
    if published:
        if where_a or where_b or across_versions:
            raise UsageError("--where-a/--where-b/--across-versions compare two runs; leave them out with --published")
        _published(items, all_frameworks, run_id or [], db, as_json)
        return
    if run_id or all_frameworks:
        raise UsageError("--run and --all-frameworks go with --published; to compare runs give RUN_A RUN_B")
    if len(items) > 2:
        raise UsageError(f"compare takes at most two runs (RUN_A RUN_B), got {len(items)}")
    a = items[0] if len(items) > 0 else None
    b = items[1] if len(items) > 1 else None
    if a is not None and b is None and where_b:
        b = a  # one run, split by the two filters
    outcome = api.compare(a, b, db=db, where_a=where_a or [], where_b=where_b or [],
                          across_versions=across_versions)
    if as_json:
        print(strict_json({"a": outcome.label_a, "b": outcome.label_b, "same_machine": outcome.same_machine,
                          "pairs": [p.as_dict() for p in outcome.pairs],
                          "only_in_a": [u.as_dict() for u in outcome.only_a],
                          "only_in_b": [u.as_dict() for u in outcome.only_b]}, indent=2))
        return
    _print_pairs(outcome)


def _say(text: str) -> None:
    out.print(text, highlight=False, markup=False)


def _print_pairs(outcome: Any) -> None:
    from rigbench.reports import compare_tables

    _say(f"A: {outcome.label_a} on {outcome.machine_a}")
    _say(f"B: {outcome.label_b} on {outcome.machine_b}")
    if not outcome.same_machine:
        _say("Different machines: devices matched by kind (cpu with cpu, GPU with GPU).")
    if outcome.pairs:
        out.print(compare_tables.pairs_table(outcome.pairs))
        for line in compare_tables.pair_notes(outcome.pairs):
            _say(line)
    else:
        _say("No trial of A has the same configuration as a trial of B: nothing to compare.")
    for line in compare_tables.unpaired_lines(outcome.only_a, outcome.only_b):
        _say(line)
    counts: dict[str, int] = {}
    for p in outcome.pairs:
        counts[p.verdict] = counts.get(p.verdict, 0) + 1
    if any(p.predicted is not None for p in outcome.pairs):
        from rigbench.analysis.device_prediction import NEAR_CEILING

        _say(f"spec B/A: the ratio of the trial's roofline ceilings on the two devices' spec sheets (`rigbench "
             f"roofline`); in parentheses where a trial reached under {NEAR_CEILING:.0%} of its ceiling, which then "
             "does not limit it, so the ratio does not predict its speed.")
    on_trials = any(p.a.trials and p.b.trials for p in outcome.pairs)
    tested = sum(p.p_adjusted is not None for p in outcome.pairs)
    _say("Trials pair only when their configurations are equal. Changes count only when Mann-Whitney U "
         "gives p < 0.05 AND the 95% CIs of the two median step times do not overlap"
         + ("; configurations with two or more trials a side are judged on the trials instead (the 95% Welch "
            "interval of B/A leaves out 1). " if on_trials else
            ". Those CIs cover the noise within a trial, not between trials: run both sides with --repeat 3 "
            "to judge on trials. ")
         + (f"The {tested} pairs' p values are adjusted together (Benjamini-Hochberg): a change counts only "
            "while its adjusted p is under 0.05 too. " if tested else "")
         + ", ".join(f"{v}: {n}" for v, n in counts.items()))


def _published(sources: list[str], all_frameworks: bool, run_ids: list[str], db: str | None, as_json: bool) -> None:
    from rigbench.analysis.published_tables import MAPPINGS, SOURCES, UNMAPPED

    found = api.compare_published(db=db, sources=sources, run_ids=run_ids, all_frameworks=all_frameworks)
    if as_json:
        print(strict_json({"matches": [m.as_dict() for m in found.matches],
                          "missing": [{"source": m.mapping.source, "network": m.mapping.network,
                                       "workload": m.mapping.ref, "batches": m.batches,
                                       "command": m.command} for m in found.missing]}, indent=2))
        return
    elsewhere = 0 if run_ids or found.matches else api.other_machines_results(db)
    if elsewhere:
        out.print(f"No result of this machine matched; {elsewhere} stored results are other machines' (imported, or "
                  f"a fleet's): `--run ID` puts one of their runs beside the published tables.",
                  highlight=False, markup=False)
    if found.matches:  # the columns' key before the tables it explains
        out.print("Columns: ours = our trial, or the repeats of one run whose mean it is; "
                  "measured = published steps/s / ours at the same batch; source's own = its accelerator / its "
                  "CPU; predicted = ratio of FP32 peaks, a range where a CPU's spec-sheet peak depends on the clock "
                  "assumed (max turbo on every core .. base clock); normalised = measured with every CPU throughput "
                  "divided by the fraction of the CPU it kept busy.", highlight=False, markup=False)
    for source in sources or list(SOURCES):
        matches = [m for m in found.matches if m.row.source == source]
        out.print(Text.assemble("\n", (source, "bold"), f": {SOURCES[source][1]}"), highlight=False)
        if matches:
            _print_matches(matches)
        for miss in (m for m in found.missing if m.mapping.source == source):
            out.print(f"  No stored result of {miss.mapping.ref} at batch {', '.join(map(str, miss.batches))} "
                      f"for {miss.mapping.network}: run `{miss.command}`", highlight=False, markup=False)
    out.print("\nMappings (published network -> rigbench workload):", highlight=False)
    for m in MAPPINGS:
        if not sources or m.source in sources:
            out.print(f"  {m.source} {m.network} -> {m.ref} ({m.closeness}): {m.why}", highlight=False, markup=False)
    skipped = [f"{network} ({why})" for (source, network), why in UNMAPPED.items() if not sources or source in sources]
    if skipped:
        out.print("  Not compared: " + "; ".join(skipped), highlight=False, markup=False)
    if not run_ids and found.matches:  # with none matched, the line at the top said it
        _say_left_out(db, "`--run ID` puts one of their runs beside the tables")


def _frameworks(workloads: list[str], run_ids: list[str], batch_size: int | None, precisions: list[str],
                db: str | None, as_json: bool) -> None:
    from rigbench.analysis.frameworks import TABLE5, slowest_to_fastest
    from rigbench.analysis.published_tables import SOURCES
    from rigbench.reports import compare_tables

    tables = api.compare_frameworks(db=db, workloads=workloads, run_ids=run_ids, batch_size=batch_size,
                                    precisions=precisions)
    if as_json:
        print(strict_json([t.as_dict() for t in tables], indent=2))
        return
    if not tables:
        at = (f" at {'/'.join(precisions)}" if precisions else "") + (f" at batch {batch_size}" if batch_size else "")
        example = _measure_command(workloads[0] if workloads else "cnn", batch_size or (None if workloads else 128),
                                   ["torch", "jax"], precisions[0] if precisions else "fp32", "cpu")
        elsewhere = 0 if run_ids else api.other_machines_results(db)
        also = (f" {elsewhere} stored results are other machines' (imported, or a fleet's): `--run ID` "
                f"compares those." if elsewhere else "")
        out.print(f"No plain speed results{at} to compare. Measure some with e.g. `{example}`.{also}",
                  highlight=False, markup=False)
        return
    missing = [p for p in precisions if p not in {t.precision for t in tables}]
    if missing:
        out.print(f"No plain speed results at {', '.join(missing)}" + (f" at batch {batch_size}" if batch_size else "")
                  + ": no table for it.", highlight=False, markup=False)
    for t in tables:
        out.print(compare_tables.framework_table(t))
        spread = slowest_to_fastest(t)
        if spread:
            # per device and settings (`cpu`, `cpu t1`): frameworks are only set against each other at equal ones
            out.print("  fastest / slowest framework: " + ", ".join(f"{d} x{v:.2f}" for d, v in spread.items()),
                      highlight=False, markup=False)
        elif len(t.frameworks) > 1:
            out.print("  no two frameworks measured at the same settings (device, --threads, --compile): no fastest / "
                      "slowest ratio", highlight=False, markup=False)
        elif len(t.frameworks) == 1:
            others = [name for name in ("torch", "jax") if name not in t.frameworks] or ["jax"]
            command = _measure_command(t.label or t.workload, t.batch_size, others, t.precision, t.ours[0].device)
            out.print(f"  only {t.frameworks[0]} measured here; add others with `{command}`",
                      highlight=False, markup=False)
        if t.other_batches:
            out.print(f"  also measured at batch {', '.join(map(str, t.other_batches))} (--batch-size N shows one)",
                      highlight=False, markup=False)
        busy = [f"#{i}" for row in t.ours for i in row.busy]
        if busy:
            out.print(f"  busy ({', '.join(busy)}): other processes used the CPU while these trials were timed "
                      "(`rigbench results show ID`: others_cpu_pct_mean); their speeds, and any ratio with them, "
                      "are the machine's under that load", highlight=False, markup=False)
        host = [f"#{i}" for row in t.ours for i in row.host_bound]
        if host:
            out.print(f"  host-bound ({', '.join(host)}): the GPU waited while the CPU launched the work (GPU busy under "
                      "90%, the CPU busy the whole step): these speeds are the host's as much as the GPU's, and "
                      "another host with the same GPU can differ (docs/COMPARING.md)", highlight=False, markup=False)
        if any(row.quick for row in t.ours):
            out.print("  quick: timed with the short --quick protocol (fewer steps, a wider CI); figures to keep "
                      "need a plain `rigbench run`", highlight=False, markup=False)
        over = [f"#{row.result_id}" for row in t.ours if row.mfu is not None and row.mfu > 1]
        if over:
            out.print(f"  MFU above 100% ({', '.join(over)}): the peak is too low, e.g. calibrated on a busy "
                      f"machine (`rigbench roofline` says which)", highlight=False, markup=False)
        if t.published:
            out.print(f"  dim rows: {SOURCES[TABLE5[0]][1]}, Table 5 (batch 128, Windows 10 laptop)",
                      highlight=False, markup=False)
    out.print("CPU % is the trial's own use, 100 = every logical core busy (Task Manager's convention, the "
              "thesis's); host MiB its peak resident memory; GPU MiB NVML's per-process peak. MFU: achieved "
              "training FLOP/s over the spec sheet's peak at the table's precision (* the `rigbench calibrate` peak "
              "where the sheet has none). Each configuration is its newest run's one-process speed trials (data-parallel "
              "ones are left out: `rigbench scaling` reads them; a compiled step is a row of its own, `torch "
              "compile`): the mean of their speeds; steps/s = samples/s "
              "over the batch.",
              highlight=False, markup=False)
    if not run_ids:
        _say_left_out(db, "`--run ID` shows one of their runs")


def _say_left_out(db: str | None, how: str) -> None:
    """The line under a view of this machine's results: how many stored results other machines
    measured (imported bundles, a fleet's database), which it left out, and how to see them."""
    elsewhere = api.other_machines_results(db)
    if elsewhere:
        _say(f"Left out: {elsewhere} stored results of other machines ({how}).")


def _measure_command(workload: str, batch_size: int | None, frameworks: list[str], precision: str,
                     device: str) -> str:
    """The `rigbench run` that adds rows to a frameworks table of these settings."""
    return (f"rigbench run {workload}" + (f" -b {batch_size}" if batch_size else "")
            + f" --framework {','.join(frameworks)} -d {device}"
            + ("" if precision == "fp32" else f" --precision {precision}"))


def _print_matches(matches: list[Any]) -> None:
    from rigbench.analysis.peaks import clock_assumption
    from rigbench.reports import compare_tables

    out.print(compare_tables.published_table(matches))
    ranged = sorted({said for m in matches if (said := clock_assumption(m.predicted_by_clock))})
    if ranged:
        out.print(f"  predicted ranges: {'; '.join(ranged)} (a CPU's spec-sheet peak at each published "
                  f"clock, its max turbo on every core first)", highlight=False, markup=False)
    peaks: dict[str, str] = {}
    for m in matches:
        if m.peak_published:  # a CPU column's peak is of the cores its threads used: one line per column
            peaks[m.row.device_label()] = m.peak_published.text()
        if m.peak_ours:
            peaks[f"ours: {m.ours.device_name}"] = m.peak_ours.text()
    for device, text in peaks.items():
        out.print(f"  FP32 peak, {device}: {text}", highlight=False, markup=False)
    # a sentence every row carries (our device has no known peak, the framework versions) is said
    # once: four rows of shi2016 repeated five lines each
    common = [n for n in matches[0].notes if all(n in m.notes for m in matches[1:])] if len(matches) > 1 else []
    if common:
        out.print("  every row: " + " ".join(common), highlight=False, markup=False)
    for i, m in enumerate(matches, 1):
        own = [n for n in m.notes if n not in common]
        if own:
            out.print(f"  #{i}: " + " ".join(own), highlight=False, markup=False)


@app.command(short_help="One number: mean speed-up over a reference machine.")
@handles_usage_errors
def score(
    run_id: str | None = typer.Argument(None, metavar="[RUN]", help="Score this run's results (default: the newest suite results of this machine)."),
    reference: str | None = typer.Option(None, "--reference", "-r", metavar="NAME|FILE|RUN", help="The reference machine: a shipped name (see --list-references), a results bundle file (`rigbench results export --format bundle`), or a stored run id. Default: for each device class, the shipped reference machine that measured it."),
    device_class: str | None = typer.Option(None, "--device", help="Score only cpu or gpu (default: each class both machines have)."),
    list_references: bool = typer.Option(False, "--list-references", help="List the reference machines shipped with rigbench and exit."),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print only JSON on stdout."),
) -> None:
    """One number: the geometric mean of speed-ups over a reference machine across a pinned suite of workloads (each at its reference batch; the score names the suite's version), with a 95% CI."""
    from rigbench.reports import compare_tables, terminal

    if list_references:
        from rigbench.analysis.score import shipped_references

        if run_id is not None or reference is not None or device_class is not None:
            raise UsageError("--list-references only lists the shipped reference machines: leave RUN, "
                             "--reference and --device out")

        names = shipped_references()
        if as_json:
            print(strict_json(names))
        else:
            out.print("\n".join(names) if names else "No reference machine ships with this rigbench yet: "
                      "pass --reference FILE (a bundle) or a run id.", highlight=False, markup=False)
        return
    outcome = api.score(run_id, reference, db=db, device_class=device_class)
    if as_json:
        print(strict_json({"ours": outcome.ours_label, "reference": outcome.reference_label,
                          "reference_machine": outcome.reference_machine,
                          "scores": [s.as_dict() for s in outcome.scores]}, indent=2))
        return
    out.print(f"{outcome.ours_label} over {outcome.reference_label} ({outcome.reference_machine})",
              highlight=False, markup=False)
    for s in outcome.scores:
        out.print(compare_tables.score_table(s))
        total = len(s.items) + len(s.missing_ours) + len(s.missing_reference)
        within = ", within trials only" if s.ci_covers == "within trials" else ""
        out.print(f"Score ({s.device_class}): {s.value:.3f} (95% CI {s.ci[0]:.3f} to {s.ci[1]:.3f}{within}), the "
                  f"geometric mean over {len(s.items)} of the {total} workloads of suite {s.suite}",
                  highlight=False, markup=False)
        quick = [item.workload for item in s.items if item.quick]
        if quick:
            out.print(f"  * timed with the short --quick protocol (fewer steps, a wider CI): {', '.join(quick)}; "
                      "a score to keep needs a plain `rigbench run`", highlight=False, markup=False)
        for line in s.notes():  # what the CI leaves out; the workloads whose speed was the host's; a busy reference
            out.print(f"  {line}", highlight=False, markup=False)
        for line in terminal.busy_lines([r for item in s.items for r in item.ours]):
            out.print(f"  {line}", highlight=False, markup=False)
        if s.missing_ours:
            out.print(f"  not measured here at the reference batch: {', '.join(s.missing_ours)} "
                      f"(run `rigbench run {' '.join(s.missing_ours)}`)", highlight=False, markup=False)
        if s.missing_reference:
            out.print(f"  missing in the reference: {', '.join(s.missing_reference)}",
                      highlight=False, markup=False)
    for cls in outcome.missing_everywhere:
        out.print(f"No {cls} workload in common with the reference.", highlight=False)
    if run_id is None:
        _say_left_out(db, "`rigbench score RUN` scores one of their runs")


@results_app.command("import", short_help="Import a bundle of results.")
@handles_usage_errors
def results_import(
    file: str = typer.Argument(..., metavar="FILE", help="A results bundle written by `rigbench results export --format bundle`."),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Import a results bundle: validated in full first; a malformed file changes nothing (exit 2)."""
    from rigbench.store.bundle import SHOWN

    with working(f"importing {file}: every result checked, then stored"):
        done = api.import_bundle(file, db=db)
    text = f"Imported {done.added_results} results in {len(done.added_runs)} new runs from {file}"
    if done.added_calibrations:
        text += f", and {done.added_calibrations} calibration measurements (`rigbench roofline` reads them)"
    if done.present_runs or done.skipped_results or done.skipped_calibrations:
        text += (f"; {len(done.present_runs)} runs were already stored, {done.skipped_results} results "
                 f"already present were skipped")
        if done.skipped_calibrations:
            text += f", as were {done.skipped_calibrations} calibration measurements already stored"
    out.print(text + ".", highlight=False, markup=False, soft_wrap=True)
    for note in done.notes[:SHOWN]:
        err.print(f"note: {note}", highlight=False, markup=False, soft_wrap=True)
    if len(done.notes) > SHOWN:
        err.print(f"note: and {len(done.notes) - SHOWN} more entries with text stored clipped",
                  highlight=False, markup=False)
