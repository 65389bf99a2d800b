"""Measure names (schemas.measures): parsing, canonical names, trec_eval names, and their place in the spec."""

from __future__ import annotations

import pytest

from judged.schemas.measures import (
    AP, NDCG, RBP, RR, Judged, MeasureError, Precision, binary_grades, parse_measures, trec_eval_names,
)
from judged.schemas.spec import PRESETS, EvaluationSpec, SpecError, build_spec


@pytest.mark.parametrize(
    ("text", "canonical", "trec_eval"),
    [
        ("nDCG@10", "nDCG@10", "ndcg_cut_10"),
        ("nDCG", "nDCG", "ndcg"),
        ("AP", "AP", "map"),
        ("MAP@100", "AP@100", "map_cut_100"),
        ("RR", "RR", "recip_rank"),
        ("RR@10", "RR@10", None),  # trec_eval needs -M 10 for it, which cuts every other measure too
        ("P@5", "P@5", "P_5"),
        ("R@100", "R@100", "recall_100"),
        ("Rprec", "R-Prec", "Rprec"),
        ("R-Prec", "R-Prec", "Rprec"),
        ("Judged@10", "Judged@10", None),
        ("Judged(convention=trec_eval)@10", "Judged(convention=trec_eval)@10", None),
        # trec_eval's rbp takes graded gains: RBP's name depends on the judgments (test_rbp_names)
        ("RBP(p=0.9)", "RBP(p=0.9)", None),
        ("RBP", "RBP(p=0.8)", None),  # p is always shown: ir_measures' default 0.8 is not trec_eval's 0.9
        ("P(rel=2)@5", "P(rel=2)@5", "P_5"),  # what trec_eval -l 2 prints as P_5
        (" AP@all ", "AP", "map"),
    ],
)
def test_names(text: str, canonical: str, trec_eval: str | None) -> None:
    (measure,) = parse_measures([text])
    assert measure.canonical == canonical
    assert measure.trec_eval_name() == trec_eval
    assert parse_measures([canonical]) == (measure,)


@pytest.mark.parametrize(
    ("text", "binary", "name", "residual"),
    [
        ("RBP(p=0.9)", True, "rbp", "rbp_resid"),  # trec_eval's bare rbp is p = 0.9
        ("RBP(p=0.8)", True, "rbp_p=0.8", None),  # -m rbp.p=0.8; rbp_resid takes no p (always 0.9)
        ("RBP(p=0.9)", False, None, None),  # graded judgments: trec_eval's rbp uses graded gains
        ("RBP(p=0.9)", None, None, None),  # grades not known
        ("RBP(p=0.9,rel=2)", True, None, None),  # trec_eval's rbp ignores -l
    ],
)
def test_rbp_names(text: str, binary: bool | None, name: str | None, residual: str | None) -> None:
    (measure,) = parse_measures([text])
    assert measure.trec_eval_name(binary) == name
    assert measure.trec_eval_residual_name(binary) == residual


def test_a_name_prints_one_number_per_output() -> None:
    # AP and AP(rel=2) are both trec_eval's map (under -l 1 and -l 2): the second keeps our label.
    measures = parse_measures("AP,AP(rel=2),P@5,P(rel=2)@5,RBP(p=0.9),RBP(p=0.8)")
    assert trec_eval_names(measures, binary_judgments=True) == ("map", None, "P_5", None, "rbp", "rbp_p=0.8")
    assert trec_eval_names(measures[1:2]) == ("map",)
    assert binary_grades((0, 1)) is True and binary_grades((0, 1, 2)) is False and binary_grades(None) is None
    assert binary_grades((-1, 0, 1)) is False  # trec_eval rescales its gains when a grade is negative


