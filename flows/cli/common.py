"""What the `judged` command modules share: the application, exit codes, one-line failures, help panels, the
spec options, and the guard that turns an unexpected exception into one line and a log.

Belongs here: anything more than one command module uses. The command modules (app.py, compare.py) import this
module and never each other. It loads neither Polars nor Prefect: `judged --help` must stay quick.

The spec options are derived from `EvaluationSpec`'s fields: `SPEC_OPTIONS` gives each option its field, name,
parser and text form, and its help is the field's description. `with_spec_options` adds them all to a command.
"""

from __future__ import annotations

import functools
import inspect
import math
import os
import sys
import tempfile
import traceback
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from typer.core import TyperGroup

from judged.schemas.spec import (
    PRESETS,
    EvaluationSpec,
    NumericRange,
    SpecError,
    build_spec,
    parse_cutoffs,
    parse_gain_map,
    parse_positive_int,
)
from judged.transforms.errors import InputError, UsageError

EXIT_INPUT = 1  # a bad input (a malformed file, an unknown id)
EXIT_USAGE = 2  # a bad option value, options that conflict or cannot apply
EXIT_NOT_RUNNING = 3  # `judged server status` when no local server runs (an init script's `status`)
EXIT_UNEXPECTED = 70  # sysexits' EX_SOFTWARE: judged itself failed (the traceback is in a log)

SPEC_PANEL = "Spec options (override the preset)"

DEBUG_VARIABLE = "JUDGED_DEBUG"
LOG_FOLDER_VARIABLE = "JUDGED_LOG_DIR"


def fail(message: str, code: int) -> typer.Exit:
    """Print `judged: error: <message>` on stderr; the caller raises the returned Exit."""
    print(f"judged: error: {message}", file=sys.stderr)
    return typer.Exit(code)


def failure(error: InputError | SpecError, order_hint: bool = True) -> typer.Exit:
    """`fail` for an expected error, with its exit code: a bad input exits 1, a bad option (value, conflict) 2.
    Without `order_hint` (a command that takes no QRELS RUN arguments), a file that looks like the other kind is
    said to, but not that the order is QRELS RUN."""
    if not order_hint and isinstance(error, InputError):
        from judged.transforms.parse import without_order_hint

        error = without_order_hint(error)
    return fail(str(error), EXIT_USAGE if isinstance(error, SpecError | UsageError) else EXIT_INPUT)


# Naming the assessors of judgment files (`ingest-judgments`, `agreement`): flows/store/assessor_files.py.
AssessorOption = Annotated[list[str] | None, typer.Option(
    "--assessor", metavar="NAME",
    help="The assessor of each TREC qrels file, once per file in the order of the files: the files are then one "
         "judgment set whose rows name their assessor. (A Parquet table names them in an `assessor` column.)")]
AssessorKindOption = Annotated[list[str] | None, typer.Option(
    "--assessor-kind", metavar="NAME=KIND",
    help="An assessor's kind: human, model:<name> (a model that judged) or adjudicator. Repeatable; replaces the "
         "kind the sidecar's assessors table gives the same assessor.")]


def require_readable_warehouse(warehouse: Path) -> None:
    """One line and an exit unless `warehouse` is a warehouse folder this user can read (for `sql`, `show` and
    `agreement`, which create nothing): a file or an unreadable place is a bad option value (exit 2); a missing
    folder or one without a catalog is no warehouse (exit 1)."""
    from judged.flows.store.warehouse import CATALOG

    if warehouse.exists() and not warehouse.is_dir():
        raise fail(f"{warehouse}: --warehouse must be a folder, and this is a file", EXIT_USAGE)
    if not warehouse.exists():
        missing = warehouse
        while not missing.parent.exists() and missing.parent != missing:
            missing = missing.parent
        if missing.parent.exists() and not missing.parent.is_dir():
            raise fail(f"{warehouse}: --warehouse cannot be a folder here ({missing.parent} is a file)", EXIT_USAGE)
        if missing.parent.exists() and not os.access(missing.parent, os.R_OK | os.X_OK):
            raise fail(f"{warehouse}: --warehouse cannot be read here ({missing.parent} is not readable)",
                       EXIT_USAGE)
        raise fail(f"{warehouse}: no such folder: --warehouse names a warehouse (ingest or evaluate something "
                   "into it first)", EXIT_INPUT)
    if not os.access(warehouse, os.R_OK | os.X_OK):
        raise fail(f"{warehouse}: --warehouse cannot be read here (no read permission)", EXIT_USAGE)
    if not (warehouse / CATALOG).is_file():
        raise fail(f"{warehouse}: not a judged warehouse (no catalog, {CATALOG}): point --warehouse at one, or "
                   "ingest or evaluate something into it first", EXIT_INPUT)


