"""The layers, checked on the source: `schemas` imports neither `transforms` nor `flows`, `transforms` does not import
`flows`, only the pipeline (`flows/pipeline/`) imports Prefect (the CLI and every other module reach it lazily
through it), the engine, the store and the reports import neither the pipeline nor the CLI nor the API (which build
on them), `schemas` and `transforms` do no I/O of their own (no subprocess, environment, files or package
metadata), and `import judged` loads nothing heavy.

Every `import` statement counts, at module level or inside a function: a lazy import is still a dependency."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO

LAYERS = ("schemas", "transforms", "flows")
# The only package that may import Prefect (and its Dask runner).
PREFECT_HOME = "flows/pipeline/"
PREFECT_PACKAGES = ("prefect", "prefect_dask")
# Modules through which a layer would read the machine or the environment rather than its arguments.
IO_MODULES = ("subprocess", "os", "platform", "importlib.metadata", "importlib.resources", "shutil", "socket",
              "tempfile", "pathlib", "tomllib")
# What the pipeline, the command line and the API build on, which never reaches back up into them: a module here
# importing the pipeline made the import circle that moved the comparison service to flows/engine/compare.py.
BELOW_PIPELINE = ("flows/engine/", "flows/store/", "flows/report/")
ABOVE = ("judged.flows.pipeline", "judged.flows.cli", "judged.flows.api")
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "schemas": ("judged.transforms", "judged.flows", *IO_MODULES),
    "transforms": ("judged.flows", *IO_MODULES),
    "flows": (),
}


def imported_modules(source: str, package: str) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import in `source`, a module of `package` (e.g. `judged.flows`):
    `from x import y` gives `x` and `x.y` (y may be a module), relative imports are resolved."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            yield node.lineno, module
            for alias in node.names:
                yield node.lineno, f"{module}.{alias.name}"


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def violations(relative_path: str, source: str) -> list[str]:
    """Every import in the module at `relative_path` (relative to the repository root) that its layer forbids."""
    layer = relative_path.split("/")[0] if "/" in relative_path else ""
    package = ".".join(["judged", *relative_path.split("/")[:-1]])
    found = []
    for line, module in imported_modules(source, package):
        if module.startswith("__future__"):
            continue
        if not relative_path.startswith(PREFECT_HOME) and any(_within(module, p) for p in PREFECT_PACKAGES):
            found.append(f"{relative_path}:{line} imports {module} (only {PREFECT_HOME} may import Prefect)")
        for forbidden in FORBIDDEN.get(layer, ()):
            if _within(module, forbidden):
                found.append(f"{relative_path}:{line} imports {module} (the {layer} layer must not)")
        if relative_path.startswith(BELOW_PIPELINE) and any(_within(module, above) for above in ABOVE):
            found.append(f"{relative_path}:{line} imports {module} (the pipeline, the CLI and the API build on "
                         f"{relative_path.rsplit('/', 1)[0]}/, not the other way round)")
    return sorted(set(found))


def package_modules() -> list[str]:
    modules = ["__init__.py"]
    for layer in LAYERS:
        modules += [path.relative_to(REPO).as_posix() for path in sorted((REPO / layer).rglob("*.py"))]
    return modules


def test_the_package_has_its_three_layers() -> None:
    modules = package_modules()
    for layer in LAYERS:
        assert f"{layer}/__init__.py" in modules
    for package in ("cli", "engine", "store", "pipeline", "report"):
        assert f"flows/{package}/__init__.py" in modules
    assert "flows/pipeline/flows.py" in modules and "flows/cli/app.py" in modules


@pytest.mark.parametrize("relative_path", package_modules())
def test_module_keeps_to_its_layer(relative_path: str) -> None:
    assert violations(relative_path, (REPO / relative_path).read_text()) == []


@pytest.mark.parametrize(
    ("relative_path", "source", "expected"),
    [
        ("schemas/x.py", "from judged.flows.store.readers import load_table", "imports judged.flows.store.readers"),
        ("schemas/x.py", "def f():\n    from ..transforms import ndcg", "imports judged.transforms"),
        ("schemas/x.py", "import subprocess", "imports subprocess"),
        ("schemas/x.py", "from importlib import metadata", "imports importlib.metadata"),
        ("transforms/x.py", "from judged.flows import engine", "imports judged.flows"),
        ("transforms/x.py", "import os.path", "imports os.path"),
        ("flows/cli/app.py", "def f():\n    from prefect import flow", "imports prefect"),
        ("flows/api.py", "import prefect_dask", "imports prefect_dask"),
        ("__init__.py", "from prefect.runtime import flow_run", "imports prefect.runtime"),
        ("flows/report/x.py", "from judged.flows.pipeline.tasks import ingest_file", "imports judged.flows.pipeline"),
        ("flows/engine/x.py", "def f():\n    from judged.flows.cli import app", "imports judged.flows.cli"),
    ],
)
def test_the_check_finds_each_kind_of_violation(relative_path: str, source: str, expected: str) -> None:
    found = violations(relative_path, source)
    assert any(expected in problem for problem in found), found


def test_the_check_allows_what_the_layers_may_do() -> None:
    assert violations("flows/pipeline/flows.py", "from prefect import flow\nimport prefect_dask") == []
    assert violations("transforms/x.py", "from judged.schemas.spec import EvaluationSpec\nimport polars") == []
    assert violations("flows/x.py", "import subprocess\nfrom judged.transforms import parse") == []


def test_importing_judged_loads_nothing_heavy() -> None:
    # A fresh interpreter: what `import judged` (and reading its version) pulls in, before any API use.
    heavy = ("polars", "pyarrow", "duckdb", "prefect", "pydantic", "typer", "rich", "pandas")
    script = (
        "import sys, judged; judged.__version__; "
        f"print(','.join(m for m in {heavy!r} if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd="/")
    assert loaded.stdout.strip() == ""
