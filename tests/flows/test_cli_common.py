"""What the `judged` commands share (flows/cli/common.py): the spec options, derived from `EvaluationSpec`'s fields
and given to every command that evaluates with one help each; options that conflict or cannot apply refused with
exit 2; and no bare traceback, ever: an unexpected exception is one line naming the command and its log."""

from __future__ import annotations

import json
import subprocess
import sys
import typing
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner, Result

from judged.flows.cli.app import app
from judged.flows.cli.common import EXIT_UNEXPECTED, NOT_OPTIONS, SPEC_OPTIONS, failure
from judged.schemas.spec import EvaluationSpec, SpecError
from judged.transforms.errors import InputError, UsageError

SEED = Path(__file__).resolve().parents[2] / "data" / "seed"
SEED_QRELS = SEED / "qrels.txt"
SEED_RUN = SEED / "run.txt"
EVALUATING_COMMANDS = ("evaluate", "compare", "report", "nightly", "serve", "worklist")
ENV: dict[str, str | None] = {"COLUMNS": "200", "NO_COLOR": "1", "PREFECT_API_URL": None}


def judged(*args: str | Path, env: dict[str, str | None] | None = None) -> Result:
    return CliRunner().invoke(app, [str(arg) for arg in args], env={**ENV, **(env or {})})


def assert_one_line_error(result: Result, code: int, message: str) -> None:
    assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.stderr == f"judged: error: {message}\n"
    assert "Traceback" not in result.stderr


def options_of(command: str) -> dict[str, str]:
    """Each option flag of a command and its help."""
    group = typer.main.get_command(app)
    return {flag: param.help or "" for param in group.commands[command].params for flag in param.opts}


# -- the spec options, declared once ---------------------------------------------------------------------------------


def test_every_spec_field_is_an_option_or_says_why_not() -> None:
    fields = set(EvaluationSpec.model_fields)
    options = [option.field for option in SPEC_OPTIONS]
    assert len(options) == len(set(options))
    assert set(options) | set(NOT_OPTIONS) == fields and not set(options) & set(NOT_OPTIONS)
    for name, field in EvaluationSpec.model_fields.items():
        assert field.description and "\n" not in field.description, name


@pytest.mark.parametrize("command", EVALUATING_COMMANDS)
def test_every_evaluating_command_takes_every_spec_option_with_the_same_help(command: str) -> None:
    options = options_of(command)
    assert "--preset" in options
    for option in SPEC_OPTIONS:
        assert option.flag in options, (command, option.flag)
        assert options[option.flag] == option.help, (command, option.flag)
        assert options[option.flag].startswith(EvaluationSpec.model_fields[option.field].description or "?")


def test_each_choice_of_a_spec_option_is_in_its_help() -> None:
    for option in SPEC_OPTIONS:
        annotation = EvaluationSpec.model_fields[option.field].annotation
        if typing.get_origin(annotation) is typing.Literal:
            for choice in typing.get_args(annotation):
                assert choice in option.help, (option.flag, choice)


def write_three_queries(folder: Path) -> tuple[Path, Path, Path]:
    qrels = folder / "qrels.txt"
    qrels.write_text("".join(f"q{q} 0 d{d} {(q + d) % 3}\n" for q in range(3) for d in range(6)))
    runs = []
    for name, shift in (("a", 0), ("b", 2)):
        run = folder / f"run.{name}.txt"
        run.write_text("".join(f"q{q} Q0 d{(d + shift) % 6} {d + 1} {10 - d} {name}\n"
                               for q in range(3) for d in range(6)))
        runs.append(run)
    return qrels, runs[0], runs[1]


SETTINGS = ["--permutations", "100", "--resamples", "100"]


def test_compare_takes_measures_and_interval_width(tmp_path: Path) -> None:
    qrels, run_a, run_b = write_three_queries(tmp_path)
    compared = judged("compare", qrels, run_a, run_b, "--measures", "nDCG@5,AP", "--interval-width", "0.3",
                      *SETTINGS, "--format", "json")
    assert compared.exit_code == 0, compared.output
    assert {row["measure"] for row in json.loads(compared.stdout)["comparisons"]} >= {"AP"}


@pytest.mark.slow  # the report's plots, and matplotlib's import, which no fast test needs
def test_report_takes_measures_and_interval_width(tmp_path: Path) -> None:
    qrels, run_a, run_b = write_three_queries(tmp_path)
    out = tmp_path / "report.html"
    reported = judged("report", qrels, run_a, run_b, "--measures", "AP", "--interval-width", "0.3", *SETTINGS,
                      "--out", out)
    assert reported.exit_code == 0, reported.output
    assert "AP" in out.read_text()