# -- unexpected exceptions -----------------------------------------------------------------------------------------


def error_log_folder() -> Path:
    """Where a command's unexpected traceback goes: JUDGED_LOG_DIR, else one folder per user in the temp folder."""
    configured = os.environ.get(LOG_FOLDER_VARIABLE)
    if configured:
        return Path(configured)
    user = os.getuid() if hasattr(os, "getuid") else os.getlogin()
    return Path(tempfile.gettempdir()) / f"judged-{user}"


def _debugging(context: typer.Context) -> bool:
    if DEBUG_VARIABLE in context.meta:
        return bool(context.meta[DEBUG_VARIABLE])
    return os.environ.get(DEBUG_VARIABLE, "").lower() in ("1", "true", "yes", "on")


def _unexpected(error: Exception, command: str, debug: bool) -> typer.Exit:
    """One line naming the command, the error and where its traceback went (or, debugging, the traceback)."""
    lines = [line for line in str(error).splitlines() if line.strip()]
    summary = type(error).__name__ + (f": {lines[0].strip()}" if lines else "") + (" ..." if len(lines) > 1 else "")
    if debug:
        traceback.print_exception(error, file=sys.stderr)
        return fail(f"{command} failed unexpectedly: {summary}", EXIT_UNEXPECTED)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    try:
        folder = error_log_folder()
        folder.mkdir(parents=True, exist_ok=True)
        log = folder / f"{command.replace(' ', '-')}-{stamp}-{os.getpid()}.log"
        with log.open("w", encoding="utf-8") as file:
            print(f"judged {command}, {stamp}, process {os.getpid()}", file=file)
            traceback.print_exception(error, file=file)
        where = f"the traceback is in {log}"
    except OSError as problem:
        where = f"its traceback could not be written ({problem.strerror or problem})"
    return fail(f"{command} failed unexpectedly: {summary}; {where} (--debug or {DEBUG_VARIABLE}=1 prints it "
                "instead)", EXIT_UNEXPECTED)


class GuardedGroup(TyperGroup):
    """A command group whose commands never end in a bare traceback: an expected error that no command caught is
    its one line and exit code, anything else one line naming the command and the log of its traceback."""

    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (typer.TyperException, typer.Exit, typer.Abort):  # usage errors, exits and ^C: typer's to print
            raise
        except (InputError, SpecError) as error:
            raise failure(error) from None
        except BrokenPipeError:  # the reader of the output went away (`judged sql ... | head`): typer exits quietly
            raise
        except Exception as error:
            command = " ".join([*ctx.command_path.split()[1:], ctx.invoked_subcommand or ""]).strip() or "judged"
            raise _unexpected(error, command, _debugging(ctx)) from None


# -- the application --------------------------------------------------------------------------------------------------

app = typer.Typer(
    name="judged",
    help="Evaluate search runs with NDCG against relevance judgments, every choice declared.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=GuardedGroup,
)

# Taken by every command that writes a file the user names (`--out` of report and worklist).
ForceOption = Annotated[bool, typer.Option("--force", help="Replace the --out file when it exists already.")]


def _print_version(asked: bool) -> None:
    if asked:
        from judged.flows.engine.versions import implementation_version

        print(f"judged {implementation_version()}")
        raise typer.Exit()


@app.callback()
def _root(
    context: typer.Context,
    version: Annotated[
        bool, typer.Option("--version", is_eager=True, callback=_print_version, help="Print judged's version and exit.")
    ] = False,
    debug: Annotated[
        bool, typer.Option("--debug", envvar=DEBUG_VARIABLE, help="On an unexpected failure, print the traceback "
                                                                  "instead of writing it to a log.")
    ] = False,
) -> None:
    """Evaluate search runs with NDCG against relevance judgments, every choice declared."""
    context.meta[DEBUG_VARIABLE] = debug
    quiet_prefect(serving=context.invoked_subcommand == "serve")


