"""The documentation stays inside the repository: every relative link of README.md, docs/ and the other READMEs
resolves to a file of this repository (a clone has no ../shared), and the README links the method's reference."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO

DOCUMENTS = sorted({REPO / "README.md", *REPO.glob("docs/**/*.md"), *REPO.glob("*/README.md")})
# [text](target) and [text]: target; a target's #fragment and "title" are not part of the path.
LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|^\s*\[[^\]]+\]:\s*(\S+)", re.M)


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


def test_readme_links_the_method() -> None:
    assert "docs/method.md" in links(REPO / "README.md")


def test_link_pattern_finds_what_a_reader_clicks(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text('See [the spec](../shared/SPEC.md), [a title](docs/a.md "A") and\n[ref]: other.md#part\n'
                    "```\n[not a link](in/code.md)\n```\n")
    assert links(page) == ["../shared/SPEC.md", "docs/a.md", "other.md#part"]