@pytest.mark.parametrize("command", ["evaluate", "compare", "report", "nightly", "serve"])
def test_interval_width_is_parsed_by_every_command_that_evaluates(command: str, tmp_path: Path) -> None:
    arguments = {
        "evaluate": [SEED_QRELS, SEED_RUN],
        "compare": [SEED_QRELS, SEED_RUN, SEED_RUN],
        "report": [SEED_QRELS, SEED_RUN, "--out", tmp_path / "report.html"],
        "nightly": ["--warehouse", tmp_path / "warehouse", "--inbox", tmp_path / "inbox"],
        "serve": ["--warehouse", tmp_path / "warehouse", "--inbox", tmp_path / "inbox"],
    }[command]
    result = judged(command, *arguments, "--interval-width", "wide")
    assert_one_line_error(result, 2, "--interval-width 'wide' is not a number")
    assert not (tmp_path / "inbox").exists() and not (tmp_path / "report.html").exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--interval-width", "0.3"], "--interval-width sets which intervals an evaluation's summary counts as wide; "
                                      "a worklist has no summary: leave it out"),
        (["--cutoff", "10", "--cutoffs", "5"], "--cutoff and --cutoffs both give k: give one of them"),
        (["--cutoffs", "5,10"], "a worklist narrows the interval of one measure at one cutoff k (nDCG@10, P@10, "
                                "AP@10, ...), not of nDCG@5, nDCG@10: give one cutoff (--cutoff 10) or one measure "
                                "(--measures P@10)"),
        (["--measures", "Judged@10"], "a worklist narrows the interval of one measure at one cutoff k (nDCG@10, "
                                      "P@10, AP@10, ...), not of Judged@10: give one cutoff (--cutoff 10) or one "
                                      "measure (--measures P@10)"),
    ],
)
def test_worklist_refuses_spec_options_that_cannot_apply(options: list[str], message: str, tmp_path: Path) -> None:
    result = judged("worklist", "--judgments", "x", "--warehouse", tmp_path / "warehouse", *options)
    assert_one_line_error(result, 2, message)
    assert not (tmp_path / "warehouse").exists()


def test_an_option_conflict_is_a_usage_error() -> None:
    """The judging loop's conflicting options raise a UsageError (an InputError still, for the Python API), which the
    command line exits with 2; other input errors exit 1."""
    from judged.flows.pipeline.judging import chosen_runs

    with pytest.raises(UsageError, match="give --evaluations or --runs, not both"):
        chosen_runs(None, ["an-evaluation"], ["a-run"])  # type: ignore[arg-type]  (refused before it is read)
    assert failure(UsageError("--runs", "conflict")).exit_code == 2
    assert failure(SpecError("bad value")).exit_code == 2
    assert failure(InputError("file.txt", "bad line", 3)).exit_code == 1


# -- no bare traceback -----------------------------------------------------------------------------------------------


def broken_tables(*args: object, **kwargs: object) -> None:
    raise ZeroDivisionError("float division by zero")


def test_an_unexpected_exception_is_one_line_naming_the_command_and_its_log(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr("judged.flows.report.text.print_tables", broken_tables)
    result = judged("evaluate", SEED_QRELS, SEED_RUN, env={"JUDGED_LOG_DIR": str(tmp_path), "JUDGED_DEBUG": None})
    (log,) = tmp_path.iterdir()
    assert_one_line_error(
        result, EXIT_UNEXPECTED,
        f"evaluate failed unexpectedly: ZeroDivisionError: float division by zero; the traceback is in {log} "
        "(--debug or JUDGED_DEBUG=1 prints it instead)",
    )
    assert log.name.startswith("evaluate-")
    text = log.read_text()
    assert text.startswith("judged evaluate, ") and "Traceback" in text and "broken_tables" in text


@pytest.mark.parametrize("debug", [["--debug"], []])
def test_debug_prints_the_traceback_instead(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, debug: list[str]) -> None:
    monkeypatch.setattr("judged.flows.report.text.print_tables", broken_tables)
    environment = {"JUDGED_LOG_DIR": str(tmp_path), "JUDGED_DEBUG": None if debug else "1"}
    result = judged(*debug, "evaluate", SEED_QRELS, SEED_RUN, env=environment)
    assert result.exit_code == EXIT_UNEXPECTED
    assert "Traceback" in result.stderr and "broken_tables" in result.stderr
    assert result.stderr.splitlines()[-1] == ("judged: error: evaluate failed unexpectedly: ZeroDivisionError: float "
                                              "division by zero")
    assert not list(tmp_path.iterdir())


def test_a_subcommand_of_a_group_is_named_in_full(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def broken() -> str:
        raise KeyError("mode")

    monkeypatch.setattr("judged.flows.pipeline.server.chosen_mode", broken)
    result = judged("server", "status", env={"JUDGED_LOG_DIR": str(tmp_path)})
    assert result.exit_code == EXIT_UNEXPECTED
    assert result.stderr.startswith("judged: error: server status failed unexpectedly: KeyError: 'mode'; ")
    assert [path.name.startswith("server-status-") for path in tmp_path.iterdir()] == [True]


def test_a_real_process_ends_an_unexpected_exception_with_one_line(tmp_path: Path) -> None:
    script = (
        "import sys\nimport judged.flows.report.text as text\n"
        "def broken(*args, **kwargs):\n    raise RuntimeError('first line\\nsecond line')\n"
        "text.print_tables = broken\n"
        "from judged.flows.cli import main\n"
        "sys.argv = ['judged', 'evaluate', sys.argv[1], sys.argv[2]]\nmain()\n"
    )
    environment = {"PATH": "/usr/bin:/bin", "JUDGED_LOG_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script, str(SEED_QRELS), str(SEED_RUN)], capture_output=True,
                          text=True, timeout=60, env=environment, cwd=Path(__file__).resolve().parents[2])
    (log,) = tmp_path.iterdir()
    assert done.returncode == EXIT_UNEXPECTED
    assert done.stdout == ""
    assert done.stderr == (f"judged: error: evaluate failed unexpectedly: RuntimeError: first line ...; the "
                           f"traceback is in {log} (--debug or JUDGED_DEBUG=1 prints it instead)\n")
    assert "second line" in log.read_text()


def test_the_command_modules_import_the_shared_module_and_never_each_other() -> None:
    import ast

    folder = Path(__file__).resolve().parents[2] / "flows" / "cli"
    commands = {"app", "compare"}
    for name in commands:
        tree = ast.parse((folder / f"{name}.py").read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        assert "judged.flows.cli.common" in imported, name
        assert not {f"judged.flows.cli.{other}" for other in commands - {name}} & imported, name
