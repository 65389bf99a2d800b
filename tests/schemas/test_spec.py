"""The evaluation spec (schemas.spec): a frozen, closed model with a canonical JSON form, a stable hash, a label that
differs whenever the method differs, and the presets SPEC section 2 lists."""

from __future__ import annotations

import hashlib
import itertools
import json
from typing import Any

import polars as pl
import pytest
from pydantic import ValidationError

from judged.schemas.spec import (
    PRESETS,
    TREC_EVAL_CUTOFFS,
    EvaluationSpec,
    SpecError,
    build_spec,
    parse_cutoffs,
    parse_gain_map,
    preset,
)
from judged.transforms.measures.ndcg import grades_outside_gain_map

MAP_2020 = ((0, 0.0), (1, 0.0), (2, 2.0), (3, 3.0))  # TREC DL 2020 official: grade 1 counts as 0
MAP_LINEAR_0_3 = ((0, 0.0), (1, 1.0), (2, 2.0), (3, 3.0))  # the other 2020 summary: grade 1 counts as 1

# Every declared option with each of its alternative values (a change may set two fields that go together).
ALTERNATIVES: dict[str, list[dict[str, Any]]] = {
    "gain": [
        {"gain": "linear", "gain_map": ()},
        {"gain": "exponential", "gain_map": ()},
        {"gain": "map", "gain_map": MAP_2020},
        {"gain": "map", "gain_map": MAP_LINEAR_0_3},
        {"gain": "map", "gain_map": ((0, 0.0), (1, 0.5))},
    ],
    "negative_grades": [{"negative_grades": v} for v in ("zero", "error")],
    "ranking": [{"ranking": v} for v in ("score", "rank")],
    "score_precision": [{"score_precision": v} for v in ("float64", "float32")],
    "ties": [{"ties": v} for v in ("docid_desc", "docid_asc", "average")],
    "unjudged": [{"unjudged": v} for v in ("zero", "condensed")],
    "ideal": [{"ideal": v} for v in ("judged", "retrieved")],
    "no_relevant": [{"no_relevant": v} for v in ("null", "zero")],
    "query_set": [{"query_set": v} for v in ("judged", "both", "judged_strict")],
    "run_duplicates": [{"run_duplicates": v} for v in ("error", "first", "last")],
    "judgment_duplicates": [{"judgment_duplicates": v} for v in ("error", "first", "last")],
    "depth": [{"depth": v} for v in (None, 1, 10, 100)],
    "aggregation": [
        {"aggregation": "mean", "query_weights": ()},
        {"aggregation": "weighted_mean", "query_weights": (("q1", 2.0),)},
        {"aggregation": "weighted_mean", "query_weights": (("q1", 3.0),)},
        {"aggregation": "weighted_mean", "query_weights": (("q1", 2.0), ("q2", 1.0))},
    ],
    "assessor_model": [{"assessor_model": v} for v in (None, "median", "min", "max", "set", "range", "single:NIST",
                                                        "single:a")],
}
SINGLE_VALUED = {"measure", "discount"}  # one allowed value each today
CUTOFF_ALTERNATIVES: list[tuple[int | None, ...]] = [(10,), (5, 10), (10, None), (None,), (1, 2, 3)]


def method(spec: EvaluationSpec) -> str:
    """Everything but the cutoffs, as comparable text."""
    return json.dumps(spec.model_dump(mode="json", exclude={"cutoffs"}), sort_keys=True)


def variants(base: EvaluationSpec, max_changes: int) -> list[EvaluationSpec]:
    """`base` with up to `max_changes` options changed, every combination of alternatives."""
    specs = [base]
    for n in range(1, max_changes + 1):
        for fields in itertools.combinations(ALTERNATIVES, n):
            for changes in itertools.product(*(ALTERNATIVES[f] for f in fields)):
                merged: dict[str, Any] = {}
                for change in changes:
                    merged.update(change)
                if merged.get("assessor_model") in ("set", "range") and merged.get("unjudged") == "condensed":
                    continue  # refused: a disputed negative grade would move the documents below it
                specs.append(base.with_options(**merged))
    return specs


