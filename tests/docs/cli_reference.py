"""docs/cli.md's option tables, generated from the command line itself, so that the page lists every command and
every option with the help text `--help` prints, and cannot drift from it.

Each table sits between `<!-- options: NAME -->` and `<!-- /options -->`, NAME being a command (`evaluate`,
`server start`), `judged` itself (the options before a command), or a group of options several commands share
(`spec`: the spec options, `comparison`: the comparison options), which a command's own table names in one row. After changing a command's options, rewrite the
tables (tests/docs/test_pages.py fails until then):

    .venv/bin/python -m tests.docs.cli_reference --write
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from typing import Any

from tests.conftest import REPO

CLI_PAGE = REPO / "docs" / "cli.md"
# Option panels several commands share, each in one table of its own: panel title -> (table name, its section).
SHARED_PANELS = {
    "Spec options (override the preset)": ("spec", "#spec-options"),
    "Comparison options": ("comparison", "#comparison-options"),
}
TABLE = re.compile(r"(<!-- options: ([a-z -]+) -->\n)(.*?)(<!-- /options -->)", re.S)


# Typer builds the commands with the click it ships (typer._click): they are told apart by what they have.
Command = Any


def root() -> Command:
    import typer.main

    from judged.flows.cli import app

    return typer.main.get_command(app)


def commands(group: Command | None = None, prefix: str = "") -> Iterator[tuple[str, Command]]:
    """Every command, by its name as typed after `judged` (`server start` for a subcommand), in the order `--help`
    lists them."""
    group = group or root()
    for name, command in group.commands.items():
        if hasattr(command, "commands"):  # a group of subcommands
            yield from commands(command, f"{prefix}{name} ")
        else:
            yield f"{prefix}{name}", command


Parameter = Any


def _is_argument(parameter: Parameter) -> bool:
    return parameter.param_type_name == "argument"


def _cell(text: str) -> str:
    """Help text as one table cell: on one line, `|` escaped, and `<` outside code spans too (`<run_id>` would be
    read as an HTML tag)."""
    parts = " ".join(text.split()).replace("|", "\\|").split("`")
    return "`".join(part if i % 2 else part.replace("<", "&lt;") for i, part in enumerate(parts))


def _name(parameter: Parameter) -> str:
    if _is_argument(parameter):
        return f"`{parameter.name.upper()}{' ...' if parameter.nargs == -1 else ''}`"  # type: ignore[union-attr]
    flags = " / ".join(f"`{flag}`" for flag in (*parameter.opts, *parameter.secondary_opts))
    metavar = getattr(parameter, "metavar", None)
    return f"{flags} {metavar}" if metavar else flags


def _default(parameter: Parameter) -> str:
    shown = getattr(parameter, "show_default", None)
    if isinstance(shown, str):
        return f"`{shown}`"
    if parameter.required:
        return "required"
    if parameter.default in (None, False, ()) or _is_argument(parameter):
        return ""
    return f"`{parameter.default}`"


def _rows(parameters: list[Parameter]) -> list[str]:
    return [f"| {_name(p)} | {_default(p)} | {_cell(getattr(p, 'help', None) or '')} |" for p in parameters
            if p.name != "help"]


def panel(parameter: Parameter) -> str | None:
    return getattr(parameter, "rich_help_panel", None)


def table(name: str) -> str:
    """The markdown table named `name`: a command's arguments and options (a shared panel as one row), or a shared
    panel's options as the first command that has them declares them."""
    header = ["| argument or option | default | what it does |", "|---|---|---|"]
    shared = {table_name: title for title, (table_name, _) in SHARED_PANELS.items()}
    if name in shared:
        command = next(command for _, command in commands() if any(panel(p) == shared[name] for p in command.params))
        return "\n".join([*header, *_rows([p for p in command.params if panel(p) == shared[name]])]) + "\n"
    command = root() if name == "judged" else dict(commands())[name]
    own = [p for p in command.params if panel(p) not in SHARED_PANELS]
    rows = _rows(own)
    for title, (table_name, anchor) in SHARED_PANELS.items():
        if any(panel(p) == title for p in command.params):
            rows.append(f"| the {table_name} options | | [{title}]({anchor}) |")
    return "\n".join([*header, *rows]) + "\n"


def shared_panel_options() -> dict[str, dict[str, list[str]]]:
    """For each shared panel, each command's option names in it: equal lists mean one table serves them all."""
    found: dict[str, dict[str, list[str]]] = {}
    for name, command in commands():
        for title in SHARED_PANELS:
            options = [p.name for p in command.params if panel(p) == title]
            if options:
                found.setdefault(title, {})[name] = options  # type: ignore[assignment]
    return found


def rewritten(text: str) -> str:
    return TABLE.sub(lambda match: f"{match.group(1)}{table(match.group(2))}{match.group(4)}", text)


def tables_in(text: str) -> dict[str, str]:
    return {match.group(2): match.group(3) for match in TABLE.finditer(text)}


if __name__ == "__main__":
    page = CLI_PAGE.read_text()
    if sys.argv[1:] == ["--write"]:
        CLI_PAGE.write_text(rewritten(page))
    else:
        sys.stdout.write(rewritten(page))
