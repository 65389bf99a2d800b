"""The `judged` command line (flows.cli): the seed fixture in every output format, option values turned into a spec,
and every expected error as one `judged: error:` line on stderr with a non-zero exit and no traceback."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from judged.flows.cli.app import POLARS_ALLOCATOR_DEFAULTS, allocator_options, app
from tests.conftest import SAMPLE

SEED = Path(__file__).resolve().parents[2] / "data" / "seed"
SEED_QRELS = SEED / "qrels.txt"
SEED_RUN = SEED / "run.txt"

# The seed (SPEC section 2): one query, returned order d1, d2, d3 with grades 3, 0, 2, linear gain.
# DCG@1 = 3;               IDCG@1 = 3                         -> NDCG@1 = 1
# DCG@2 = 3 + 0/log2(3) = 3; IDCG@2 = 3 + 2/log2(3) = 4.2618595 -> NDCG@2 = 0.7039181
# DCG@3 = 3 + 0 + 2/log2(4) = 4; IDCG@3 = 4.2618595            -> NDCG@3 = 0.9385575
IDCG_2 = 3 + 2 / math.log2(3)
SEED_NDCG = {1: 1.0, 2: 3 / IDCG_2, 3: 4 / IDCG_2}
SEED_DCG = {1: 3.0, 2: 3.0, 3: 4.0}
SEED_IDCG = {1: 3.0, 2: IDCG_2, 3: IDCG_2}

PER_QUERY_KEYS = {
    "query_id",
    "measure",
    "cutoff",
    "value",
    "value_min",
    "value_max",
    "interval_kind",
    "status",
    "dcg",
    "idcg",
    "residual",
    "n_retrieved",
    "n_relevant_at_k",
    "n_nonrelevant_at_k",
    "n_unjudged_at_k",
    "unjudged_fraction_at_k",
    "ties_straddling_k",
}

# No colour, no forced terminal, wide enough that rich never wraps an option name.
ENV: dict[str, str | None] = {
    "COLUMNS": "200",
    "NO_COLOR": "1",
    "FORCE_COLOR": None,
    "PY_COLORS": None,
    "GITHUB_ACTIONS": None,
    "TTY_COMPATIBLE": None,
}
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def judged(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(arg) for arg in args], env=ENV)


def seed(*args: str) -> Result:
    return judged("evaluate", SEED_QRELS, SEED_RUN, "--cutoffs", "1,2,3", *args)


def plain(text: str) -> str:
    return ANSI.sub("", text)


def assert_one_line_error(result: Result, code: int, message: str) -> None:
    """Exit `code`, nothing on stdout, and exactly `judged: error: <message>` on stderr."""
    assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.stdout == ""
    assert result.stderr == f"judged: error: {message}\n"
    assert "Traceback" not in result.stderr


def json_of(result: Result) -> dict[str, Any]:
    assert result.exit_code == 0, (result.stderr, result.exception)
    return json.loads(result.stdout)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# -- the seed fixture ------------------------------------------------------------------------------------------------


def test_seed_json() -> None:
    payload = json_of(seed("--format", "json"))
    assert list(payload) == ["evaluations"]
    (evaluation,) = payload["evaluations"]
    assert {"run", "evaluation_id", "label", "spec", "spec_hash", "summary", "per_query", "warnings"} <= set(evaluation)
    assert evaluation["run"] == "seed"  # the run tag shared by every line
    assert re.fullmatch(r"[0-9a-f]{32}", evaluation["evaluation_id"])
    assert evaluation["label"] == "nDCG@1,2,3[judged:gain=linear]"
    assert evaluation["spec"]["cutoffs"] == [1, 2, 3]
    assert evaluation["spec"]["no_relevant"] == "null"
    assert evaluation["warnings"] == []

    summary = {row["cutoff"]: row for row in evaluation["summary"]}
    assert sorted(summary) == [1, 2, 3]
    for k, expected in SEED_NDCG.items():
        assert summary[k]["value"] == pytest.approx(expected, abs=1e-6)
        assert summary[k]["label"] == f"nDCG@{k}[judged:gain=linear]"
        assert summary[k]["trec_eval_measure"] is None  # judged's null for IDCG=0 is not trec_eval's number
        assert (summary[k]["n_scored"], summary[k]["n_missing"], summary[k]["n_undefined"]) == (1, 0, 0)
    assert summary[2]["value"] == pytest.approx(0.703918, abs=1e-6)
    assert summary[3]["value"] == pytest.approx(0.938557, abs=1e-6)

    per_query = evaluation["per_query"]
    assert [(row["query_id"], row["cutoff"]) for row in per_query] == [("q1", 1), ("q1", 2), ("q1", 3)]
    for row in per_query:
        k = row["cutoff"]
        assert set(row) == PER_QUERY_KEYS
        assert row["status"] == "scored"
        assert row["value"] == pytest.approx(SEED_NDCG[k], abs=1e-9)
        assert row["value_min"] == row["value"] == row["value_max"]  # nothing unjudged: the interval is the value
        assert row["dcg"] == pytest.approx(SEED_DCG[k], abs=1e-9)
        assert row["idcg"] == pytest.approx(SEED_IDCG[k], abs=1e-9)
        assert row["n_retrieved"] == 3
        # Within the first k: d1 (3, relevant), d2 (0, non-relevant), d3 (2, relevant); nothing unjudged, no ties.
        assert row["n_relevant_at_k"] == {1: 1, 2: 1, 3: 2}[k]
        assert row["n_nonrelevant_at_k"] == {1: 0, 2: 1, 3: 1}[k]
        assert row["n_unjudged_at_k"] == 0
        assert row["unjudged_fraction_at_k"] == 0.0
        assert row["ties_straddling_k"] == 0


def test_evaluation_id_is_stable_and_follows_the_spec() -> None:
    first = json_of(seed("--format", "json"))["evaluations"][0]
    again = json_of(seed("--format", "json"))["evaluations"][0]
    other = json_of(seed("--format", "json", "--ties", "average"))["evaluations"][0]
    assert first["evaluation_id"] == again["evaluation_id"]
    assert first["spec_hash"] == again["spec_hash"]
    assert other["evaluation_id"] != first["evaluation_id"]
    assert other["spec_hash"] != first["spec_hash"]


def test_cutoffs_and_the_same_ndcg_measures_give_one_evaluation_id() -> None:
    def run(*option: str) -> dict:
        return json_of(judged("evaluate", SEED_QRELS, SEED_RUN, "--format", "json", *option))["evaluations"][0]

    by_cutoffs, by_measures = run("--cutoffs", "2,3"), run("--measures", "nDCG@3,nDCG@2")
    for key in ("evaluation_id", "spec_hash", "spec", "label", "summary", "per_query"):
        assert by_cutoffs[key] == by_measures[key], key


def parse_trec_lines(stdout: str) -> list[tuple[str, str, str]]:
    rows = []
    for line in stdout.splitlines():
        measure, query, value = line.split("\t")
        rows.append((measure, query, value))
    return rows


def test_seed_trec_format_with_trec_eval_preset() -> None:
    result = seed("--format", "trec", "--preset", "trec_eval")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("ndcg_cut_1\tq1\t1.0\nndcg_cut_2\tq1\t0.70391808")
    rows = parse_trec_lines(result.stdout)
    # Per-query lines first, then runid, num_q and the `all` lines, as `trec_eval -q` prints them.
    assert [(m, q) for m, q, _ in rows] == [
        ("ndcg_cut_1", "q1"),
        ("ndcg_cut_2", "q1"),
        ("ndcg_cut_3", "q1"),
        ("runid", "all"),
        ("num_q", "all"),
        ("ndcg_cut_1", "all"),
        ("ndcg_cut_2", "all"),
        ("ndcg_cut_3", "all"),
    ]
    assert rows[3][2] == "seed"
    assert rows[4][2] == "1"
    for measure, _, value in rows[:3] + rows[5:]:
        k = int(measure.removeprefix("ndcg_cut_"))
        assert float(value) == pytest.approx(SEED_NDCG[k], abs=1e-6)


def test_seed_trec_format_with_default_preset_uses_our_labels() -> None:
    result = seed("--format", "trec")
    assert result.exit_code == 0, result.stderr
    rows = parse_trec_lines(result.stdout)
    measures = [m for m, _, _ in rows]
    assert "ndcg_cut_2" not in measures
    assert measures == [
        "nDCG@1[judged:gain=linear]",
        "nDCG@2[judged:gain=linear]",
        "nDCG@3[judged:gain=linear]",
        "runid",
        "num_q",
        "nDCG@1[judged:gain=linear]",
        "nDCG@2[judged:gain=linear]",
        "nDCG@3[judged:gain=linear]",
    ]
    assert float(rows[1][2]) == pytest.approx(0.703918, abs=1e-6)  # 3 / 4.2618595


def test_seed_table_format() -> None:
    result = seed()  # table is the default format
    assert result.exit_code == 0, result.stderr
    out = plain(result.stdout)
    assert "seed: nDCG@1,2,3[judged:gain=linear]" in out
    # Four decimals: 1.0000, 3/4.2618595 = 0.7039, 4/4.2618595 = 0.9386.
    for text in ("nDCG@1", "1.0000", "nDCG@2", "0.7039", "nDCG@3", "0.9386"):
        assert text in out
    assert result.stderr == ""


def test_table_with_trec_eval_preset_uses_trec_eval_names() -> None:
    result = seed("--preset", "trec_eval", "--format", "table")
    assert result.exit_code == 0, result.stderr
    out = plain(result.stdout)
    assert "ndcg_cut_2" in out
    assert "0.7039" in out


def test_gain_map_changes_the_label_not_the_seed_values() -> None:
    evaluation = json_of(seed("--format", "json", "--gain-map", "0=0,1=0,2=2,3=3"))["evaluations"][0]
    assert evaluation["label"] == "nDCG@1,2,3[judged:gain={0:0,1:0,2:2,3:3}]"
    assert evaluation["spec"]["gain"] == "map"
    assert evaluation["spec"]["gain_map"] == [[0, 0.0], [1, 0.0], [2, 2.0], [3, 3.0]]
    # The seed has no grade 1, so the map gives the same gains (3, 0, 2) and the same values.
    values = {row["cutoff"]: row["value"] for row in evaluation["summary"]}
    for k, expected in SEED_NDCG.items():
        assert values[k] == pytest.approx(expected, abs=1e-12)
    trec = seed("--format", "trec", "--preset", "trec_eval", "--gain-map", "0=0,1=0,2=2,3=3")
    # A gain map is not trec_eval's linear gain: our label, even from the trec_eval preset.
    assert trec.stdout.startswith("nDCG@1[trec_eval:gain={0:0,1:0,2:2,3:3}]\tq1\t1.0\n")


def test_whole_list_cutoff() -> None:
    evaluation = json_of(judged("evaluate", SEED_QRELS, SEED_RUN, "--cutoffs", "all,1", "--format", "json"))[
        "evaluations"
    ][0]
    # Canonical order: 1 then the whole list (null); NDCG over all three = NDCG@3 = 0.9385575.
    assert [row["cutoff"] for row in evaluation["summary"]] == [1, None]
    assert evaluation["summary"][1]["value"] == pytest.approx(SEED_NDCG[3], abs=1e-12)
    assert evaluation["summary"][1]["label"] == "nDCG[judged:gain=linear]"


def test_query_without_relevant_judgments_under_judged_and_trec_eval(tmp_path: Path) -> None:
    qrels = write(tmp_path / "qrels.txt", "q1 0 d1 1\nq2 0 d1 0\n")
    run = write(tmp_path / "run.txt", "q1 Q0 d1 1 2.0 r\nq2 Q0 d1 1 2.0 r\n")
    evaluation = json_of(judged("evaluate", qrels, run, "--cutoffs", "1", "--format", "json"))["evaluations"][0]
    # judged: q2 has IDCG = 0 -> value null, status no_relevant_judgments, left out: mean over q1 alone = 1.
    q2 = next(row for row in evaluation["per_query"] if row["query_id"] == "q2")
    assert (q2["value"], q2["status"], q2["idcg"]) == (None, "no_relevant_judgments", 0.0)
    assert (evaluation["summary"][0]["value"], evaluation["summary"][0]["n_undefined"]) == (1.0, 1)
    assert any("no relevant judgment" in warning for warning in evaluation["warnings"])
    trec = judged("evaluate", qrels, run, "--cutoffs", "1", "--format", "trec", "--preset", "trec_eval")
    # trec_eval: q2 scores 0 -> mean (1 + 0) / 2 = 0.5.
    assert parse_trec_lines(trec.stdout) == [
        ("ndcg_cut_1", "q1", "1.0"),
        ("ndcg_cut_1", "q2", "0.0"),
        ("runid", "all", "r"),
        ("num_q", "all", "2"),
        ("ndcg_cut_1", "all", "0.5"),
    ]


def test_two_runs_two_evaluations(tmp_path: Path) -> None:
    reversed_run = write(tmp_path / "rev.txt", "q1 Q0 d3 1 3.0 rev\nq1 Q0 d2 2 2.0 rev\nq1 Q0 d1 3 1.0 rev\n")
    payload = json_of(judged("evaluate", SEED_QRELS, SEED_RUN, reversed_run, "--cutoffs", "1", "--format", "json"))
    assert [e["run"] for e in payload["evaluations"]] == ["seed", "rev"]
    # rev puts d3 (grade 2) first: NDCG@1 = 2/3.
    assert payload["evaluations"][1]["summary"][0]["value"] == pytest.approx(2 / 3, abs=1e-12)


# -- errors ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ties", "bogus"], "invalid spec: ties: Input should be 'docid_desc', 'docid_asc' or 'average'"),
        (["--cutoffs", "0"], "cutoff 0 must be positive"),
        (["--cutoffs", "5,5"], "invalid spec: cutoffs: Value error, duplicate cutoffs in [5, 5]"),
        (["--cutoffs", "1,x"], "cutoff 'x' is not a positive integer or 'all'"),
        (["--gain-map", "1:2"], "gain map entry '1:2' is not GRADE=GAIN"),
        (["--preset", "nope"], "unknown preset 'nope'; choose one of judged, trec_eval, trec_eval9, sklearn"),
        (["--format", "xml"], "--format must be table, json or trec, not 'xml'"),
        (["--precision", "float16"], "invalid spec: score_precision: Input should be 'float64' or 'float32'"),
        (
            ["--gain", "linear", "--gain-map", "0=0"],
            "invalid spec: spec: Value error, a gain_map is given but gain is 'linear'; set gain='map'",
        ),
    ],
)
def test_bad_option_values_are_one_line_usage_errors(args: list[str], message: str) -> None:
    assert_one_line_error(judged("evaluate", SEED_QRELS, SEED_RUN, *args), 2, message)


def test_malformed_run_line_exits_1_naming_file_and_line(tmp_path: Path) -> None:
    run = write(tmp_path / "run.txt", "q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 abc t\n")
    assert_one_line_error(judged("evaluate", SEED_QRELS, run), 1, f"{run}, line 2: score 'abc' is not a number")


def test_malformed_qrels_line_exits_1(tmp_path: Path) -> None:
    qrels = write(tmp_path / "qrels.txt", "q1 0 d1 3\nq1 0 d2\n")
    assert_one_line_error(
        judged("evaluate", qrels, SEED_RUN), 1, f"{qrels}, line 2: expected 4 columns `qid iter docid grade`, found 3"
    )


def test_missing_run_file_exits_1(tmp_path: Path) -> None:
    missing = tmp_path / "missing.txt"
    assert_one_line_error(judged("evaluate", SEED_QRELS, missing), 1, f"{missing}: no such file")


def test_gain_map_missing_a_grade_exits_1() -> None:
    # The seed has grades 0, 2 and 3; a map of only 0 and 3 omits 2.
    assert_one_line_error(
        seed("--gain-map", "0=0,3=3"), 1, f"{SEED_QRELS}: grade(s) [2] occur but the gain map {{0:0,3:3}} omits them"
    )


@pytest.mark.parametrize(
    ("text", "second_line", "kept_rows"),
    [
        ("q1 Q0 d1 1 3.0 t\nq1 Q0 d1 2 2.0 t\n", 2, 1),
        # The query's rows lie in two blocks: the repeat is found across them.
        ("q1 Q0 d1 1 3.0 t\nq2 Q0 d7 1 2.0 t\nq1 Q0 d2 2 2.5 t\nq1 Q0 d1 3 1.0 t\n", 4, 2),
    ],
)
def test_duplicate_run_rows_exit_1(tmp_path: Path, text: str, second_line: int, kept_rows: int) -> None:
    run = write(tmp_path / "run.txt", text)
    assert_one_line_error(
        judged("evaluate", SEED_QRELS, run),
        1,
        f"{run}, line {second_line}: duplicate run row for query 'q1', document 'd1' at lines 1 and {second_line}; "
        "declare a duplicates policy (first, last) to resolve",
    )
    resolved = json_of(judged("evaluate", SEED_QRELS, run, "--run-duplicates", "first", "--format", "json"))
    assert resolved["evaluations"][0]["warnings"][0].endswith("resolved by keeping the first line")
    q1 = [row for row in resolved["evaluations"][0]["per_query"] if row["query_id"] == "q1"]
    assert {row["n_retrieved"] for row in q1} == {kept_rows}


def test_bad_query_weights_line_exits_1(tmp_path: Path) -> None:
    weights = write(tmp_path / "weights.txt", "q1 2\nq2\n")
    assert_one_line_error(seed("--query-weights", str(weights)), 1, f"{weights}, line 2: expected `query_id weight`")


def test_missing_query_weights_file_is_a_one_line_error(tmp_path: Path) -> None:
    result = seed("--query-weights", str(tmp_path / "missing.txt"))
    assert result.exit_code == 1
    assert result.stderr.startswith("judged: error: ")


def test_depth_zero_is_a_one_line_error() -> None:
    result = seed("--depth", "0")
    assert result.exit_code == 2
    assert result.stderr.startswith("judged: error: ")
    assert len(result.stderr.splitlines()) == 1


def test_evaluate_help_lists_the_options() -> None:
    result = judged("evaluate", "--help")
    assert result.exit_code == 0
    out = plain(result.stdout)
    for option in (
        "--preset",
        "--format",
        "--cutoffs",
        "--gain",
        "--gain-map",
        "--negative-grades",
        "--ranking",
        "--precision",
        "--ties",
        "--unjudged",
        "--ideal",
        "--no-relevant",
        "--query-set",
        "--run-duplicates",
        "--judgment-duplicates",
        "--depth",
        "--query-weights",
    ):
        assert option in out, option


def test_no_arguments_shows_help() -> None:
    result = judged()
    assert "evaluate" in plain(result.stdout + result.stderr)


# -- a real process: exit status and stderr as a shell sees them --------------------------------------------------


def cli_commands() -> list[list[str]]:
    commands = [[sys.executable, "-m", "judged.flows.cli"]]
    script = Path(sys.executable).parent / "judged"
    if script.exists():
        commands.append([str(script)])
    return commands


@pytest.mark.parametrize("command", cli_commands(), ids=lambda c: Path(c[-1]).name)
def test_subprocess_input_error_exit_code_and_no_traceback(command: list[str], tmp_path: Path) -> None:
    run = write(tmp_path / "run.txt", "q1 Q0 d1 1 3.0 t\nq1 Q0 d2 two 2.0 t\n")
    done = subprocess.run(
        [*command, "evaluate", str(SEED_QRELS), str(run)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == f"judged: error: {run}, line 2: rank 'two' is not an integer\n"


def test_subprocess_success() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "judged.flows.cli", "evaluate", str(SEED_QRELS), str(SEED_RUN), "--cutoffs", "2",
         "--preset", "trec_eval", "--format", "trec"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    # NDCG@2 = 3 / (3 + 2/log2(3)) = 0.7039180890...
    assert done.stdout.splitlines()[0].startswith("ndcg_cut_2\tq1\t0.70391808")
    assert done.stdout.splitlines()[-1].startswith("ndcg_cut_2\tall\t0.70391808")


@pytest.mark.parametrize(
    ("current", "expected"),
    [
        ("", "narenas:2,dirty_decay_ms:5000"),
        # What a parent process that imported Polars passes down: Polars' own options, not the user's.
        ("dirty_decay_ms:500,muzzy_decay_ms:1000",
         "dirty_decay_ms:500,muzzy_decay_ms:1000,narenas:2,dirty_decay_ms:5000"),
        # What a parent process that ran judged passes down: nothing to add.
        ("dirty_decay_ms:500,muzzy_decay_ms:1000,narenas:4,dirty_decay_ms:5000",
         "dirty_decay_ms:500,muzzy_decay_ms:1000,narenas:4,dirty_decay_ms:5000"),
        ("narenas:8", "narenas:8,dirty_decay_ms:5000"),  # the user's own options win
        ("dirty_decay_ms:0", "dirty_decay_ms:0,narenas:2"),
    ],
)
def test_allocator_options_add_an_arena_per_core_and_a_longer_decay(current: str, expected: str) -> None:
    assert allocator_options(current, cores=2) == expected
    assert allocator_options(current, cores=2, leave_out=("narenas", "dirty_decay_ms")) == current


def test_polars_puts_its_allocator_defaults_first_as_allocator_options_expects() -> None:
    """`allocator_options` tells Polars' options from the user's by what Polars puts first when it loads."""
    script = "import os, polars\nprint(os.environ['_RJEM_MALLOC_CONF'])"
    environment = {key: value for key, value in os.environ.items() if key != "_RJEM_MALLOC_CONF"}
    printed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                             env=environment)
    assert printed.stdout.strip() == POLARS_ALLOCATOR_DEFAULTS


def test_the_command_line_sets_the_arenas_before_polars_loads() -> None:
    """`main` sets the option before any command imports Polars, which then keeps it after its own."""
    script = (
        "import os, sys\nfrom judged.flows.cli.app import main\nassert 'polars' not in sys.modules\n"
        "sys.argv = ['judged', '--help']\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
        "import polars\nprint(os.environ['_RJEM_MALLOC_CONF'])"
    )
    environment = {key: value for key, value in os.environ.items() if key != "_RJEM_MALLOC_CONF"}
    printed = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=environment,
        cwd=Path(__file__).resolve().parents[2],
    )
    last_options = printed.stdout.strip().splitlines()[-1].split(",")[-2:]
    assert last_options == [f"narenas:{os.cpu_count()}", "dirty_decay_ms:5000"]


@pytest.mark.parametrize(("given", "expected"), [(None, "1"), ("3", "3")])
def test_the_command_line_gives_openblas_one_thread_unless_told_otherwise(given: str | None, expected: str) -> None:
    """`main` sets OpenBLAS's thread count before a command loads numpy (its pool would spin beside Polars for no
    work of judged's), and keeps the user's own."""
    script = (
        "import os, sys\nfrom judged.flows.cli.app import main\nassert 'numpy' not in sys.modules\n"
        "sys.argv = ['judged', '--help']\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(os.environ['OPENBLAS_NUM_THREADS'])"
    )
    environment = {key: value for key, value in os.environ.items() if key != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        environment["OPENBLAS_NUM_THREADS"] = given
    printed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                             env=environment, cwd=Path(__file__).resolve().parents[2])
    assert printed.stdout.strip().splitlines()[-1] == expected


def test_the_command_line_freezes_what_is_alive_at_exit() -> None:
    """`main` registers `gc.freeze` at exit: a handler registered before it runs after it and finds objects
    frozen, so the interpreter's last collection has nothing left to walk."""
    script = (
        "import atexit, gc, sys\natexit.register(lambda: print('frozen', gc.get_freeze_count() > 0))\n"
        "from judged.flows.cli.app import main\nsys.argv = ['judged', '--help']\nmain()\n"
    )
    printed = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2]
    )
    assert printed.stdout.strip().splitlines()[-1] == "frozen True"


