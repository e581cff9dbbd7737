"""The suite runs as `make test ARGS=...` runs it: the outer make's command-line variables do
not reach the makes the tests start (a baked project's `make smoke` read ARGS=-q as its train
arguments)."""

import subprocess
import sys

from conftest import ROOT

SHOW = (
    "all:\n\t@$(PY) -c \"import os, sys; sys.path.insert(0, '{tests}'); import conftest; "
    "print([os.environ.get(n) for n in ('ARGS', 'KIT_ARGS', 'MAKEFLAGS', 'MAKELEVEL')])\"\n"
)


def test_the_outer_makes_variables_stop_at_the_suite(tmp_path):
    makefile = tmp_path / "Makefile"
    makefile.write_text(SHOW.format(tests=ROOT / "tests"), encoding="utf-8")
    command = ["make", "-s", "-f", str(makefile), f"PY={sys.executable}",
               "ARGS=--durations=80 -q", "KIT_ARGS=-x"]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[None, None, None, None]"