@pytest.mark.parametrize(
    ("text", "names"),
    [
        # trec_eval -l 2 prints map; P_10 is -l 1's: P@10 keeps its label
        ("AP(rel=2),P@10", ("map", None)),
        # nDCG's and RBP's numbers do not depend on -l: they join the invocation of the first binary measure
        ("nDCG@10,P(rel=2)@5,AP,P@5,RBP(p=0.9),R(rel=2)@5", ("ndcg_cut_10", "P_5", None, None, "rbp", "recall_5")),
        # a measure without a trec_eval name fixes no invocation
        ("RR(rel=3)@10,AP(rel=2),RR(rel=2)", (None, "map", "recip_rank")),
        ("nDCG@10,nDCG", ("ndcg_cut_10", "ndcg")),
    ],
)
def test_trec_eval_names_go_to_the_measures_of_one_invocation(text: str, names: tuple[str | None, ...]) -> None:
    assert trec_eval_names(parse_measures(text), binary_judgments=True) == names


def test_a_comma_inside_parentheses_belongs_to_the_parameters() -> None:
    assert parse_measures("nDCG@10,RBP(p=0.9,rel=2),AP") == (NDCG(cutoff=10), RBP(p=0.9, rel=2), AP())


def test_declared_defaults() -> None:
    assert RR().rel == 1 and RBP().p == 0.8 and Judged(cutoff=10).convention == "ir_measures"
    assert Precision(cutoff=5).rows_needed() == 5
    assert AP().rows_needed() is None and RBP().rows_needed() is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("MRR@x", "measure 'MRR@x': cutoff 'x' is not a positive integer"),
        ("Foo@10", "unknown measure 'Foo': give NAME, NAME@k or NAME(param=value,...)@k, NAME one of nDCG, AP, RR, P, "
                   "R, R-Prec, Judged, RBP, or trec_eval's name of one (ndcg, ndcg_cut_k, map, map_cut_k, recip_rank, "
                   "P_k, recall_k, Rprec)"),
        ("P", "measure 'P': P needs a cutoff, e.g. P@10"),
        ("Rprec@10", "measure 'Rprec@10': R-Prec takes no cutoff"),
        ("RBP(p=1)", "measure 'RBP(p=1)': p: Input should be less than 1"),
        ("AP(rel=0)", "measure 'AP(rel=0)': rel: Input should be greater than 0"),
        ("AP(k=3)", "measure 'AP(k=3)': k: Extra inputs are not permitted"),
        ("AP(rel)", "measure 'AP(rel)': parameter 'rel' is not NAME=VALUE"),
        ("nDCG@10,nDCG@10", "measure nDCG@10 is given twice"),
        ("", "no measure given; use e.g. nDCG@10,AP,RR@10"),
    ],
)
def test_bad_names_are_one_line_errors(text: str, message: str) -> None:
    with pytest.raises(MeasureError) as caught:
        parse_measures(text)
    assert str(caught.value) == message


def test_spec_with_measures_round_trips_and_takes_their_cutoffs() -> None:
    spec = build_spec("trec_eval", measures="nDCG@10,AP,RR@10,P@5")
    assert spec.cutoffs == (5, 10, None)
    assert [m.canonical for m in spec.measure_list()] == ["nDCG@10", "AP", "RR@10", "P@5"]
    assert EvaluationSpec.from_canonical_json(spec.canonical_json()) == spec
    assert spec.spec_hash != PRESETS["trec_eval"].spec_hash
    assert spec.full_label() == "nDCG@10,AP,RR@10,P@5[trec_eval:gain=linear]"
    assert [spec.measure_trec_eval_name(m) for m in spec.measure_list()] == ["ndcg_cut_10", "map", None, "P_5"]


def test_default_spec_lists_ndcg_at_its_cutoffs_and_keeps_its_json() -> None:
    spec = PRESETS["judged"].with_options(cutoffs=(5, None))
    assert spec.measure_list() == (NDCG(cutoff=5), NDCG())
    assert '"measures"' not in spec.canonical_json()


def test_measures_and_their_cutoffs_never_disagree() -> None:
    spec = build_spec("judged", measures=["AP@100"])
    with pytest.raises(SpecError, match="the cutoffs come from the declared measures"):
        spec.with_options(cutoffs=(5,))
    with pytest.raises(SpecError, match="give the cutoffs inside the measures"):
        build_spec("judged", measures="AP", cutoffs=(5,))


