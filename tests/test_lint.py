"""The template's own Python (knowledge package, tests, benchmarks) is ruff-clean."""

import subprocess
import sys

import pytest
from conftest import ROOT

PATHS = ["grpo_template", "tests", "benchmarks"]


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=" ".join)
def test_template_sources_pass_ruff(command):
    result = subprocess.run(
        [sys.executable, "-m", "ruff", *command, *PATHS], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
