"""Every example of README.md and docs/*.md, run as written, against the bundled sample data, in a workspace per
page (tests/docs/examples.py has the convention): a console command must print what its page shows, a doctest
example what follows it. Every other fenced block must be accounted for: text that is not run, the analyst queries
the end-to-end tests run, or a shell script with the test that runs it (or why none can)."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.docs.examples import (
    KINDS,
    PAGES,
    SHELL_BLOCKS,
    SQL_PAGE,
    SQL_TESTS,
    Example,
    Shell,
    Workspace,
    blocks,
    commands,
    examples,
    run_example,
    run_shell,
)

EXAMPLES = examples()
BY_PAGE: dict[Path, list[Example]] = defaultdict(list)
for _example in EXAMPLES:
    BY_PAGE[_example.block.page].append(_example)


def _params(in_session: bool) -> list[object]:
    return [pytest.param(example, id=example.id,
                         marks=[pytest.mark.slow(reason=example.slow_reason)] if example.slow_reason else [])
            for example in EXAMPLES if example.in_session == in_session]


@pytest.fixture(scope="module")
def workspaces(tmp_path_factory: pytest.TempPathFactory) -> dict[Path, Workspace]:
    made = {}
    for page in PAGES:
        folder = tmp_path_factory.mktemp(f"docs-{page.stem.lower()}")
        (folder / "data").symlink_to(REPO / "data")
        made[page] = Workspace(folder)
    return made


def check(example: Example, workspaces: dict[Path, Workspace], shell: Shell | None) -> None:
    problems = run_example(example, BY_PAGE[example.block.page], workspaces[example.block.page], shell)
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


@pytest.mark.parametrize("example", _params(in_session=False))
def test_example(example: Example, workspaces: dict[Path, Workspace]) -> None:
    """In process only: no server, no shell."""
    check(example, workspaces, shell=None)


@pytest.mark.parametrize("example", _params(in_session=True))
def test_example_in_the_session(example: Example, workspaces: dict[Path, Workspace], prefect_harness: str) -> None:
    """With the session's Prefect server (for the flows of warehouse commands, in process and in bash) and bash."""
    check(example, workspaces, shell=run_shell)


def test_every_block_is_accounted_for() -> None:
    shells = set()
    for page in PAGES:
        for block in blocks(page):
            assert block.kind in KINDS, f"{block.where}: a ```{block.kind} block; the kinds are {', '.join(KINDS)}"
            if block.kind == "sql":
                assert block.page == SQL_PAGE, f"{block.where}: analyst queries go in {SQL_PAGE.name}, where they run"
            elif block.kind == "console":
                assert commands(block), block.where
            elif block.kind == "bash":
                key = (str(page.relative_to(REPO)), block.first_line)
                assert key in SHELL_BLOCKS, f"{block.where}: name the test that runs this bash block in SHELL_BLOCKS"
                shells.add(key)
    assert shells == set(SHELL_BLOCKS), f"SHELL_BLOCKS names blocks no page has: {set(SHELL_BLOCKS) - shells}"


def test_shell_blocks_are_run_where_they_say() -> None:
    for (page, _), how in SHELL_BLOCKS.items():
        if how.startswith("not run by a test: "):
            continue
        assert re.fullmatch(r"tests/\S+\.py", how) and (REPO / how).is_file(), how
        assert page in (REPO / how).read_text(), f"{how} does not read {page}"


def test_analyst_queries_are_run() -> None:
    for test in SQL_TESTS:
        assert str(SQL_PAGE.relative_to(REPO)) in (REPO / test).read_text(), f"{test} does not read {SQL_PAGE.name}"


def test_the_convention_finds_commands_outputs_and_exit_statuses(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("text\n\n- item:\n\n  ```console\n  $ judged evaluate q.txt \\\n      r.txt --cutoffs 1\n"
                    "  ndcg_cut_1  q1  1.0\n\n  $ judged sql \"SELECT 1\" --warehouse nowhere  # exit 1\n"
                    "  judged: error: ...\n  ```\n")
    (block,) = blocks(page)
    assert block.line == 6 and block.kind == "console"
    first, second = commands(block)
    assert first.argv == ("evaluate", "q.txt", "r.txt", "--cutoffs", "1") and first.exit_code == 0
    assert first.expected == "ndcg_cut_1  q1  1.0\n" and first.line == 6
    assert second.argv == ("sql", "SELECT 1", "--warehouse", "nowhere") and second.exit_code == 1
    assert second.expected == "judged: error: ..."


def test_only_a_plain_judged_line_runs_in_process(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text('```console\n$ cp a b\n$ zcat r.gz | judged evaluate q -\n$ X=1 judged show e\n'
                    '$ judged evaluate q r > out.txt\n$ judged sql "SELECT 1 WHERE 2 > 1; -- |"\n```\n')
    assert [command.argv for command in commands(blocks(page)[0])] == [
        (), (), (), (), ("sql", "SELECT 1 WHERE 2 > 1; -- |")]
