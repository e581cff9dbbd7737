"""An Unsloth project's `make smoke` passed, then triton's nanobind leak report ("nanobind: leaked
4 instances! ... leaked 513 functions!") came at exit and read like a crash (issue 41): once
triton's module is loaded, a command's exit is quiet (GRPO_VERBOSE=1 keeps it), whether it
passed or failed (a failed smoke and `make try` still printed it)."""

import os
import subprocess
import sys

import grpo_kit
import pytest

SCRIPT = """
import atexit, os, sys
atexit.register(lambda: os.write(2, b"nanobind: leaked 4 instances!\\n"))  # as at teardown
if {loaded}:
    sys.modules["triton._C.libtriton"] = sys  # what Unsloth's import leaves
from grpo_kit.startup import quiet_nanobind_exit
print(quiet_nanobind_exit())
"""


@pytest.mark.parametrize(("loaded", "verbose", "quiet"), [(True, "", True), (False, "", False),
                                                           (True, "1", False)])  # fmt: skip
def test_a_passed_smoke_exits_without_the_nanobind_leak_report(loaded, verbose, quiet):
    src = os.path.dirname(os.path.dirname(grpo_kit.__file__))  # this checkout's kit
    env = {**os.environ, "GRPO_VERBOSE": verbose, "PYTHONPATH": src}
    done = subprocess.run([sys.executable, "-c", SCRIPT.format(loaded=loaded)], env=env,
                          capture_output=True, text=True, check=True)  # fmt: skip
    assert done.stdout.strip() == str(quiet)
    assert ("nanobind: leaked" in done.stderr) != quiet, done.stderr


FAILED_COMMAND = """
import atexit, os, sys
atexit.register(lambda: os.write(2, b"nanobind: leaked 4 instances!\\n"))  # as at teardown
sys.modules["triton._C.libtriton"] = sys  # what Unsloth's import leaves
from grpo_kit import cli
sys.exit(cli.main(["check", "--project", sys.argv[1]]))
"""


def test_a_failed_command_ends_on_its_own_error_not_the_leak_report(tmp_path):
    """Through the CLI, as `make` runs every command: a command that fails (here `grpo check`
    on a folder with no project) ends its output on its one-line error."""
    src = os.path.dirname(os.path.dirname(grpo_kit.__file__))
    env = {**os.environ, "GRPO_VERBOSE": "", "PYTHONPATH": src}
    done = subprocess.run([sys.executable, "-c", FAILED_COMMAND, str(tmp_path)], env=env,
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "nanobind: leaked" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("error: no pyproject.toml in ")


LOADED_LATER = """
import atexit, os, sys
atexit.register(lambda: os.write(2, b"nanobind: leaked 4 instances!\\\\n"))  # as at teardown
from grpo_kit.startup import quiet_nanobind_exit
quiet_nanobind_exit()  # as the Unsloth backend's import does, before triton is loaded
sys.modules["triton._C.libtriton"] = sys  # loaded later in the process (a test run)
print("27 passed")
"""


def test_a_process_that_loads_triton_after_the_backend_ends_quietly():
    """An Unsloth project's `make test-fast` (pytest, not the grpo CLI) ended on the leak report
    after "27 passed" (issue 41's walk): the exit handler looks for triton when the process
    exits, not when it was registered."""
    src = os.path.dirname(os.path.dirname(grpo_kit.__file__))
    env = {**os.environ, "GRPO_VERBOSE": "", "PYTHONPATH": src}
    done = subprocess.run([sys.executable, "-c", LOADED_LATER], env=env, capture_output=True,
                          text=True, check=True)  # fmt: skip
    assert done.stdout.strip() == "27 passed"
    assert "nanobind: leaked" not in done.stderr
