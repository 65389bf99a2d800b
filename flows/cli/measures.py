"""The `judged measures [NAME]` command (registered on the `judged` application of flows/cli/app.py): each measure's
declaration, as `trec_eval -h -m NAME` prints one.

Belongs here: turning what `schemas/measures.py` declares of a measure (its parameters with their defaults and
descriptions, its cutoff, its trec_eval names, its value without relevant judgments and when the run misses a
query) and its module's docstring under `transforms/measures/` (formula and citation) into text. No text about a
measure of its own: what is printed is read from those two places.
"""

from __future__ import annotations

import sys
import textwrap
from typing import Annotated, Any, Literal, get_args, get_origin

import typer

from judged.flows.cli.common import EXIT_USAGE, app, fail
from judged.schemas.measures import ALIASES, MEASURES, MeasureBase, trec_eval_meaning, trec_eval_name_forms

# The width of the declaration's own lines (the docstring's lines are printed as written).
WIDTH = 116
# The measure module's paragraph on where code goes, which says nothing about the measure.
_CODE_PARAGRAPH = "Belongs here:"


@app.command()
def measures(
    name: Annotated[str | None, typer.Argument(
        help=f"A measure ({', '.join(MEASURES)}; or {', '.join(ALIASES)}; or trec_eval's name of one: "
             f"{', '.join(trec_eval_name_forms())}): print its declaration, formula and citation. Without it, one "
             "line per measure.", metavar="NAME", show_default=False)] = None,
) -> None:
    """Print a measure's declaration (as `trec_eval -h -m NAME`): parameters with defaults, formula, citation, its
    trec_eval name and the flags that print it, and what a query without relevant judgments gets."""
    if name is None:
        width = max(len(measure) for measure in MEASURES)
        for measure in MEASURES:
            print(f"{measure:<{width}}  {summary_line(measure)}")
        return
    canonical = ALIASES.get(name, name)
    meaning = trec_eval_meaning(name) if canonical not in MEASURES else None
    if meaning is not None:
        if meaning.differs is None:
            print(f"{name}: trec_eval's name for {meaning.measure.canonical} computed as trec_eval does (--preset "
                  "trec_eval or trec_eval9)\n")
        else:
            print(f"{name}: {meaning.differs}\n")
        canonical = meaning.measure.name
    if canonical not in MEASURES:
        raise fail(f"unknown measure {name!r}; choose one of {', '.join(MEASURES)}, or trec_eval's name of one "
                   f"({', '.join(trec_eval_name_forms())})", EXIT_USAGE)
    sys.stdout.write(declaration(canonical))


def module_docstring(name: str) -> str:
    """The docstring of the module that computes the measure (`transforms/measures/`), without its paragraph on
    where code goes."""
    from judged.transforms.measures import COMPUTATIONS

    module = sys.modules[COMPUTATIONS[name].__module__]
    paragraphs = (module.__doc__ or "").strip().split("\n\n")
    return "\n\n".join(p for p in paragraphs if not p.startswith(_CODE_PARAGRAPH))


def summary_line(name: str) -> str:
    return module_docstring(name).splitlines()[0]


def declaration(name: str) -> str:
    """The whole text `judged measures NAME` prints, NAME a canonical name (a key of `MEASURES`)."""
    model = MEASURES[name]
    aliases = [alias for alias, canonical in ALIASES.items() if canonical == name]
    default = model(cutoff=1) if model.cutoff_required else model()
    lines = [name + (f" (also {', '.join(aliases)})" if aliases else ""), ""]
    lines += ["  " + line if line else "" for line in module_docstring(name).splitlines()]
    lines += ["", "Parameters, as NAME(parameter=value,...)@k:"]
    if vars(model).get("__doc__"):
        lines += _wrapped(f"declared: {model.__doc__}")
    lines += _wrapped(f"@k: {cutoff_text(model)}")
    for parameter, field in model.model_fields.items():
        if parameter not in ("measure", "cutoff"):
            described = f": {field.description}" if field.description else ""
            lines += _wrapped(f"{parameter} = {default_text(field.default)} "
                              f"{allowed_text(field.annotation, field.metadata)}{described}")
    lines += [""]
    lines += _wrapped(f"trec_eval name: {trec_eval_text(model)}", indent="")
    lines += _wrapped(f"A query without relevant judgments: {no_relevant_text(model)}", indent="")
    lines += _wrapped(f"A judged query the run does not list (query set judged, trec_eval -c), under the default "
                      f"parameters: {missing_text(default.value_if_missing())}", indent="")
    return "\n".join(lines) + "\n"


def _wrapped(text: str, indent: str = "  ") -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent + "    ")


def cutoff_text(model: type[MeasureBase]) -> str:
    if model.cutoff_required:
        return "required: the first k positions"
    if not model.cutoff_allowed:
        return "none: the whole returned list"
    return "optional: the first k positions (without it, the whole returned list)"


def default_text(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def allowed_text(annotation: Any, metadata: list[Any]) -> str:
    """What values a parameter takes: its choices, or its type and bounds."""
    if get_origin(annotation) is Literal:
        return "(" + " | ".join(str(choice) for choice in get_args(annotation)) + ")"
    bounds = [f"> {item.gt}" for item in metadata if getattr(item, "gt", None) is not None]
    bounds += [f"< {item.lt}" for item in metadata if getattr(item, "lt", None) is not None]
    kind = {"int": "integer", "float": "number"}.get(getattr(annotation, "__name__", ""), str(annotation))
    return f"({kind}{' ' + ', '.join(bounds) if bounds else ''})"


def trec_eval_text(model: type[MeasureBase]) -> str:
    names = []
    if model.trec_eval_base is not None:
        names.append(f"{model.trec_eval_base} (the whole list)")
    if model.trec_eval_cut is not None:
        names.append(f"{model.trec_eval_cut.format(k='k')} (at k)")
    if not names:
        return "none prints exactly this number"
    return (", ".join(names) + ", under the trec_eval preset's method and trec_eval -c (-M M for --depth M, -J for "
            "--unjudged condensed, and a parameter's flag as it says above)")


def no_relevant_text(model: type[MeasureBase]) -> str:
    if model.undefined_without_relevant:
        return "undefined (null; 0 under --no-relevant zero, as trec_eval prints it)"
    return "defined: the formula's value (it does not divide by the relevant documents)"


def missing_text(value: float | None) -> str:
    return "null" if value is None else f"{value:g}"
