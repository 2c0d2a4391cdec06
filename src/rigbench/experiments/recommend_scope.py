"""Whose stored results `rigbench recommend` reads, and what its hints may name.

By default this machine's (store/this_machine.py: a fleet shares one database, and another
machine's result is no measurement of this one); the others are counted, and each other machine
that holds results of the workload is named with the command that recommends from them. With
`--run ID` (repeatable, `--no-run` only), the results of the machine those runs were measured on
(an imported bundle, a fleet's database): nothing is measured and none of this machine's devices
is asked about (a child process, 2-7 s), and the hints name what measures on that machine, never
"run without --no-run", which would measure this one.
"""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rigbench.analysis import recommend as rules
from rigbench.analysis.trials import run_order
from rigbench.errors import UsageError
from rigbench.experiments.devices import chosen_devices
from rigbench.fingerprint import machine_key, this_machine_key
from rigbench.frameworks import check_framework
from rigbench.hw.cpu import NATIVE_BF16_FLAGS
from rigbench.spec import Result
from rigbench.store import Store
from rigbench.store.engine import url_without_password
from rigbench.store.this_machine import run_machines
from rigbench.units import format_bytes
from rigbench.workloads import parse_workload_ref


def command_target(workload: str, framework: str, db: str | None = None) -> str:
    """`WORKLOAD [--framework F] [--db DB]`, quoted for a shell: what each command a recommendation
    hints at names (analysis/recommend's `workload`), so that a JAX recommendation's hints run JAX
    and what they measure lands in the database the recommendation reads (`db` as given, its
    password left out); without it a hint measured into the default database, unseen."""
    return shlex.join([workload, *(["--framework", framework] if framework != "torch" else []),
                       *(["--db", url_without_password(db)] if db else [])])


def command(verb: str, workload: str, framework: str, *rest: str, db: str | None = None) -> str:
    """`rigbench VERB WORKLOAD [--framework F] [--db DB] REST...`, quoted for a shell."""
    return " ".join(["rigbench", verb, command_target(workload, framework, db), *map(shlex.quote, rest)])


def machine_words(machine: Mapping[str, Any] | None) -> str:
    """`host: CPU model, GPU names` of a stored fingerprint."""
    m = machine or {}
    gpus = [str(g.get("name")) for g in m.get("gpus") or [] if isinstance(g, Mapping)]
    return f"{m.get('hostname') or 'host not recorded'}: " + ", ".join([str(m.get("cpu_model") or "unknown CPU"), *gpus])


@dataclass
class Scope:
    """The stored results of one workload (its options and framework) a recommendation reads."""

    workload: str
    framework: str
    results: list[Result]
    left_out: int = 0  # the workload's stored results from other machines
    runs: list[str] = field(default_factory=list)  # --run: the runs that chose the machine
    fingerprint: dict[str, Any] | None = None  # --run: that machine's
    #: per other machine holding results of the workload: its words, how many, the command that
    #: recommends from them (its newest run of the workload)
    elsewhere: list[dict[str, Any]] = field(default_factory=list)
    #: the same machine's results of the workload (its options) in other frameworks
    others: list[Result] = field(default_factory=list)
    db: str | None = None  # --db as given: the hints that measure here name it (command_target)

    @property
    def hint_db(self) -> str | None:
        """The database a hint names: this one's where its commands run here; none for another
        machine's results (measured there, into that machine's database)."""
        return self.db if self.here else None

    @property
    def here(self) -> bool:
        """Whether the results are this machine's (no --run)."""
        return not self.runs

    @property
    def machine(self) -> str | None:
        """The runs' machine in words; None for this machine."""
        return None if self.here else machine_words(self.fingerprint)

    def native_bf16(self) -> bool | None:
        """--run: whether that machine's CPU does bf16 natively, from its stored flags (None:
        not recorded). Only asked where the results are another machine's."""
        flags = (self.fingerprint or {}).get("cpu_flags")
        found = [flags.get(name) for name in NATIVE_BF16_FLAGS] if isinstance(flags, Mapping) else []
        return None if all(value is None for value in found) else any(value is True for value in found)

    def device_hint(self, run_missing: bool, devices: Sequence[str]) -> str:
        """What measures `devices`, of which the recommendation found no fp32 speed (the device line)."""
        w, f = self.workload, self.framework
        if not self.here:
            return (f"that machine has no timed fp32 trial of {w} on {'it' if len(devices) == 1 else 'them'}: "
                    f"measure there with `{command('recommend', w, f, '-d', ','.join(devices))}`, then import its "
                    "bundle here")
        if run_missing:
            listing = shlex.join(["rigbench", "results", "list", "--workload", w,
                                  *(["--db", url_without_password(self.db)] if self.db else [])])
            return f"no fp32 speed trial ended ok there (`{listing}` shows why)"
        return f"run without --no-run to measure it here, or `{command('run', w, f, '--batch-size', '...', db=self.db)}`"

    def measure_hint(self, flags: Sequence[str] = ()) -> str:
        """How to measure what a --no-run recommendation lists as missing; `flags`: those of the
        recommendation that shape what it measures (-d, --quick, -b, --memory-limit), repeated so
        that the command measures what this one reads (a stored search under --memory-limit 1GiB
        is not the default limit's)."""
        if self.here:
            return (f"`{command('recommend', self.workload, self.framework, *flags, db=self.db)}` (without --no-run) "
                    "measures it here.")
        return (f"Measure it on that machine (`{command('recommend', self.workload, self.framework)}` there), then "
                "`rigbench results export --format bundle` there and `rigbench results import` here.")


