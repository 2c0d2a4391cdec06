"""What README.md and docs/*.md name must exist: a user copies a `rigbench ...` line, opens a
linked page or section, or looks for a file or function the docs point at. A renamed option,
heading or module breaks these silently, so every one is read out of the pages here and checked
against the code (nothing runs: click parses the lines)."""

from __future__ import annotations

import ast
import functools
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer

from rigbench import cli

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "rigbench"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: A placeholder a synopsis writes for a value (ID, N, WORKLOAD, HOST:PORT): not a value to parse.
PLACEHOLDER = re.compile(r"\b[A-Z][A-Z_]*\b|\.\.\.|\[")
#: Names written like a path that are not files of this repository, each with why.
NOT_REPO_PATHS = {
    "data/fashion_mnist/": "a data set's folder in the user's cache (docs/DATASETS.md)",
    "store/migrations/versions/NNNN_what.py": "the name a new migration takes",
    "src/rigbench/analysis/data/reference_machines/NAME.json": "the file a new reference machine takes",
}


def _lines(page: Path) -> Iterator[tuple[int, str, bool]]:
    """(line number, text, whether it is code) with a shell line's `\\` continuation joined."""
    fenced = False
    lines = page.read_text(encoding="utf-8").splitlines()
    number = 0
    while number < len(lines):
        line, start = lines[number], number + 1
        while line.rstrip().endswith("\\") and number + 1 < len(lines):
            number += 1
            line = line.rstrip()[:-1] + " " + lines[number].strip()
        number += 1
        if line.startswith("```"):
            fenced = not fenced
            continue
        yield start, line, fenced or line.startswith("    ")


def _command_lines() -> Iterator[tuple[str, str]]:
    """Every `rigbench ...` a page shows: code lines and inline spans, where, and the line."""
    for page in PAGES:
        for number, line, code in _lines(page):
            where = f"{page.relative_to(ROOT)}:{number}"
            if code and (found := re.match(r"\s*(?:\$ )?(?:\w+=\S+ )*(rigbench .*)", line)):
                yield where, found.group(1)
            elif not code:
                yield from ((where, span) for span in re.findall(r"`(rigbench [^`]+)`", line))


@functools.cache
def _root() -> Any:
    return typer.main.get_command(cli.app)


def _command(words: list[str]) -> tuple[Any, list[str]]:
    """The click command the words name and the words left for it."""
    command: Any = _root()
    while words and words[0] in getattr(command, "commands", {}):
        command, words = command.commands[words[0]], words[1:]
    return command, words


def test_every_rigbench_line_in_the_docs_names_a_command_and_its_options():
    """A copied line must not end in "No such option": every option a `rigbench ...` line or
    synopsis names is one of its command's, and a line without placeholders parses whole (its
    values of the right type; a missing argument is allowed where prose names the command)."""
    checked = 0
    for where, line in _command_lines():
        text = line.split(" #")[0].replace("\\|", "/")  # a table cell's escaped | between choices
        words = shlex.split(re.sub(r"\s*(\||&&|;|>|2>).*", "", text))[1:]
        command, rest = _command(words)
        if rest and not rest[0].startswith("-") and hasattr(command, "commands"):
            pytest.fail(f"{where}: no command {rest[0]!r}: {line}")
        known = {name for param in command.params for name in [*param.opts, *param.secondary_opts]}
        unknown = [w.split("=")[0] for w in rest if re.match(r"--?[a-zA-Z]", w) and w.split("=")[0] not in known | {"--help"}]
        assert not unknown, f"{where}: {command.name} has no {unknown}: {line}"
        if not PLACEHOLDER.search(text) and "--help" not in rest:
            try:
                command.make_context(command.name, list(rest))
            except Exception as error:  # click's: prose names a command without its argument, or an option alone
                if type(error).__name__ not in ("MissingParameter", "Exit") and not str(error).endswith("requires an argument."):
                    pytest.fail(f"{where}: {error}: {line}")
        checked += 1
    assert checked > 150, checked  # the search finds the pages' lines