def test_trec_lines_never_hash_the_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """trec_eval-style lines show no evaluation id, so the inputs are not hashed for them; JSON shows the id, made
    from both files' hashes."""
    import judged.flows.store.hashing

    hashed: list[str] = []
    real = judged.flows.store.hashing.content_hashes
    monkeypatch.setattr(judged.flows.store.hashing, "content_hashes", lambda path: hashed.append(path.name) or real(path))
    assert seed("--format", "trec").exit_code == 0
    assert hashed == []
    identified = json_of(seed("--format", "json"))
    assert sorted(hashed) == sorted([SEED_QRELS.name, SEED_RUN.name])
    assert len(identified["evaluations"][0]["evaluation_id"]) == 32


def test_version_prints_the_installed_version() -> None:
    from importlib.metadata import version

    result = judged("--version")
    assert result.exit_code == 0
    assert result.stdout == f"judged {version('judged')}\n"


def test_swapped_arguments_say_the_order() -> None:
    result = judged("evaluate", SEED_RUN, SEED_QRELS)
    assert_one_line_error(result, 1, f"{SEED_RUN}, line 1: expected 4 columns `qid iter docid grade`, found 6: this "
                                     "looks like a run; the order is QRELS RUN (2 more bad lines)")


@pytest.mark.parametrize(
    ("first", "second", "message"),
    [
        (SAMPLE / "runs" / "input.p_bm25.gz", SAMPLE / "qrels.dl20-passage.txt",
         "line 1: expected 4 columns `qid iter docid grade`, found 6: this looks like a run; the order is QRELS RUN "
         "(199999 more bad lines)"),
        (SAMPLE / "qrels.dl20-passage.txt", SAMPLE / "qrels.dl20-passage.txt",
         "line 1: expected 6 columns `qid Q0 docid rank score tag`, found 4: this looks like qrels; the order is "
         "QRELS RUN (11385 more bad lines)"),
    ],
    ids=["run-as-qrels", "qrels-as-run"],
)
def test_swapped_arguments_say_the_order_before_the_sidecars_are_checked(
    first: Path, second: Path, message: str
) -> None:
    """The bundled sample's files have sidecars: a run's, read as a judgment set's, does not validate (nor the
    qrels' read as a run's), but the swapped order is what to say."""
    wrong = first if "found 6" in message else second
    assert_one_line_error(judged("evaluate", first, second), 1, f"{wrong}, {message}")