def test_average_ties_are_ndcg_only() -> None:
    with pytest.raises(SpecError, match="ties 'average' .* is defined for nDCG only"):
        build_spec("sklearn", measures="nDCG@10,P@10")
    assert build_spec("sklearn", measures="nDCG@10").ties == "average"


# trec_eval's printed names (issue 38): each is the measure whose number trec_eval prints under it (-l 1).
TREC_EVAL_NAMES = {
    "ndcg_cut_10": "nDCG@10", "ndcg": "nDCG", "P_5": "P@5", "map": "AP", "map_cut_10": "AP@10", "map_cut_7": "AP@7",
    "recip_rank": "RR", "recall_100": "R@100", "Rprec": "R-Prec",
}


@pytest.mark.parametrize(("name", "canonical"), TREC_EVAL_NAMES.items())
def test_a_trec_eval_name_is_the_measure_trec_eval_prints_under_it(name: str, canonical: str) -> None:
    spec = build_spec("trec_eval", measures=f"{name},AP(rel=2)")
    (measure, _) = spec.measure_list()
    assert measure.canonical == canonical
    assert spec.measure_trec_eval_name(measure) == name  # and it prints under that name again
    assert build_spec("trec_eval9", measures=name).measure_list()[0] == measure


def test_the_names_come_from_the_declarations() -> None:
    from judged.schemas.measures import MEASURES, trec_eval_meaning

    for model in MEASURES.values():
        if model.trec_eval_base and not model.cutoff_required:
            meaning = trec_eval_meaning(model.trec_eval_base)
            assert meaning is not None and type(meaning.measure) is model
        if model.trec_eval_cut:
            meaning = trec_eval_meaning(model.trec_eval_cut.format(k=25))
            assert meaning is not None and meaning.measure == model(cutoff=25)


@pytest.mark.parametrize(("preset", "options", "name", "message"), [
    ("judged", {}, "ndcg_cut_10",
     "measure 'ndcg_cut_10' is trec_eval's name for nDCG@10[trec_eval:gain=linear], and this spec's method is another "
     "(--preset judged: no_relevant=null): give --preset trec_eval (or trec_eval9) without options that change its "
     "method, or nDCG@10 for this method's number"),
    ("trec_eval", {"ties": "docid_asc"}, "P_5",
     "measure 'P_5' is trec_eval's name for P@5[trec_eval:gain=linear], and this spec's method is another "
     "(ties=docid_asc): give --preset trec_eval (or trec_eval9) without options that change its method, or P@5 for "
     "this method's number"),
])
def test_a_trec_eval_name_under_another_method_is_refused_naming_ours(
    preset: str, options: dict, name: str, message: str
) -> None:
    with pytest.raises(SpecError) as caught:
        build_spec(preset, measures=f"AP,{name}", **options)
    assert str(caught.value) == message


@pytest.mark.parametrize(("name", "message"), [
    ("rbp_p=0.8", "measure 'rbp_p=0.8' is trec_eval's RBP with graded gains (each grade scaled into [0, 1]); "
                  "RBP(p=0.8) is binary (grade >= rel), the same number on judgments graded 0 and 1 only: give "
                  "RBP(p=0.8)"),
    ("rbp", "measure 'rbp' is trec_eval's RBP with graded gains (each grade scaled into [0, 1]); RBP(p=0.9) is binary "
            "(grade >= rel), the same number on judgments graded 0 and 1 only: give RBP(p=0.9)"),
    ("unj_10", "measure 'unj_10' is trec_eval's unjudged share, 1 - Judged(convention=trec_eval)@10: give "
               "Judged(convention=trec_eval)@10"),
])
def test_a_trec_eval_name_of_another_number_is_refused_naming_ours(name: str, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        build_spec("trec_eval", measures=name)
    assert str(caught.value) == message
