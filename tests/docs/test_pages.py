"""The documentation stays inside the repository and lists what the command line has.

- Every relative link of README.md, docs/ and the other READMEs resolves to a file of this repository (a clone has
  no ../shared), and the README links the method's reference and every page of docs/.
- No text a user reads names a document outside the repository: neither "SPEC" as a document nor ../shared, in the
  README, docs/, data/README.md, `judged measures` (each measure's page), every command's `--help`, and the
  docstrings of the installed package (what `help()` prints).
- docs/cli.md has a section and an option table for every command, each table the one `--help` gives
  (tests/docs/cli_reference.py generates them).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import REPO
from tests.docs import cli_reference
from tests.docs.examples import ENV

DOCUMENTS = sorted({REPO / "README.md", *REPO.glob("docs/**/*.md"), *REPO.glob("*/README.md")})
# Texts for users; benchmarks/README.md, for the project's developers, names the reference data it was measured on.
USER_DOCUMENTS = sorted({REPO / "README.md", *REPO.glob("docs/**/*.md"), REPO / "data" / "README.md"})
# [text](target) and [text]: target; a target's #fragment and "title" are not part of the path.
LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|^\s*\[[^\]]+\]:\s*(\S+)", re.M)
# "SPEC" as a word (the name of a document outside the repository; SPEC_OPTIONS is another word), or ../shared.
OUTSIDE = re.compile(r"\bSPEC\b|\.\./shared")


def links(document: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", document.read_text(), flags=re.S)  # code blocks hold no links
    return [a or b for a, b in LINK.findall(text)]


def test_documents_are_found() -> None:
    assert REPO / "README.md" in DOCUMENTS and REPO / "docs" / "method.md" in DOCUMENTS


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(REPO)))
def test_relative_links_stay_in_the_repository_and_resolve(document: Path) -> None:
    for target in links(document):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a web address or an anchor in the same page
        path = (document.parent / target.split("#")[0]).resolve()
        assert path.is_relative_to(REPO), f"{document.name} links {target}, outside the repository"
        assert path.exists(), f"{document.name} links {target}, which does not exist"


def anchors(document: Path) -> set[str]:
    """The anchors GitHub gives the page's headings: lower case, punctuation but `-` and `_` dropped, spaces as `-`
    (a repeated heading's later anchors end in -1, -2, ...)."""
    text = re.sub(r"```.*?```", "", document.read_text(), flags=re.S)
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*$", text, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        found.add(slug if slug not in found else f"{slug}-{sum(a.startswith(slug) for a in found)}")
    return found


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(REPO)))
def test_anchors_name_a_heading_of_their_page(document: Path) -> None:
    for target in links(document):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or "#" not in target:
            continue
        path, fragment = target.split("#", 1)
        page = (document.parent / path).resolve() if path else document
        if page.suffix == ".md":
            assert fragment in anchors(page), f"{document.name} links {target}: no such heading in {page.name}"


def test_anchors_follow_github() -> None:
    page = REPO / "docs" / "measures.md"
    assert {"trec_evals-names", "the-measures"} <= anchors(page)
    assert "judged-server-start" in anchors(REPO / "docs" / "cli.md")


def test_readme_links_every_page_of_docs() -> None:
    linked = {target.split("#")[0] for target in links(REPO / "README.md")}
    pages = {str(path.relative_to(REPO)) for path in REPO.glob("docs/*.md")}
    assert "docs/method.md" in pages and pages <= linked, sorted(pages - linked)


def test_link_pattern_finds_what_a_reader_clicks(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text('See [the spec](../shared/SPEC.md), [a title](docs/a.md "A") and\n[ref]: other.md#part\n'
                    "```\n[not a link](in/code.md)\n```\n")
    assert links(page) == ["../shared/SPEC.md", "docs/a.md", "other.md#part"]


def outside_references(text: str) -> list[str]:
    """The lines of `text` that name a document outside the repository."""
    return [line.strip() for line in text.splitlines() if OUTSIDE.search(line)]


def test_the_outside_pattern() -> None:
    assert outside_references("nDCG (SPEC section 2)\nsee ../shared/SPEC.md\nSPEC_OPTIONS and spec\n") == [
        "nDCG (SPEC section 2)", "see ../shared/SPEC.md"]


@pytest.mark.parametrize("document", USER_DOCUMENTS, ids=lambda path: str(path.relative_to(REPO)))
def test_no_document_names_one_outside_the_repository(document: Path) -> None:
    assert outside_references(document.read_text()) == []


def judged(*args: str) -> str:
    from judged.flows.cli import app

    result = CliRunner().invoke(app, list(args), env=ENV)
    assert result.exit_code == 0, result.output
    return result.output


def test_measures_name_no_document_outside_the_repository() -> None:
    from judged.schemas.measures import MEASURES

    pages = {"(every measure)": judged("measures"), **{name: judged("measures", name) for name in MEASURES}}
    assert {name: outside_references(text) for name, text in pages.items() if outside_references(text)} == {}


def test_help_names_no_document_outside_the_repository() -> None:
    names = ["", *(name for name, _ in cli_reference.commands()), "server"]
    helps = {name: judged(*name.split(), "--help") for name in names}
    assert {name: outside_references(text) for name, text in helps.items() if outside_references(text)} == {}


def test_docstrings_name_no_document_outside_the_repository() -> None:
    """Every docstring of the installed package (modules, classes, functions): what `help()` and `judged measures`
    show."""
    sources = [REPO / "__init__.py", *(path for folder in ("schemas", "transforms", "flows")
                                        for path in sorted((REPO / folder).rglob("*.py")))]
    found = []
    for source in sources:
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                docstring = ast.get_docstring(node) or ""
                found += [f"{source.relative_to(REPO)}: {line}" for line in outside_references(docstring)]
    assert found == []


def test_cli_page_has_a_table_for_every_command() -> None:
    tables = cli_reference.tables_in(cli_reference.CLI_PAGE.read_text())
    expected = [name for name, _ in cli_reference.commands()]
    shared = [name for name, _ in cli_reference.SHARED_PANELS.values()]
    assert sorted(tables) == sorted(["judged", *expected, *shared])
    page = cli_reference.CLI_PAGE.read_text()
    for name in expected:
        assert f"\n## `judged {name}`\n" in page or f"\n### `judged {name}`\n" in page, name


def test_cli_page_tables_are_what_help_says() -> None:
    page = cli_reference.CLI_PAGE.read_text()
    assert page == cli_reference.rewritten(page), (
        "docs/cli.md's option tables differ from the command line: rewrite them with "
        "`.venv/bin/python -m tests.docs.cli_reference --write`")


def test_shared_option_panels_are_the_same_in_every_command() -> None:
    for title, by_command in cli_reference.shared_panel_options().items():
        assert len({tuple(options) for options in by_command.values()}) == 1, (title, by_command)
