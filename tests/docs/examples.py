"""The documentation's examples, found and run: every fenced block of README.md and docs/*.md is of one of the kinds
below, and tests/docs/test_examples.py runs each runnable one and fails when what it prints drifts from the page.

The convention (README's "Developing" says it too):

- ```console: a terminal session. A line `$ COMMAND` is a command (a line ending in `\\` goes on with the next);
  the lines after it, up to the next `$ ` line, are what it prints: its standard output, then its standard error
  (a terminal may interleave the two). A command must exit 0, unless it ends with a comment `# exit N`. It runs in
  the page's workspace, output piped (plain tables, no colour): a plain `judged ARGS` in process, through the
  CLI's runner (typer's CliRunner); any other line (`cp`, a pipe into `judged`, a variable set before it) by bash,
  with .venv/bin first on PATH.
- ```python: doctest style. The `>>> ` lines (and their `... ` continuations) run in the page's workspace, in one
  namespace per page, and the lines after each are what it prints, by doctest's rules.
- In what an example prints, `...` stands for any text (doctest's ELLIPSIS), and trailing spaces do not count. Use
  `...` only for what changes from run to run: an absolute path, a time, a Prefect flow run id, a duration, or an
  evaluation or comparison id (they hold judged's version, so a release changes them).
- ```text: shown, not run: a command's synopsis, or output quoted in prose.
- ```sql (and ```sql comparison): an analyst's query; only docs/warehouse.md has them, and the end-to-end tests in
  SQL_TESTS run them against stored warehouses and check their rows.
- ```bash: a script for a real shell: a fresh clone, a server that outlives the command, or a long run. SHELL_BLOCKS
  names, for each (by its first line), the test that runs it, or why none does.
A fence with another language, or none, fails `test_every_block_is_accounted_for`.

A page's workspace is a temporary folder, one per page, holding `data` (the repository's data/, so
`data/seed/qrels.txt` is the bundled seed) and whatever the page's earlier examples left there (a warehouse, a
report): a page reads as a session, top to bottom, and an example runs after every earlier example of its page.
An example that stores into a warehouse or runs a line in bash, or follows one on its page, runs with the
session's Prefect server and is slow (`in_session`), as is a comparison with its 10,000 permutations and resamples
(`SLOW_COMMANDS`): a page puts its quick examples first, and the fast loop runs those. The shell is handed to
`run_example` by the slow test alone, so the fast one never starts a process.
"""

from __future__ import annotations

import contextlib
import doctest
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import REPO

PAGES = (REPO / "README.md", *sorted((REPO / "docs").glob("*.md")))
KINDS = ("console", "python", "text", "sql", "bash")
SQL_PAGE = REPO / "docs" / "warehouse.md"
# The tests that run the ```sql blocks, in page order (`sql` blocks, then `sql comparison` blocks).
SQL_TESTS = ("tests/e2e/test_quickstart.py", "tests/e2e/test_sql_versions.py", "tests/e2e/test_compare_warehouse.py")
# Each ```bash block, by its page and first line: the test that runs it as written, or why no test can.
SHELL_BLOCKS = {
    ("README.md", "bash .ci/quickstart     # install into .venv, then run the nightly flow over the bundled sample"):
        "not run by a test: it installs into the clone's .venv; its last step, `judged demo`, is "
        "tests/e2e/test_quickstart.py's, and `.ci/setup` is what every CI run does first",
    ("docs/developing.md", "bash .ci/run                                      # CI: install, then every test"):
        "not run by a test: these are the test suite's own commands (CI runs the first)",
    ("docs/operations.md", "$CLONE/.venv/bin/judged ingest-judgments "
                           "$CLONE/data/trec-dl-2020-sample/qrels.dl20-passage.txt  # terminal 1, in an empty folder"):
        "tests/e2e/test_prefect_server.py",
    ("docs/operations.md", "JUDGED_FAULTS=long .venv/bin/python -m pytest -s tests/reliability/test_faults.py   "
                           "# 30 kills per writer"):
        "not run by a test: it is the long fault-injection run itself (about an hour); CI runs its short round",
    ("docs/operations.md", "JUDGED_FAULTS=20 JUDGED_FAULTS_WRITERS=compare,report,worklist,extends,revise nice -n 10 "
                           ".venv/bin/python -m pytest -s -p no:cacheprovider tests/reliability/test_faults.py"):
        "not run by a test: it is a long fault-injection run itself (about 50 minutes); CI runs its short round",
    ("docs/warehouse.md", "python3 -m venv duckdb-cli && duckdb-cli/bin/pip install duckdb-cli   "
                          "# the DuckDB CLI (1.5.x) as `duckdb`"):
        "not run by a test: it installs a package from the registry; tests/e2e/test_quickstart.py opens the "
        "catalog read-only from another DuckDB client (1.0.0) in the warehouse's folder, as the second line does",
}
# Commands whose default work takes seconds of CPU: their examples, and those after them on a page, are slow.
SLOW_COMMANDS = {"compare": "a comparison draws 10,000 permutations and 10,000 resamples",
                 "report": "a report compares its runs (10,000 permutations and resamples) and draws its plots"}
