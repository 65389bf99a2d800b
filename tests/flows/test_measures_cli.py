"""`judged measures [NAME]`: one line per measure, or one measure's declaration (parameters with defaults, trec_eval
names, what a query without relevant judgments gets) with its module's docstring (formula and citation) as written;
an unknown name is one error line and exit 2."""

from __future__ import annotations

import sys

import pytest

from judged.schemas.measures import ALIASES, MEASURES
from judged.transforms.measures import COMPUTATIONS
from tests.flows.test_cli import assert_one_line_error, judged


def docstring(name: str) -> str:
    return sys.modules[COMPUTATIONS[name].__module__].__doc__ or ""


def test_without_a_name_one_line_per_measure() -> None:
    result = judged("measures")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(MEASURES)
    for line, name in zip(lines, MEASURES, strict=True):
        assert line.endswith(docstring(name).strip().splitlines()[0])


@pytest.mark.parametrize("name", list(MEASURES))
def test_a_measure_s_declaration_and_its_module_s_text(name: str) -> None:
    result = judged("measures", name)
    assert result.exit_code == 0, result.output
    text = result.stdout
    model = MEASURES[name]
    assert text.startswith(name)
    # The formula and citation, as the module's docstring has them (indented), and never its note on the code.
    paragraphs = docstring(name).strip().split("\n\n")
    for paragraph in paragraphs:
        indented = "\n".join("  " + line for line in paragraph.splitlines())
        assert (indented in text) != paragraph.startswith("Belongs here:"), paragraph
    # Every parameter with its default and description.
    for parameter, field in model.model_fields.items():
        if parameter not in ("measure", "cutoff"):
            assert f"  {parameter} = {field.default}" in text
            assert field.description.split()[0] in text
    # trec_eval's names, and what a query without relevant judgments gets.
    for pattern in (model.trec_eval_base, model.trec_eval_cut):
        if pattern is not None:
            assert f"{pattern.format(k='k')} (" in text
    if model.trec_eval_base is None and model.trec_eval_cut is None:
        assert "trec_eval name: none" in text
    expected = "undefined (null" if model.undefined_without_relevant else "defined: the formula's value"
    assert f"A query without relevant judgments: {expected}" in text
    default = model(cutoff=1) if model.cutoff_required else model()
    missing = default.value_if_missing()
    assert text.rstrip().endswith("null" if missing is None else f"{missing:g}")


@pytest.mark.parametrize("alias", list(ALIASES))
def test_an_alias_names_its_measure(alias: str) -> None:
    result = judged("measures", alias)
    assert result.exit_code == 0
    assert result.stdout == judged("measures", ALIASES[alias]).stdout


@pytest.mark.parametrize("name", ["nope", "nDCG@10", ""])
def test_an_unknown_name_is_one_line_and_exit_2(name: str) -> None:
    assert_one_line_error(judged("measures", name), 2,
                 f"unknown measure {name!r}; choose one of nDCG, AP, RR, P, R, R-Prec, Judged, RBP, or trec_eval's "
                 "name of one (ndcg, ndcg_cut_k, map, map_cut_k, recip_rank, P_k, recall_k, Rprec)")


@pytest.mark.parametrize(("name", "canonical"), [("map", "AP"), ("ndcg_cut_10", "nDCG"), ("P_5", "P")])
def test_a_trec_eval_name_prints_its_measure(name: str, canonical: str) -> None:
    result = judged("measures", name)
    assert result.exit_code == 0
    first, blank, rest = result.stdout.partition("\n\n")
    assert first.startswith(f"{name}: trec_eval's name for ")
    assert rest == judged("measures", canonical).stdout


def test_evaluate_takes_trec_eval_names_under_its_method_and_refuses_them_under_another() -> None:
    from tests.flows.test_cli import SEED_QRELS, SEED_RUN

    names = judged("evaluate", SEED_QRELS, SEED_RUN, "--preset", "trec_eval", "--measures",
                   "ndcg_cut_2,P_1,map,recip_rank,recall_3,Rprec,map_cut_2", "--format", "trec")
    ours = judged("evaluate", SEED_QRELS, SEED_RUN, "--preset", "trec_eval", "--measures",
                  "nDCG@2,P@1,AP,RR,R@3,R-Prec,AP@2", "--format", "trec")
    assert names.exit_code == 0, names.output
    assert names.stdout == ours.stdout
    assert sorted(line.split("\t")[0] for line in names.stdout.splitlines()
                  if "\tall\t" in line and not line.startswith(("runid", "num_q"))) == sorted([
        "ndcg_cut_2", "P_1", "map", "recip_rank", "recall_3", "Rprec", "map_cut_2"])
    assert_one_line_error(
        judged("evaluate", SEED_QRELS, SEED_RUN, "--measures", "P_1,ndcg_cut_2"), 2,
        "measure 'P_1' is trec_eval's name for P@1[trec_eval:gain=linear], and this spec's method is another "
        "(--preset judged: no_relevant=null): give --preset trec_eval (or trec_eval9) without options that change "
        "its method, or P@1 for this method's number")