def quiet_prefect(serving: bool = False) -> None:
    """Prefect's defaults for a command line, set before Prefect is imported: no telemetry, a patient ephemeral
    server start, and no task tracebacks on the console (errors still reach the Prefect API's logs; the command
    prints its own one-line error). What flows and tasks log at INFO still reaches the Prefect API, so the UI shows
    every run's logs: their loggers get their own level instead of inheriting PREFECT_LOGGING_LEVEL's. `serve` is
    the exception on the console: its terminal is the operator's view of the runs it starts (and their
    processes, which inherit this environment), so it prints their INFO lines and outcomes."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_LOGGING_LOGGERS_PREFECT_FLOW_RUNS_LEVEL", "INFO")
    os.environ.setdefault("PREFECT_LOGGING_LOGGERS_PREFECT_TASK_RUNS_LEVEL", "INFO")
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "INFO" if serving else "CRITICAL")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")


def orchestrated(doing: str) -> AbstractContextManager[None]:
    """Around a command's flow calls: the Prefect API chosen (flows/pipeline/server.py: a configured one, judged's
    local server, or Prefect's temporary one), and `doing` with the flow's steps shown while it runs."""
    from judged.flows.pipeline.progress import Feedback
    from judged.flows.pipeline.server import orchestration

    return orchestration(Feedback(), doing)


def require_prefect_api() -> None:
    """Exit 1 with one line, before anything is created, when PREFECT_API_URL is set in the environment and no
    Prefect API answers there (one set in a profile is checked when the flow starts: flows/pipeline/server.py)."""
    from judged.flows.pipeline.server import require_reachable_api

    try:
        require_reachable_api(os.environ.get("PREFECT_API_URL"))
    except InputError as error:
        raise fail(str(error), EXIT_INPUT) from None


def given_on_command_line(context: typer.Context, *names: str) -> list[str]:
    """The options among `names` (parameter names) that the command line or the environment gave, as flags."""
    sources = {name: context.get_parameter_source(name) for name in names}
    given = [name for name, source in sources.items() if source is not None and source.name in ("COMMANDLINE",
                                                                                                  "ENVIRONMENT")]
    return ["--" + name.replace("_", "-") for name in given]


# -- the spec options -----------------------------------------------------------------------------------------------


def read_weights(path: Path) -> tuple[tuple[str, float], ...]:
    """A query weights file: `query_id weight` lines, read by the TREC files' grammar (transforms/trec_grammar.py:
    blank and comment lines skipped, fields split as there, so a query id is the same text as in them); errors are
    InputErrors."""
    from judged.flows.store.readers import QUERY_WEIGHTS_BYTES, read_bounded_text
    from judged.transforms.trec_grammar import BYTE_ORDER_MARK, fields_of_line

    try:
        text = read_bounded_text(path, "query weights file", QUERY_WEIGHTS_BYTES)
    except OSError as error:
        raise InputError(str(path), f"cannot read the query weights: {error.strerror or error}") from None
    pairs = []
    for number, line in enumerate(text.removeprefix(BYTE_ORDER_MARK).split("\n"), start=1):
        parts = fields_of_line(line)
        if not parts:
            continue
        try:
            if len(parts) != 2:
                raise ValueError
            weight = float(parts[1])
            if not math.isfinite(weight):
                raise ValueError
            pairs.append((parts[0], weight))
        except ValueError:
            raise InputError(str(path), "expected `query_id weight`", number) from None
    return tuple(pairs)


def ranged_option(field: str, flag: str) -> Callable[[str], Any]:
    """The parser of an option that sets a numeric field of `EvaluationSpec`, in the range the field declares."""
    declared = NumericRange.of(EvaluationSpec, field)
    return lambda text: declared.parse(text, flag)


def range_form(field: str) -> str:
    """The help's words for a numeric field's declared range."""
    return NumericRange.of(EvaluationSpec, field).describe().capitalize() + "."


def _text(value: str) -> str:
    return value


@dataclass(frozen=True)
class SpecOption:
    """One command-line option that sets a field of `EvaluationSpec`. Its help is the field's description, then
    `form` (how the value is written on the command line) when the description does not say."""

    field: str
    flag: str
    parse: Callable[[Any], Any] = _text  # the option's value -> the field's value (SpecError, InputError)
    form: str = ""
    metavar: str | None = None
    value_type: type = str

    @property
    def parameter(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")

    @property
    def help(self) -> str:
        description = EvaluationSpec.model_fields[self.field].description or ""
        return f"{description} {self.form}".strip()

    def annotation(self) -> Any:
        option = typer.Option(self.flag, help=self.help, metavar=self.metavar, rich_help_panel=SPEC_PANEL)
        return Annotated[self.value_type | None, option]


SPEC_OPTIONS: tuple[SpecOption, ...] = (
    SpecOption("cutoffs", "--cutoffs", parse_cutoffs,
               form="Comma-separated, e.g. 5,10,all. Default: 5,10,15,20,30,100,200,500,1000."),
    SpecOption("measures", "--measures"),
    SpecOption("gain", "--gain", form="Giving --gain-map sets map."),
    SpecOption("gain_map", "--gain-map", parse_gain_map),
    SpecOption("negative_grades", "--negative-grades"),
    SpecOption("ranking", "--ranking"),
    SpecOption("score_precision", "--precision"),
    SpecOption("ties", "--ties"),
    SpecOption("unjudged", "--unjudged"),
    SpecOption("ideal", "--ideal"),
    SpecOption("no_relevant", "--no-relevant"),
    SpecOption("query_set", "--query-set"),
    SpecOption("run_duplicates", "--run-duplicates"),
    SpecOption("judgment_duplicates", "--judgment-duplicates"),
    SpecOption("depth", "--depth", functools.partial(parse_positive_int, what="--depth"), form=range_form("depth"),
               metavar="M"),
    SpecOption("query_weights", "--query-weights", read_weights, form="A file of `query_id weight` lines.",
               value_type=Path),
    SpecOption("interval_width", "--interval-width", ranged_option("interval_width", "--interval-width"),
               form=range_form("interval_width"), metavar="W"),
    SpecOption("assessor_model", "--assessor-model", metavar="MODEL"),
)

# The spec's fields that no option sets, and why.
NOT_OPTIONS: dict[str, str] = {
    "measure": "one value (nDCG); --measures declares other measures",
    "discount": "one value (log2)",
    "aggregation": "follows --query-weights: weighted_mean when they are given",
}


def _preset_help(default: str, repeatable: bool) -> str:
    start = f"Starting point for the spec: {', '.join(PRESETS)}. 'trec_eval' = trec_eval 10 -c."
    return start + (f" Repeatable: one evaluation per preset (default {default})." if repeatable else "")


@dataclass(frozen=True)
class SpecOptions:
    """The spec options of one command line: the presets given (none: the command's default) and each option's
    value as given (None: not given)."""

    presets: tuple[str, ...]
    values: dict[str, Any]  # field -> the option's value
    default_preset: str

    def given(self) -> list[str]:
        """The flags given, `--preset` included."""
        flags = ["--preset"] if self.presets else []
        return flags + [option.flag for option in SPEC_OPTIONS if self.values[option.field] is not None]

    def overrides(self) -> dict[str, Any]:
        """The fields the options set, parsed (SpecError for a bad value, InputError for a bad weights file)."""
        fields = {option.field: option.parse(self.values[option.field])
                  for option in SPEC_OPTIONS if self.values[option.field] is not None}
        if fields.get("query_weights"):
            fields["aggregation"] = "weighted_mean"
        return fields

    def specs(self, **defaults: Any) -> list[EvaluationSpec]:
        """One spec per preset (each with the same overrides); `defaults` are fields set unless an option sets
        them."""
        overrides = {**defaults, **self.overrides()}
        return [build_spec(name, **overrides) for name in self.presets or (self.default_preset,)]

    def spec(self, **defaults: Any) -> EvaluationSpec:
        (spec,) = self.specs(**defaults)
        return spec


Command = TypeVar("Command", bound=Callable[..., Any])


def with_spec_options(preset: str | None = "judged", repeatable: bool = False) -> Callable[[Command], Command]:
    """Give a command `--preset` (the default `preset`, None: `judged`, not shown, for commands whose inputs may
    carry their spec; `repeatable`: one spec per `--preset` given) and every option of SPEC_OPTIONS. The command
    receives them as one `spec_options: SpecOptions` argument, after its own."""
    preset_type = list[str] | None if repeatable else str | None
    preset_parameter = inspect.Parameter(
        "preset", inspect.Parameter.KEYWORD_ONLY, default=None,
        annotation=Annotated[preset_type, typer.Option(help=_preset_help(preset or "judged", repeatable),
                                                       show_default=preset if preset and not repeatable else False,
                                                       rich_help_panel=SPEC_PANEL)],
    )
    option_parameters = [
        inspect.Parameter(option.parameter, inspect.Parameter.KEYWORD_ONLY, default=None,
                          annotation=option.annotation())
        for option in SPEC_OPTIONS
    ]

    def decorate(command: Command) -> Command:
        signature = inspect.signature(command, eval_str=True)
        own = [parameter for parameter in signature.parameters.values() if parameter.name != "spec_options"]
        clash = {p.name for p in own} & {p.name for p in [preset_parameter, *option_parameters]}
        if clash or "spec_options" not in signature.parameters:
            raise TypeError(f"{command.__name__}: spec options need a `spec_options` parameter and no {clash}")

        @functools.wraps(command)
        def with_options(*args: Any, **kwargs: Any) -> Any:
            presets = kwargs.pop("preset")
            values = {option.field: kwargs.pop(option.parameter) for option in SPEC_OPTIONS}
            given = tuple(presets or ()) if repeatable else ((presets,) if presets is not None else ())
            return command(*args, spec_options=SpecOptions(given, values, preset or "judged"), **kwargs)

        parameters = [*own, preset_parameter, *option_parameters]
        with_options.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        with_options.__annotations__ = {p.name: p.annotation for p in parameters}
        return with_options  # type: ignore[return-value]

    return decorate