def stored_scope(store: Store, workload: str, framework: str, run_ids: Sequence[str] = (),
                 db: str | None = None) -> Scope:
    """The stored results of `workload` (its options, `framework`) of this machine, or of the
    machine of `run_ids`: UsageError, one line, for a run not stored, runs of two machines, or a
    machine with no result of the workload. `db`: as the commands it names give it (no password)."""
    ref, options = parse_workload_ref(workload)
    every = [r for r in store.list(workload=ref.name) if r.spec.workload_options == options]
    stored = [r for r in every if r.spec.framework == framework]
    machines = run_machines(store, (r.run_id for r in every))
    runs = list(dict.fromkeys(run_ids))
    if not runs:
        here = this_machine_key()
        mine = [r for r in stored if machines[r.run_id] == here]
        others = [r for r in stored if machines[r.run_id] != here]
        return Scope(workload, framework, mine, len(others),
                     elsewhere=_elsewhere(workload, framework, others, machines, store, db),
                     others=[r for r in every if r.spec.framework != framework and machines[r.run_id] == here], db=db)
    known = store.commands(runs)
    unknown = [run for run in runs if run not in known]
    if unknown:
        raise UsageError(f"no run {unknown[0]!r} in {store.url}: `rigbench results runs` lists the stored runs")
    fingerprints = {run: store.machine(run) for run in runs}
    keys = {machine_key(m) for m in fingerprints.values()}
    if len(keys) > 1:
        raise UsageError(f"--run {' --run '.join(runs)} are runs of different machines "
                         f"({'; '.join(sorted({machine_words(m) for m in fingerprints.values()}))}): a "
                         "recommendation is one machine's; give the runs of one")
    (key,) = keys
    mine = [r for r in stored if machines[r.run_id] == key]
    if not mine:
        held = sorted({r.spec.workload for run in runs for r in store.list(run_id=run)})
        raise UsageError(f"no stored results of {workload} ({framework}) from the machine of run {runs[0]} "
                         f"({machine_words(fingerprints[runs[0]])})"
                         + (f"; its runs given hold {', '.join(held)}" if held else ""))
    return Scope(workload, framework, mine, len(stored) - len(mine), runs, fingerprints[runs[0]],
                 others=[r for r in every if r.spec.framework != framework and machines[r.run_id] == key])


def _elsewhere(workload: str, framework: str, others: Sequence[Result], machines: Mapping[str, tuple[Any, ...]],
               store: Store, db: str | None) -> list[dict[str, Any]]:
    """Per other machine among `others` (`machines`: run id -> its machine key): its words, its
    count, and the command that recommends from them (naming its newest run of the workload),
    most results first."""
    counts = Counter(machines[r.run_id] for r in others)
    found = []
    for key, n in counts.most_common():
        newest = max((r for r in others if machines[r.run_id] == key), key=run_order)
        found.append({"machine": machine_words(store.machine(newest.run_id)), "results": n,
                      "command": command("recommend", workload, framework, "--no-run", "--run", newest.run_id,
                                         *(["--db", url_without_password(db)] if db else []))})
    return found


def limit_words(limit: int | None) -> str:
    """The CPU's memory limit a recommendation applies, in words."""
    return "the default memory limit" if limit is None else f"--memory-limit {format_bytes(limit)}"


def recommend_devices(scope: Scope, asked: list[str], run_missing: bool) -> list[str]:
    """The devices to recommend from: those asked, else every available one (measuring), else
    those measured, else the CPU (--no-run). Another machine's (--run) are never asked about
    here; this machine's are where a device asked has no stored result (a typo must not plan for
    nothing), and the error then names other machines' results of the workload."""
    framework = scope.framework
    measured = list(dict.fromkeys(r.spec.device for r in scope.results if rules.timed(r)))
    if not scope.here:
        return asked or measured or list(dict.fromkeys(r.spec.device for r in scope.results)) or ["cpu"]
    if run_missing and asked == ["cpu"]:
        check_framework(framework)  # the CPU is always there: no device probe (a child process)
        return asked
    try:
        if run_missing:
            return chosen_devices(framework, asked, default=None)
        check_framework(framework)
        if any(d not in measured and d != "cpu" for d in asked):
            asked = chosen_devices(framework, asked, default=None)
    except UsageError as exc:
        if not scope.elsewhere:
            raise
        raise UsageError(f"{exc}; other machines' results of {scope.workload}: "
                         + "; ".join(f"`{e['command']}` ({e['machine']})" for e in scope.elsewhere[:3])) from None
    return asked or measured or ["cpu"]
