"""The package as users get it: a wheel built from the source tree, installed with its declared dependencies into a
fresh virtual environment outside the checkout, runs `judged demo` (the nightly flow on its own temporary Prefect
server, over the sample data shipped inside the package) and `judged evaluate`. Also: the wheel holds nothing but
`judged` (no top-level `schemas`, `transforms` or `flows` to collide with other projects), and every third-party
module the code imports is a declared dependency.

The install takes its dependencies from the package index pip is configured with (PyPI in CI); about a minute."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from tests.conftest import REPO

# What a copy of the source tree leaves out: local environments, build output and generated data.
NOT_SOURCE = (".venv", ".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis",
              "warehouse", "demo")
LAYERS = ("schemas", "transforms", "flows", "data")
# The seed fixture (data/seed) under the trec_eval preset, as docs/method.md prints it: DCG@3 = 3 + 0 + 2/log2(4) = 4,
# IDCG@3 = 3 + 2/log2(3) + 0.
SEED_TREC_LINES = [
    "ndcg_cut_1\tq1\t1.0",
    "ndcg_cut_2\tq1\t0.7039180890341348",
    "ndcg_cut_3\tq1\t0.9385574520455131",
    "runid\tall\tseed",
    "num_q\tall\t1",
    "ndcg_cut_1\tall\t1.0",
    "ndcg_cut_2\tall\t0.7039180890341348",
    "ndcg_cut_3\tall\t0.9385574520455131",
]


def _run(command: list[str | Path], cwd: Path, env: dict[str, str], timeout: float = 600) -> str:
    done = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        pytest.fail(f"{' '.join(map(str, command))} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built (pip, isolated build) from a copy of the source tree, so the checkout is left untouched."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(*NOT_SOURCE))
    # Verbose, so that setuptools' own warnings (which --quiet and pip's default hide) are kept in build.log.
    # (setuptools writes them to stderr.)
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "--wheel-dir", str(root / "dist"), str(source)]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        pytest.fail(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    (root / "build.log").write_text(done.stdout + done.stderr)
    (built,) = (root / "dist").glob("judged-*.whl")
    return built


def test_the_build_prints_no_setuptools_warning(wheel: Path) -> None:
    """Every importable folder with files in the wheel is a declared package: setuptools' 40-line warning about
    `judged.data.seed` ("absent from the `packages` configuration") is gone."""
    log = (wheel.parent.parent / "build.log").read_text()
    assert "absent from the `packages` configuration" not in log
    assert not [line for line in log.splitlines() if "Warning" in line and "setuptools" in line]


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    """(bin folder, working folder outside the checkout, environment) of a fresh virtual environment holding the
    wheel and its declared dependencies, with its own Prefect home."""
    root = tmp_path_factory.mktemp("installed")
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PREFECT_API_URL")}
    environment |= {
        "PREFECT_HOME": str(root / "prefect-home"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
    }
    # Without a pip of its own: this environment's pip (upgraded by .ci/setup) installs into it, a little faster
    # than the one venv bundles, and without ensurepip. --no-compile: pip would byte-compile every module of every
    # dependency (Prefect, SciPy, scikit-learn, Matplotlib...), most of the install's CPU, for a demo that imports a
    # fraction of them (compiled as it imports them, as a user's first run would).
    _run([sys.executable, "-m", "venv", "--without-pip", root / "venv"], root, environment)
    bin_folder = root / "venv" / "bin"
    _run([sys.executable, "-m", "pip", "--python", bin_folder / "python", "install", "--quiet", "--no-compile", wheel],
         root, environment)
    return bin_folder, root, environment


def test_the_wheel_holds_only_the_judged_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"judged", f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info"}
    for layer in LAYERS:
        assert f"judged/{layer}/__init__.py" in names
    assert "judged/transforms/views.sql" in names
    assert "judged/data/trec-dl-2020-sample/qrels.dl20-passage.txt" in names
    assert "judged/data/trec-dl-2020-sample/runs/input.p_bm25.gz.meta.toml" in names
    assert {"judged/data/seed/qrels.txt", "judged/data/seed/run.txt", "judged/data/README.md"} <= set(names)


def test_installed_package_runs_the_demo_outside_the_checkout(installed: tuple[Path, Path, dict[str, str]]) -> None:
    bin_folder, root, environment = installed
    site = Path(_run([bin_folder / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     root, environment).strip())
    assert not {"schemas", "transforms", "flows", "data"} & {path.name for path in site.iterdir()}
    # (the module: `import judged.flows.cli.app as c` binds the package's `app`, the Typer application, not the module)
    where = _run([bin_folder / "python", "-c",
                  "import sys, judged.flows.cli.app; print(sys.modules['judged.flows.cli.app'].__file__)"],
                 root, environment)
    assert Path(where.strip()).is_relative_to(site)  # not the checkout

    output = _run([bin_folder / "judged", "demo", "--warehouse", root / "warehouse", "--inbox", root / "inbox"],
                  root, environment)
    # NIST's published ndcg_cut_10 of each sample run (trec_eval preset, gain = grade).
    assert "p_bm25" in output and "0.4796" in output
    assert "pash_r3" in output and "0.8031" in output
    assert "DoRA_Large" in output and "0.0414" in output
    assert "3 evaluations, 0 files rejected" in output
    assert (root / "warehouse" / "catalog.duckdb").is_file()

    seed = site / "judged" / "data" / "seed"
    lines = _run([bin_folder / "judged", "evaluate", seed / "qrels.txt", seed / "run.txt", "--cutoffs", "1,2,3",
                  "--preset", "trec_eval", "--format", "trec"], root, environment)
    assert lines.splitlines() == SEED_TREC_LINES


def _third_party_imports() -> dict[str, list[str]]:
    """Top-level module -> the package modules importing it, for every import that is neither the standard library
    nor judged itself."""
    found: dict[str, list[str]] = {}
    for path in [REPO / "__init__.py", *(p for layer in LAYERS for p in sorted((REPO / layer).rglob("*.py")))]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top not in sys.stdlib_module_names and top not in ("judged", "__future__"):
                    found.setdefault(top, []).append(path.relative_to(REPO).as_posix())
    return found


def _requirement_name(requirement: str) -> str:
    name = requirement.split(";")[0]
    for mark in "[<>=!~ ":
        name = name.split(mark)[0]
    return name.strip().lower().replace("_", "-")


def test_every_imported_package_is_declared() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = {_requirement_name(r) for r in project["dependencies"]}
    # Extras the code may import lazily for an optional feature (never the test or benchmark tools).
    optional = {
        _requirement_name(r)
        for extra, requirements in project.get("optional-dependencies", {}).items()
        if extra not in ("test", "bench")
        for r in requirements
    }
    distributions = metadata.packages_distributions()
    undeclared = {
        module: users
        for module, users in _third_party_imports().items()
        if not {d.lower().replace("_", "-") for d in distributions.get(module, [module])} & (declared | optional)
    }
    assert undeclared == {}
