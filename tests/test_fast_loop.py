"""The test loop's rules (tests/conftest.py): which Hypothesis profile a run gets, what counts as starting a
subprocess, and, on a small project of its own, which tests the fast loop leaves out, that it fails a test over
its time limit, and that each pytest-xdist worker is a session of its own."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
from multiprocessing import Pipe
from pathlib import Path

from hypothesis import settings

from tests.conftest import REPO, ended, hypothesis_profile, reaches_subprocess


def test_the_profile_follows_hypothesis_profile_then_ci() -> None:
    assert hypothesis_profile({}) == "dev"
    assert hypothesis_profile({"CI": "true"}) == "ci"
    assert hypothesis_profile({"CI": "1"}) == "ci"
    assert hypothesis_profile({"CI": "false"}) == "dev"
    assert hypothesis_profile({"CI": ""}) == "dev"
    assert hypothesis_profile({"HYPOTHESIS_PROFILE": "ci"}) == "ci"
    assert hypothesis_profile({"CI": "true", "HYPOTHESIS_PROFILE": "dev"}) == "dev"


def test_the_profiles_hold_the_example_counts() -> None:
    assert settings.get_profile("dev").max_examples == 25
    assert settings.get_profile("ci").max_examples == 400
    assert settings.get_profile("ci").derandomize  # Hypothesis' own CI settings stay


def _starts_one() -> None:
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def _through_a_helper() -> None:
    _starts_one()


def _names_it_in_a_string_only() -> str:
    return "subprocess.run"


def _through_a_lambda() -> None:
    list(map(lambda argv: subprocess.run(argv, check=True), []))


def _forks_one() -> None:
    process = multiprocessing.get_context("forkserver").Process(target=print)
    process.start()
    process.join()


def _through_a_name_taken_from_multiprocessing() -> None:
    Pipe()


# Held in a mapping so that the tests below do not name these functions, which would make them subprocess tests.
EXAMPLES = {
    "direct": _starts_one, "helper": _through_a_helper, "string": _names_it_in_a_string_only,
    "lambda": _through_a_lambda, "multiprocessing": _forks_one, "taken": _through_a_name_taken_from_multiprocessing,
}


def test_a_subprocess_is_found_through_helpers_and_inner_code_only() -> None:
    found = {name: reaches_subprocess(function) for name, function in EXAMPLES.items()}
    assert found == {"direct": True, "helper": True, "string": False, "lambda": True, "multiprocessing": True,
                     "taken": True}


PROJECT_TESTS = '''
    import os
    import subprocess
    import time

    import pytest
    from hypothesis import given, strategies as st


    def start_one():
        subprocess.run(["true"], check=True)


    def test_through_a_helper():
        start_one()


    def test_with_the_server(prefect_harness):
        pass


    @given(st.integers())
    def test_a_property(number):
        pass


    @pytest.mark.slow
    def test_marked():
        pass


    def test_plain():
        assert "subprocess"


    def test_busy():
        end = time.process_time() + 0.3 * (os.cpu_count() or 1)  # over the limit even spread over every core
        while time.process_time() < end:
            pass
'''


def run_project(
    tmp_path: Path, *arguments: str, tests: dict[str, str] | None = None, environment: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """pytest on a project of a few tests (`tests`: file name under tests/flows -> its code; by default an
    end-to-end test and PROJECT_TESTS) under this conftest, its per-test limit lowered to 0.2 s, with `environment`
    added to this one's."""
    conftest = (REPO / "tests" / "conftest.py").read_text()
    assert conftest.count("FAST_TEST_SECONDS = 2.0\n") == 1
    (tmp_path / "tests" / "e2e").mkdir(parents=True, exist_ok=True)
    (tmp_path / "tests" / "flows").mkdir(exist_ok=True)
    lowered = conftest.replace("FAST_TEST_SECONDS = 2.0\n", "FAST_TEST_SECONDS = 0.2\n")
    (tmp_path / "tests" / "conftest.py").write_text(lowered)
    if tests is None:
        (tmp_path / "tests" / "e2e" / "test_end_to_end.py").write_text("def test_end_to_end():\n    pass\n")
        tests = {"test_rules.py": PROJECT_TESTS}
    for name, code in tests.items():
        (tmp_path / "tests" / "flows" / name).write_text(textwrap.dedent(code))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-W", "ignore::pytest.PytestUnknownMarkWarning", *arguments, "tests"],
        cwd=tmp_path, env=os.environ | (environment or {}), capture_output=True, text=True, timeout=300,
    )


def test_the_fast_loop_leaves_out_what_the_rules_call_slow(tmp_path: Path) -> None:
    listed = run_project(tmp_path, "--collect-only", "-m", "not slow")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert sorted(line for line in listed.stdout.splitlines() if "::" in line) == [
        "tests/flows/test_rules.py::test_busy", "tests/flows/test_rules.py::test_plain"
    ]


def test_the_fast_loop_fails_a_test_over_the_limit_and_only_there(tmp_path: Path) -> None:
    fast = run_project(tmp_path, "-m", "not slow")
    assert fast.returncode == 1, fast.stdout + fast.stderr
    assert "1 failed, 1 passed" in fast.stdout
    assert "tests/flows/test_rules.py::test_busy took" in fast.stdout
    assert "mark it `@pytest.mark.slow`" in fast.stdout

    everything = run_project(tmp_path, "-k", "busy")
    assert everything.returncode == 0, everything.stdout + everything.stderr


# Two files, so that each of two pytest-xdist workers gets one. Each writes its worker's PREFECT_HOME; the first
# leaves a stand-in for a judged local server (its command line) running under its temporary folder.
WORKER_TESTS = {
    "test_one.py": """
        import os, subprocess, sys
        from pathlib import Path

        def test_one(tmp_path):
            out = Path(os.environ["PROJECT_OUT"])
            (out / "one").write_text(os.environ["PREFECT_HOME"])
            stand_in = [sys.executable, "-c", "import time; time.sleep(120)", "prefect", "server", "start"]
            left = subprocess.Popen(stand_in, env=os.environ | {"PREFECT_HOME": str(tmp_path / "home")})
            (out / "left").write_text(str(left.pid))
    """,
    "test_two.py": """
        import os
        from pathlib import Path

        def test_two():
            (Path(os.environ["PROJECT_OUT"]) / "two").write_text(os.environ["PREFECT_HOME"])
    """,
}


def test_each_xdist_worker_has_its_own_prefect_home_and_session_end_check(tmp_path: Path) -> None:
    """Under `pytest -n 2` each worker is a session of its own: its own PREFECT_HOME (a folder of the run's, named by
    the worker), so its own Prefect servers; and a server left by a test of one worker is found by that worker's
    session-end check, killed, and fails the run."""
    out, home = tmp_path / "out", tmp_path / "home"
    out.mkdir()
    done = run_project(tmp_path / "project", "-n", "2", tests=WORKER_TESTS,
                       environment={"PROJECT_OUT": str(out), "PREFECT_HOME": str(home)})
    left = int((out / "left").read_text())
    try:
        assert sorted([(out / "one").read_text(), (out / "two").read_text()]) == [str(home / "gw0"), str(home / "gw1")]
        assert done.returncode == 1, done.stdout + done.stderr
        assert "1 error" in done.stdout and "2 passed" in done.stdout
        assert f"judged local Prefect server processes were left running by this test session (killed now): pid {left} " \
            in done.stdout
        assert ended(left)
    finally:
        if not ended(left):
            os.kill(left, signal.SIGKILL)
