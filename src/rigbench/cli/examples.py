"""A few realistic invocations at the end of each command's `--help`, in one place.

A new user reads `rigbench COMMAND --help` before the README: a line to copy shows what the
options look like together faster than their descriptions. Every example must parse
(tests/unit/test_cli_help.py checks each against the command's options), and a command without
examples fails that test, so a new command gets its own. Text after `#` explains the line.
"""

from __future__ import annotations

import typer

#: The command's path as typed after `rigbench` -> its examples, simplest first.
EXAMPLES: dict[str, tuple[str, ...]] = {
    "run": ("rigbench run --quick                  # every reference network, short",
            "rigbench run mlp cnn -d cpu -b 16,64  # two workloads, two batches",
            "rigbench run resnet:depth=56 --repeat 3"),
    "train": ("rigbench train mlp --dataset digits --epochs 5   # no download",
              "rigbench train cnn --dataset digits --lr 0.01,0.05 --target-accuracy 90"),
    "sweep": ("rigbench sweep --config examples/sweep.toml --dry-run  # run nothing",
              "rigbench sweep mlp -d cpu -b 16,64 --threads 1,2 --quick"),
    "max-batch": ("rigbench max-batch cnn -d cpu --memory-limit 2GiB",),
    "lr-find": ("rigbench lr-find mlp --dataset digits",),
    "scaling": ("rigbench scaling mlp -d cpu --quick",
                "rigbench scaling mlp --processes 1,2   # data-parallel ranks"),
    "recommend": ("rigbench recommend mlp --quick   # measures only what is missing",
                  "rigbench recommend cnn --no-run  # from stored results only"),
    "calibrate": ("rigbench calibrate -d cpu --quick",),
    "roofline": ("rigbench roofline --where workload=mlp",),
    "compare": ("rigbench compare --published",
                "rigbench compare RUN_A RUN_B   # run ids: rigbench results runs",
                "rigbench compare --frameworks mlp"),
    "score": ("rigbench score", "rigbench score --list-references"),
    "report": ("rigbench report --out report.html   # then open it in a browser",
               "rigbench report --where workload=mlp --png charts/"),
    "workloads": ("rigbench workloads", "rigbench workloads --json"),
    "devices": ("rigbench devices",),
    "specs": ("rigbench specs", "rigbench specs h100"),
    "results list": ("rigbench results list --workload mlp --status ok",),
    "results runs": ("rigbench results runs",),
    "results show": ("rigbench results show 1          # id: first column of results list",
                     "rigbench results show 1 --json   # every field and raw step time"),
    "results export": ("rigbench results export --format csv -o results.csv",
                       "rigbench results export --format bundle -o this-machine.json"),
    "results import": ("rigbench results import this-machine.json   # another machine's bundle",),
    "results flush": ("rigbench results flush",),
}


def epilog(path: str) -> str:
    """The examples as click's help prints them: `\\b` keeps the lines as written, unwrapped."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in EXAMPLES[path])


def add_examples(app: typer.Typer, results_app: typer.Typer) -> None:
    """Give every registered command its examples (a command's own epilog wins)."""
    for group, prefix in ((app, ""), (results_app, "results ")):
        for info in group.registered_commands:
            name = info.name or (info.callback.__name__.replace("_", "-") if info.callback else "")
            if info.epilog is None and f"{prefix}{name}" in EXAMPLES:
                info.epilog = epilog(f"{prefix}{name}")
