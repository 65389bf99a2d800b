"""`.ci/setup`'s chromium step: when the install fails, it says what that affects (only the HTML report's browser
test, which skips) and why it may have failed, and the setup goes on."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.conftest import REPO


def test_a_failed_chromium_install_says_what_it_affects(tmp_path: Path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "apt-get").write_text("#!/bin/sh\necho 'E: Unable to locate package chromium' >&2\nexit 100\n")
    (fake / "id").write_text("#!/bin/sh\necho 0\n")  # as root, where the setup tries to install it
    for script in fake.iterdir():
        script.chmod(0o755)
    environment = {**os.environ, "PATH": f"{fake}{os.pathsep}{os.environ['PATH']}", "TMPDIR": str(tmp_path),
                   "JUDGED_CHROMIUM": "no-such-chromium-for-this-test"}
    done = subprocess.run(["bash", str(REPO / ".ci" / "install-chromium")], env=environment, capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0  # the setup goes on
    message = " ".join(done.stderr.split())
    assert "chromium could not be installed" in message
    assert "tests/e2e/test_report_browser.py" in message and "will skip" in message
    assert "every other test work without it" in message
    (log,) = tmp_path.glob("judged-chromium-install.*.log")  # why: apt-get's own output, kept
    assert "Unable to locate package chromium" in log.read_text()
    assert str(log) in message
    assert "bash .ci/install-chromium" in (REPO / ".ci" / "setup").read_text()