# -- the model -------------------------------------------------------------------------------------------------------


def test_alternatives_cover_every_field() -> None:
    covered = {field for changes in ALTERNATIVES.values() for change in changes for field in change}
    # interval_width is a reporting threshold of the summary, not part of the method (tested in test_intervals)
    assert covered | SINGLE_VALUED | {"cutoffs", "measures", "interval_width"} == set(EvaluationSpec.model_fields)


def test_frozen() -> None:
    spec = EvaluationSpec()
    with pytest.raises(ValidationError):
        spec.ties = "average"  # type: ignore[misc]
    assert spec.ties == "docid_desc"


def test_with_options_returns_a_new_spec() -> None:
    spec = EvaluationSpec()
    changed = spec.with_options(ties="average")
    assert (spec.ties, changed.ties) == ("docid_desc", "average")


def test_extra_fields_forbidden() -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        EvaluationSpec(gain_mapping={1: 0})  # type: ignore[call-arg]
    with pytest.raises(SpecError, match=r"^invalid spec: gain_mapping: Extra inputs are not permitted$"):
        EvaluationSpec().with_options(gain_mapping={1: 0})


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"ties": "bogus"}, "ties: Input should be 'docid_desc', 'docid_asc' or 'average'"),
        ({"discount": "log10"}, "discount: Input should be 'log2'"),
        ({"depth": 0}, "depth: Input should be greater than 0"),
        ({"cutoffs": (0,)}, "cutoffs.0: Input should be greater than 0"),
        ({"measure": "map"}, "measure: Input should be 'ndcg'"),
    ],
)
def test_invalid_values_are_one_line_spec_errors(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError) as caught:
        EvaluationSpec().with_options(**changes)
    assert str(caught.value) == f"invalid spec: {message}"
    assert "\n" not in str(caught.value)


def test_hashable_and_equal_by_value() -> None:
    a = EvaluationSpec(ties="average", cutoffs=(10, 5))
    b = EvaluationSpec(cutoffs=(5, 10), ties="average")
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b}) == 1


# -- cutoffs ---------------------------------------------------------------------------------------------------------


def test_default_cutoffs_are_trec_evals() -> None:
    assert EvaluationSpec().cutoffs == TREC_EVAL_CUTOFFS == (5, 10, 15, 20, 30, 100, 200, 500, 1000)


@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        ((10, 5), (5, 10)),
        ((None, 10, 5), (5, 10, None)),
        ((1000, None, 1), (1, 1000, None)),
        ((None,), (None,)),
        ([3, 1, 2], (1, 2, 3)),
    ],
)
def test_cutoffs_canonicalised(given: tuple[int | None, ...], canonical: tuple[int | None, ...]) -> None:
    spec = EvaluationSpec(cutoffs=given)  # type: ignore[arg-type]
    assert spec.cutoffs == canonical
    assert spec.spec_hash == EvaluationSpec(cutoffs=canonical).spec_hash


@pytest.mark.parametrize(
    ("cutoffs", "message"),
    [
        ((5, 5), "duplicate cutoffs in [5, 5]"),
        ((10, 5, 10), "duplicate cutoffs in [10, 5, 10]"),
        ((None, None), "duplicate cutoffs in [None, None]"),
        ((), "at least one cutoff is required"),
        ((0,), "greater than 0"),
        ((-5,), "greater than 0"),
    ],
)
def test_bad_cutoffs_rejected(cutoffs: tuple[int | None, ...], message: str) -> None:
    with pytest.raises(SpecError, match=message.replace("[", r"\[").replace("]", r"\]")):
        EvaluationSpec().with_options(cutoffs=cutoffs)