# Commands that store into or read a warehouse: a warehouse exists once a command stored into it through a Prefect
# flow, so these, and every example after them on a page, run with the session's server.
WAREHOUSE_COMMANDS = {"ingest-judgments", "ingest-run", "nightly", "demo", "worklist", "sql", "show"}
# As test_cli runs the CLI: no colour, no forced terminal.
ENV: dict[str, str | None] = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "PY_COLORS": None,
                              "GITHUB_ACTIONS": None, "TTY_COMPATIBLE": None}
EXIT = re.compile(r"\s#\s*exit\s+(\d+)\s*$")


@dataclass(frozen=True)
class Block:
    """A fenced block: its page, the line of its first content line, its kind (the fence's first word), the rest of
    the fence's info string, and its text (without the fence's indentation)."""

    page: Path
    line: int
    kind: str
    tag: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO) if self.page.is_relative_to(REPO) else self.page}:{self.line}"

    @property
    def first_line(self) -> str:
        return next((line.strip() for line in self.text.splitlines() if line.strip()), "")


@dataclass(frozen=True)
class Command:
    """One `$ ` line of a console block, with what it prints and its exit status. `argv` is the arguments after
    `judged` for a command run in process, empty for a line bash runs."""

    text: str
    argv: tuple[str, ...]
    expected: str
    exit_code: int
    line: int

    @property
    def in_process(self) -> bool:
        return bool(self.argv)


@dataclass(frozen=True)
class Example:
    """A runnable block (console or python) and what running it needs."""

    block: Block
    index: int  # among the page's runnable blocks
    in_session: bool  # runs with the session's Prefect server, and may run bash
    slow_reason: str | None

    @property
    def id(self) -> str:
        return self.block.where


def blocks(page: Path) -> list[Block]:
    """The page's fenced blocks, in order. A fence may be indented (a block inside a list item): its lines lose that
    indentation. An unclosed fence is an error."""
    found: list[Block] = []
    lines = page.read_text().splitlines()
    fence = re.compile(r"^(\s*)```\s*(\S*)\s*(.*?)\s*$")
    i = 0
    while i < len(lines):
        opening = fence.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, kind, tag = opening.groups()
        body: list[str] = []
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        if j == len(lines):
            raise ValueError(f"{page.relative_to(REPO)}:{i + 1}: a fence that is never closed")
        found.append(Block(page, i + 2, kind, tag, "\n".join(body) + "\n"))
        i = j + 1
    return found


def commands(block: Block) -> list[Command]:
    """The `$ ` commands of a console block with what each prints."""
    parsed: list[Command] = []
    lines = block.text.splitlines()
    if lines and not lines[0].startswith("$ "):
        raise ValueError(f"{block.where}: a console block begins with a `$ ` command line")
    i = 0
    while i < len(lines):
        start = i
        command = lines[i][2:]
        while command.endswith("\\") and i + 1 < len(lines):
            i += 1
            command = command[:-1] + lines[i]
        i += 1
        output: list[str] = []
        while i < len(lines) and not lines[i].startswith("$ "):
            output.append(lines[i])
            i += 1
        status = EXIT.search(command)
        parsed.append(Command(command, _in_process(command), "\n".join(output), int(status.group(1)) if status else 0,
                              block.line + start))
    return parsed