@pytest.mark.parametrize("output_format", ["trec", "json"])
def test_what_a_command_loads_follows_what_it_prints(tmp_path: Path, output_format: str) -> None:
    """trec_eval's lines have no place for the intervals: `--format trec` neither computes them nor loads what
    only they need (numpy) or the exact parser and Arrow output need (pyarrow), on inputs the fast reader takes;
    `--format json` prints the intervals. Neither loads the TOML parser for inputs without a sidecar."""
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text("".join(f"q{q} 0 d{d} {(q + d) % 3}\n" for q in range(5) for d in range(0, 20, 2)))
    run.write_text("".join(f"q{q} Q0 d{d} {d + 1} {100 - d} t\n" for q in range(5) for d in range(20)))
    script = (
        "import io, sys, contextlib\n"
        "from judged.flows.cli.app import main\n"
        "sys.argv = ['judged', 'evaluate', sys.argv[1], sys.argv[2], '--preset', 'trec_eval', '--cutoffs', '10',"
        " '--format', sys.argv[3]]\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit as exit:\n"
        "        assert not exit.code, exit.code\n"
        "print(out.getvalue())\n"
        "print(sorted(m for m in ('numpy', 'pyarrow', 'judged.transforms.intervals', 'tomllib') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(qrels), str(run), output_format],
                          capture_output=True, text=True, check=True)
    *printed, loaded = done.stdout.strip().splitlines()
    if output_format == "trec":
        assert loaded == "[]"
        assert sum(line.startswith("ndcg_cut_10\tq") for line in printed) == 5
    else:
        assert "judged.transforms.intervals" in loaded
        assert "tomllib" not in loaded
        rows = json.loads("\n".join(printed))["evaluations"][0]["per_query"]
        assert all(row["value_min"] <= row["value"] < row["value_max"] for row in rows)  # every odd doc unjudged


def test_profile_prints_how_each_part_was_read_and_why() -> None:
    """The plan's read choice is what `--profile` shows: the seed run is small, so it is read in memory."""
    result = CliRunner().invoke(app, ["evaluate", str(SEED_QRELS), str(SEED_RUN), "--cutoffs", "2", "--profile"],
                                env=ENV)
    assert result.exit_code == 0, result.output
    assert re.search(r"^\S+: read part 1/1: in memory \(", result.stderr, re.M), result.stderr
    quiet = CliRunner().invoke(app, ["evaluate", str(SEED_QRELS), str(SEED_RUN), "--cutoffs", "2"], env=ENV)
    assert "read part" not in quiet.stderr