def _headings(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings (lower case, punctuation dropped, spaces to -)."""
    anchors: set[str] = set()
    for _, line, code in _lines(page):
        if not code and (heading := re.match(r"#+\s+(.*)", line)):
            anchor = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
            anchors.add(anchor if anchor not in anchors else anchor + "-1")
    return anchors


def test_every_relative_link_and_anchor_resolves():
    links = 0
    for page in [*PAGES, *(ROOT / "docs" / "results").glob("*.md")]:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            assert linked.exists(), f"{page.name}: a link to {target}, which does not exist"
            assert not anchor or anchor in _headings(linked), f"{page.name}: no heading #{anchor} in {linked.name}"
            links += 1
    assert links > 40, links


def test_every_section_named_in_quotes_is_a_heading_or_a_bold_paragraph():
    """`docs/METHODOLOGY.md, "A busy machine"`: the quoted name must still be on that page."""
    named = 0
    for page in PAGES:
        text = " ".join(page.read_text(encoding="utf-8").split())
        for doc, section in re.findall(r"([\w-]+\.md)\)?(?:'s)?,? (?:section )?\"([^\"]+)\"", text):
            target = next((p for p in [*PAGES, *(ROOT / "docs" / "results").glob("*.md")] if p.name == doc), None)
            assert target, f"{page.name} names {doc}, which is not a page"
            titles = re.findall(r"^#+\s+(.*)$|\*\*([^*]+)\*\*", target.read_text(encoding="utf-8"), re.MULTILINE)
            assert any(section.lower() in (a or b).lower() for a, b in titles), f"{page.name}: {doc} has no {section!r}"
            named += 1
    assert named > 10, named


@functools.cache
def _module(path: str) -> Path | None:
    """The file a doc's `folder/module` names: from the repository root, or inside the package
    (`analysis/stats`, `launchers/base`: the folder named from where the text stands)."""
    for base in (ROOT, ROOT / "src", PACKAGE):
        for candidate in (base / path, base / f"{path}.py", base / path / "__init__.py"):
            if candidate.exists():
                return candidate
    tail = path.split("/")
    matches = [p for p in PACKAGE.rglob(f"{tail[-1]}.py") if p.with_suffix("").parts[-len(tail):] == tuple(tail)]
    matches += [p for p in PACKAGE.rglob(tail[-1]) if p.parts[-len(tail):] == tuple(tail)]
    return matches[0] if matches else None


@functools.cache
def _defines(module: Path, name: str) -> bool:
    """Whether the module defines or imports the name (at any depth: a class's method too)."""
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == name:
            return True
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id == name:
            return True
        if isinstance(node, ast.ImportFrom | ast.Import) and name in {a.asname or a.name for a in node.names}:
            return True
    return False


def test_every_file_module_and_function_the_docs_name_exists():
    """`store/lenient.py`, `analysis/stats.median_ci`, `tests/contract/test_workloads.STEPS`:
    a file under the repository or the package, and the name defined in it (never a file
    beside the checkout, `../shared/...`, which a user's clone or install lacks)."""
    folders = {p.name for p in PACKAGE.rglob("*") if p.is_dir()} | {"src", "tests", "benchmarks", "docs", "examples", ".ci"}
    checked = 0
    for page in PAGES:
        for number, line, code in _lines(page):
            for span in re.findall(r"`([^`\s]+)`", line) if not code else []:
                assert not span.startswith("../"), f"{page.relative_to(ROOT)}:{number}: {span} is outside the repository"
                if not re.fullmatch(r"[\w./-]+", span) or "/" not in span or span.split("/")[0] not in folders or span in NOT_REPO_PATHS:
                    continue
                checked += 1
                if _module(span.rstrip("/")):  # a file or folder as written
                    continue
                found = re.fullmatch(r"((?:[\w.-]+/)*[\w-]+)(?:\.py)?\.(\w+)", span)  # folder/module.name
                assert found, f"{page.relative_to(ROOT)}:{number}: no file {span}"
                path, name = found.groups()
                module = _module(path)
                assert module, f"{page.relative_to(ROOT)}:{number}: no file {span}"
                assert module.is_dir() or _defines(module, name), f"{page.relative_to(ROOT)}:{number}: {name} is not in {module.relative_to(ROOT)}"
    assert checked > 200, checked


def test_the_readmes_json_fields_name_every_field_in_the_rows_order():
    """README's "JSON fields" lists a result's keys as `Result.row()` orders them: the head
    columns, then every metric (the training figures as the range `epochs ... diverged_at_epoch`).
    A metric added to metrics.py without a word here left the list short twice."""
    from rigbench.metrics import Metrics
    from rigbench.spec import ROW_HEAD_COLUMNS

    expected = [*ROW_HEAD_COLUMNS, *Metrics.model_fields]
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("### JSON fields", 1)[1].split("\n## ", 1)[0]
    section = section.replace("epochs ... diverged_at_epoch", " ".join(expected[expected.index("epochs"):expected.index("diverged_at_epoch") + 1]))
    named = list(dict.fromkeys(word for word in re.findall(r"\b[a-z][a-z0-9_]*\b", section) if word in expected))
    assert named == expected, [name for name in expected if name not in named] or named


def test_the_data_sets_table_names_the_workloads_each_set_trains():
    """docs/DATASETS.md's "accepted by" column is data/accepts.ACCEPTS read the other way round."""
    from rigbench.data.accepts import ACCEPTS

    text = (ROOT / "docs" / "DATASETS.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)` \|.*\| ([^|]+) \|$", text.split("| name | images |", 1)[1].split("\n\n", 1)[0], re.MULTILINE)
    assert len(rows) >= 5, rows
    for name, accepted_by in rows:
        named = {word for word in re.findall(r"\w+", accepted_by) if word in ACCEPTS}
        assert named == {w for w, sets in ACCEPTS.items() if name in sets}, (name, accepted_by)