def _in_process(command: str) -> tuple[str, ...]:
    """The arguments after `judged` when the line is `judged ARGS` alone (no pipe, redirection, list or variable
    set before it), else ()."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    words = list(lexer)
    if not words or words[0] != "judged" or "$(" in command or "`" in command:
        return ()
    if any(word and set(word) <= set("();<>|&") for word in words):
        return ()
    return tuple(words[1:])


def _subcommand(argv: tuple[str, ...]) -> str:
    return next((word for word in argv if not word.startswith("-")), "")


def examples() -> list[Example]:
    """Every runnable block of every page, with what it needs: it is in the session (the Prefect server, bash) when
    it or an earlier block of its page stores into or reads a warehouse, or runs a line in bash; it is slow when it
    or an earlier block is."""
    found: list[Example] = []
    for page in PAGES:
        in_session, slow = False, None
        runnable = [block for block in blocks(page) if block.kind in ("console", "python")]
        for index, block in enumerate(runnable):
            if block.kind == "console":
                for command in commands(block):
                    name = _subcommand(command.argv)
                    in_session |= (not command.in_process or name in WAREHOUSE_COMMANDS
                                   or "--warehouse" in command.argv)
                    slow = slow or SLOW_COMMANDS.get(name)
            found.append(Example(block, index, in_session, slow))
    return found


def _same(expected: str, printed: str) -> bool:
    def tidy(text: str) -> str:
        return "\n".join(line.rstrip() for line in text.rstrip().splitlines()) + "\n"

    return doctest.OutputChecker().check_output(tidy(expected), tidy(printed), doctest.ELLIPSIS)


@dataclass
class Workspace:
    """A page's folder and Python namespace, and what each of its examples run so far reported."""

    folder: Path
    namespace: dict[str, object] = field(default_factory=dict)
    problems: dict[str, list[str]] = field(default_factory=dict)  # example id -> its problems ([] = as shown)
    first_failure: str | None = None


Shell = Callable[[str, Path], tuple[int, str]]


def run_console(block: Block, folder: Path, shell: Shell | None) -> list[str]:
    """Run a console block's commands in `folder` (a line for bash through `shell`); the differences from the page,
    one message each."""
    from typer.testing import CliRunner

    from judged.flows.cli import app

    problems = []
    with contextlib.chdir(folder):
        for command in commands(block):
            shown = f"{block.page.relative_to(REPO)}:{command.line}: $ {command.text}"
            if command.in_process:
                result = CliRunner().invoke(app, list(command.argv), env=ENV)
                exit_code, output = result.exit_code, result.output + _traceback(result)
            elif shell is None:
                problems.append(f"{shown}\nruns in bash: the example belongs to the session's test")
                continue
            else:
                exit_code, output = shell(command.text, folder)
            if exit_code != command.exit_code:
                problems.append(f"{shown}\nexited {exit_code}, the page says {command.exit_code}:\n{output}")
            elif not _same(command.expected, output):
                problems.append(f"{shown}\nthe page shows:\n{command.expected}\nit printed:\n{output}")
    return problems


def run_shell(command: str, folder: Path) -> tuple[int, str]:
    """A console line run by bash in `folder`, with this environment's .venv/bin first on PATH: its exit status and
    what it printed, standard output then standard error (as the CLI's runner gives them)."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    environment = {name: value for name, value in {**os.environ, **ENV, "PATH": path}.items() if value is not None}
    done = subprocess.run(["bash", "-c", command], cwd=folder, env=environment, capture_output=True, text=True,
                          timeout=600)
    return done.returncode, done.stdout + done.stderr


def _traceback(result: object) -> str:
    import traceback

    error = getattr(result, "exc_info", None)
    if error is None or isinstance(error[1], SystemExit):
        return ""
    return "".join(traceback.format_exception(*error))


def run_python(block: Block, workspace: Workspace) -> list[str]:
    """Run a python block's doctest examples in the workspace's folder and namespace; the report of each failure."""
    test = doctest.DocTestParser().get_doctest(block.text, {}, block.where, str(block.page), block.line - 1)
    test.globs = workspace.namespace  # the page's one namespace (a DocTest holds a copy of the one it is given)
    if not test.examples:
        return [f"{block.where}: a python block holds `>>> ` examples (doctest style)"]
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    with contextlib.chdir(workspace.folder):
        runner.run(test, out=report.append, clear_globs=False)
    return ["".join(report)] if runner.failures else []


def run_example(example: Example, page_examples: list[Example], workspace: Workspace,
                shell: Shell | None = None) -> list[str]:
    """This example's problems ([] when it prints what its page shows), after the page's earlier examples: each
    runs once per workspace, and none runs after one that failed. Lines for bash run through `shell`."""
    for step in page_examples[:example.index + 1]:
        if step.id in workspace.problems:
            continue
        if workspace.first_failure is not None:
            workspace.problems[step.id] = [f"not run: an earlier example of its page failed "
                                           f"({workspace.first_failure})"]
            continue
        workspace.problems[step.id] = _run(step, workspace, shell)
        if workspace.problems[step.id]:
            workspace.first_failure = step.id
    return workspace.problems[example.id]


def _run(example: Example, workspace: Workspace, shell: Shell | None) -> list[str]:
    if example.block.kind == "console":
        return run_console(example.block, workspace.folder, shell)
    return run_python(example.block, workspace)
