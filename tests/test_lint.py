"""The template's own Python (knowledge package, tests, benchmarks) and grpo-kit's are
ruff-clean, each under its own configuration."""

import subprocess
import sys

import pytest
from conftest import ROOT

PATHS = {"template": (ROOT, ["grpo_template", "tests", "benchmarks"]), "kit": (ROOT / "kit", ["."])}


@pytest.mark.parametrize("where", list(PATHS))
@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=" ".join)
def test_sources_pass_ruff(command, where):
    folder, paths = PATHS[where]
    result = subprocess.run(
        [sys.executable, "-m", "ruff", *command, *paths], cwd=folder, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