# -- gain map --------------------------------------------------------------------------------------------------------


def test_gain_map_canonicalised_sorted_and_as_floats() -> None:
    spec = EvaluationSpec(gain="map", gain_map=((3, 3), (1, 0), (0, 0), (2, 2)))  # type: ignore[arg-type]
    assert spec.gain_map == MAP_2020
    assert spec.spec_hash == EvaluationSpec(gain="map", gain_map=MAP_2020).spec_hash


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"gain": "map"}, "gain 'map' needs a gain_map"),
        ({"gain_map": MAP_2020}, "a gain_map is given but gain is 'linear'; set gain='map'"),
        ({"gain": "exponential", "gain_map": MAP_2020}, "a gain_map is given but gain is 'exponential'"),
        ({"gain": "map", "gain_map": ((1, 1.0), (1, 2.0))}, r"gain map gives grade\(s\) \[1\] twice"),
        ({"gain": "map", "gain_map": ((1, float("nan")),)}, "gain map sends grade 1 to a non-finite gain nan"),
        ({"gain": "map", "gain_map": ((1, float("inf")),)}, "gain map sends grade 1 to a non-finite gain inf"),
    ],
)
def test_gain_map_consistent_with_gain(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        EvaluationSpec().with_options(**changes)


def test_grades_outside_the_gain_map_are_found() -> None:
    judgments = pl.LazyFrame({"relevance": [0, 1, 2, 3, 4, None, -1, 4]}, schema={"relevance": pl.Int32})
    spec = EvaluationSpec(gain="map", gain_map=MAP_2020)
    # Grades present: -1, 0, 1, 2, 3, 4 (and an unresolved null). The map covers 0-3; negative grades gain 0 anyway
    # and nulls are unjudged, so only 4 is missing.
    assert grades_outside_gain_map(judgments, spec).collect()["relevance"].to_list() == [4]
    # Without a map every grade has a gain.
    assert grades_outside_gain_map(judgments, EvaluationSpec()).collect().height == 0


# -- canonical JSON and hash -----------------------------------------------------------------------------------------

JUDGED_CANONICAL_JSON = (
    '{"aggregation":"mean","cutoffs":[5,10,15,20,30,100,200,500,1000],"depth":null,"discount":"log2",'
    '"gain":"linear","gain_map":[],"ideal":"judged","judgment_duplicates":"error","measure":"ndcg",'
    '"negative_grades":"zero","no_relevant":"null","query_set":"judged","query_weights":[],"ranking":"score",'
    '"run_duplicates":"error","score_precision":"float64","spec_version":1,"ties":"docid_desc","unjudged":"zero"}'
)


def test_canonical_json_is_pinned() -> None:
    # Pinned on purpose: an evaluation's identifier derives from this text, so changing it must be deliberate.
    assert PRESETS["judged"].canonical_json() == JUDGED_CANONICAL_JSON


def test_hash_is_sha256_of_canonical_json_and_pinned() -> None:
    spec = PRESETS["judged"]
    assert spec.spec_hash == hashlib.sha256(JUDGED_CANONICAL_JSON.encode()).hexdigest()
    assert spec.spec_hash == "d5faf6a9b2a143e6f25a092eeb992b78fd6b84248aa638507b38b38b4df2c5c9"


def test_canonical_json_independent_of_construction() -> None:
    a = EvaluationSpec(ties="average", gain="map", gain_map=((3, 3.0), (0, 0.0)), cutoffs=(10, None, 5))
    b = EvaluationSpec(cutoffs=(5, 10, None)).with_options(gain_map=((0, 0), (3, 3)), gain="map").with_options(
        ties="average"
    )
    assert a.canonical_json() == b.canonical_json()
    assert a.spec_hash == b.spec_hash


@pytest.mark.parametrize("spec", variants(PRESETS["judged"], 1) + list(PRESETS.values()), ids=lambda s: s.label(None))
def test_canonical_json_round_trips(spec: EvaluationSpec) -> None:
    text = spec.canonical_json()
    back = EvaluationSpec.from_canonical_json(text)
    assert back == spec
    assert back.canonical_json() == text
    assert back.spec_hash == spec.spec_hash


@pytest.mark.parametrize("version", [None, 0, 2, "1"])
def test_from_canonical_json_checks_spec_version(version: object) -> None:
    payload = json.loads(EvaluationSpec().canonical_json())
    if version is None:
        del payload["spec_version"]
    else:
        payload["spec_version"] = version
    with pytest.raises(SpecError, match="spec_version"):
        EvaluationSpec.from_canonical_json(json.dumps(payload))


def test_hash_changes_when_any_option_changes() -> None:
    specs = variants(PRESETS["judged"], 1)
    specs += [PRESETS["judged"].with_options(cutoffs=c) for c in CUTOFF_ALTERNATIVES]
    by_hash: dict[str, EvaluationSpec] = {}
    for spec in specs:
        assert by_hash.setdefault(spec.spec_hash, spec) == spec, f"{spec} and {by_hash[spec.spec_hash]} share a hash"
    # Every distinct spec has its own hash (the base recurs once per option, as the option's default value).
    assert len(by_hash) == len(set(specs))


def test_equal_specs_have_equal_hashes_even_with_negative_zero() -> None:
    a = EvaluationSpec(gain="map", gain_map=((0, 0.0), (1, -0.0), (2, 2.0)))
    b = EvaluationSpec(gain="map", gain_map=((0, 0.0), (1, 0.0), (2, 2.0)))
    assert a == b
    assert a.spec_hash == b.spec_hash


# -- labels ----------------------------------------------------------------------------------------------------------


def test_preset_labels() -> None:
    assert PRESETS["judged"].label(10) == "nDCG@10[judged:gain=linear]"
    assert PRESETS["trec_eval"].label(10) == "nDCG@10[trec_eval:gain=linear]"
    assert PRESETS["trec_eval9"].label(5) == "nDCG@5[trec_eval9:gain=linear]"
    assert PRESETS["sklearn"].label(None) == "nDCG[sklearn:gain=linear]"


def test_full_label_lists_cutoffs() -> None:
    spec = EvaluationSpec(cutoffs=(None, 10, 5))
    assert spec.full_label() == "nDCG@5,10,all[judged:gain=linear]"


def test_2020_gain_map_label_shows_the_map() -> None:
    official = PRESETS["trec_eval"].with_options(gain="map", gain_map=MAP_2020, cutoffs=(10,))
    counted = PRESETS["trec_eval"].with_options(gain="map", gain_map=MAP_LINEAR_0_3, cutoffs=(10,))
    assert official.label(10) == "nDCG@10[trec_eval:gain={0:0,1:0,2:2,3:3}]"
    assert counted.label(10) == "nDCG@10[trec_eval:gain={0:0,1:1,2:2,3:3}]"
    # Both differ from plain linear gain, which trec_eval prints as ndcg_cut_10.
    assert len({official.label(10), counted.label(10), PRESETS["trec_eval"].label(10)}) == 3
    assert not official.trec_eval_compatible()


def test_fractional_gain_in_label() -> None:
    assert EvaluationSpec(gain="map", gain_map=((0, 0.0), (1, 0.5))).gain_label == "{0:0,1:0.5}"


def test_exponential_label() -> None:
    assert PRESETS["judged"].with_options(gain="exponential").label(10) == "nDCG@10[judged:gain=exponential]"


@pytest.mark.parametrize("preset_name", list(PRESETS))
@pytest.mark.parametrize(
    "change", [change for changes in ALTERNATIVES.values() for change in changes], ids=lambda c: repr(c)[:60]
)
def test_label_changes_whenever_an_option_changes(preset_name: str, change: dict[str, Any]) -> None:
    base = PRESETS[preset_name].with_options(cutoffs=(10,))
    changed = base.with_options(**change)
    if changed == base:
        assert changed.label(10) == base.label(10)
    else:
        assert changed.label(10) != base.label(10), (base, change)
        assert changed.method_label() != base.method_label()


@pytest.mark.parametrize("cutoffs", CUTOFF_ALTERNATIVES)
def test_full_label_changes_when_cutoffs_change(cutoffs: tuple[int | None, ...]) -> None:
    base = PRESETS["judged"]
    assert base.with_options(cutoffs=cutoffs).full_label() != base.full_label()


def test_label_determines_the_method() -> None:
    # Every spec up to two option changes away from any preset: one method label per method, and vice versa.
    specs = {spec for name in PRESETS for spec in variants(PRESETS[name], 2)}
    assert len(specs) > 1000
    methods_by_label: dict[str, set[str]] = {}
    labels_by_method: dict[str, set[str]] = {}
    for spec in specs:
        methods_by_label.setdefault(spec.method_label(), set()).add(method(spec))
        labels_by_method.setdefault(method(spec), set()).add(spec.method_label())
    assert all(len(methods) == 1 for methods in methods_by_label.values())
    assert all(len(labels) == 1 for labels in labels_by_method.values())


def test_label_names_the_closest_preset_and_the_differences() -> None:
    spec = PRESETS["trec_eval"].with_options(ties="average", depth=100)
    assert spec.label(10) == "nDCG@10[trec_eval:gain=linear,ties=average,depth=100]"
    # trec_eval + float32 is trec_eval9 exactly, so it is labelled as such.
    assert PRESETS["trec_eval"].with_options(score_precision="float32").label(10) == PRESETS["trec_eval9"].label(10)


# -- presets ---------------------------------------------------------------------------------------------------------

TREC_EVAL_OPTIONS = {
    "score_precision": "float64",
    "ties": "docid_desc",
    "gain": "linear",
    "ideal": "judged",
    "unjudged": "zero",
    "no_relevant": "zero",
    "query_set": "judged",
    "run_duplicates": "error",
    "judgment_duplicates": "error",
    "ranking": "score",
    "discount": "log2",
    "aggregation": "mean",
}


def options(spec: EvaluationSpec, names: list[str]) -> dict[str, Any]:
    return {name: getattr(spec, name) for name in names}


def test_presets_are_the_four_spec_lists() -> None:
    assert list(PRESETS) == ["judged", "trec_eval", "trec_eval9", "sklearn"]


def test_trec_eval_preset() -> None:
    spec = PRESETS["trec_eval"]
    assert options(spec, list(TREC_EVAL_OPTIONS)) == TREC_EVAL_OPTIONS
    assert spec.trec_eval_compatible()
    assert spec.cutoffs == TREC_EVAL_CUTOFFS
    assert spec.depth is None


def test_trec_eval9_preset_is_trec_eval_with_float32() -> None:
    spec = PRESETS["trec_eval9"]
    assert options(spec, list(TREC_EVAL_OPTIONS)) == TREC_EVAL_OPTIONS | {"score_precision": "float32"}
    assert spec == PRESETS["trec_eval"].with_options(score_precision="float32")
    assert spec.trec_eval_compatible()


def test_sklearn_preset() -> None:
    spec = PRESETS["sklearn"]
    assert options(
        spec, ["score_precision", "ties", "gain", "ideal", "no_relevant", "query_set", "negative_grades", "unjudged"]
    ) == {
        "score_precision": "float64",
        "ties": "average",
        "gain": "linear",
        "ideal": "retrieved",
        "no_relevant": "zero",
        "query_set": "both",
        "negative_grades": "error",
        "unjudged": "zero",
    }
    assert not spec.trec_eval_compatible()


def test_judged_preset_is_trec_eval_with_null_for_idcg_zero() -> None:
    spec = PRESETS["judged"]
    assert options(spec, list(TREC_EVAL_OPTIONS)) == TREC_EVAL_OPTIONS | {"no_relevant": "null"}
    assert spec == EvaluationSpec()
    assert spec == PRESETS["trec_eval"].with_options(no_relevant="null")
    assert not spec.trec_eval_compatible()


def test_trec_eval_names() -> None:
    spec = PRESETS["trec_eval"]
    assert spec.trec_eval_name(10) == "ndcg_cut_10"
    assert spec.trec_eval_name(None) == "ndcg"


def test_unknown_preset() -> None:
    with pytest.raises(SpecError, match=r"^unknown preset 'nope'; choose one of judged, trec_eval, trec_eval9, sklearn$"):
        preset("nope")


# -- option values given as text -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "cutoffs"),
    [("10", (10,)), ("5,10,all", (5, 10, None)), (" 1 , 2 ", (1, 2)), ("ALL", (None,)), ("none", (None,))],
)
def test_parse_cutoffs(text: str, cutoffs: tuple[int | None, ...]) -> None:
    assert parse_cutoffs(text) == cutoffs


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0", "cutoff 0 must be positive"),
        ("-3", "cutoff -3 must be positive"),
        ("x", "cutoff 'x' is not a positive integer or 'all'"),
        ("1.5", "cutoff '1.5' is not a positive integer or 'all'"),
        ("5,", "cutoff '' is not a positive integer or 'all'"),
    ],
)
def test_parse_cutoffs_errors(text: str, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_cutoffs(text)
    assert str(caught.value) == message


def test_parse_gain_map() -> None:
    assert parse_gain_map("0=0,1=0,2=2,3=3") == MAP_2020
    assert parse_gain_map(" -1 = 0 , 1=0.5,") == ((-1, 0.0), (1, 0.5))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1:2", "gain map entry '1:2' is not GRADE=GAIN"),
        ("1=x", "gain map entry '1=x': the grade must be an integer and the gain a number"),
        ("1.5=2", "gain map entry '1.5=2': the grade must be an integer and the gain a number"),
        (",", "the gain map is empty"),
    ],
)
def test_parse_gain_map_errors(text: str, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_gain_map(text)
    assert str(caught.value) == message


def test_build_spec_overrides_a_preset() -> None:
    spec = build_spec("trec_eval", cutoffs=(10,), ties=None, gain_map=MAP_2020)
    # None keeps the preset's value; a gain map alone implies gain='map'.
    assert spec == PRESETS["trec_eval"].with_options(cutoffs=(10,), gain="map", gain_map=MAP_2020)


@pytest.mark.parametrize("preset_name", sorted(PRESETS))
@pytest.mark.parametrize(("measures", "cutoffs"), [
    (["nDCG@10"], (10,)),
    (["nDCG@10", "nDCG@100", "nDCG"], (10, 100, None)),
    (["nDCG", "nDCG@100", "nDCG@10"], (10, 100, None)),  # the order asked for is not part of the method
])
def test_ndcg_measures_are_the_cutoffs_form(preset_name: str, measures: list[str], cutoffs: tuple) -> None:
    """nDCG at some cutoffs is one method however it is asked for: one spec, canonical JSON, hash and label."""
    by_measures = build_spec(preset_name, measures=measures)
    by_cutoffs = build_spec(preset_name, cutoffs=cutoffs)
    assert by_measures == by_cutoffs
    assert by_measures.canonical_json() == by_cutoffs.canonical_json()
    assert by_measures.spec_hash == by_cutoffs.spec_hash
    assert by_measures.full_label() == by_cutoffs.full_label()
    assert preset(preset_name).with_options(measures=by_measures.measure_list()) == by_cutoffs
    # A list with any other measure keeps its declared form.
    mixed = build_spec(preset_name, measures=[*measures, "AP"], ties="docid_desc")
    assert mixed.measures and "measures" in mixed.canonical_payload()
