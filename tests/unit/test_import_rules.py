"""The import contracts of pyproject.toml ([tool.importlinter]) hold: imports point from the edges
(REST, RagService) to the application service, the loop and the policy, never back; RagService and
the OpenAI routes import no REST route; the settings import nothing of the loop."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_import_contracts_hold() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    checked = subprocess.run(
        [str(lint_imports), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "0 broken" in checked.stdout
