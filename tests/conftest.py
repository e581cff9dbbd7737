"""Helpers for baking the template and running what it produced."""

from __future__ import annotations

import os
import re
import runpy
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import pytest
from grpo_kit.testing import share_cores_among_test_workers

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))


def outer_make_variables(makeflags: str) -> list[str]:
    """The names of the variables given on the outer make's command line, read from its
    MAKEFLAGS (" -- PYTHON=python ARGS=--durations=80\\ -q": spaces inside a value escaped)."""
    if " -- " not in f" {makeflags}":
        return []
    definitions = re.split(r"(?<!\\) ", f" {makeflags}".split(" -- ", 1)[1])
    return [d.split("=", 1)[0] for d in definitions if "=" in d]


# `make test` runs this suite too: the outer make's command-line variables (PYTHON=..., ARGS=...)
# and its level reach every make a test starts, through MAKEFLAGS and MAKELEVEL and as
# environment variables, and override the variables of the Makefile under test (CI: a test's
# own PYTHON lost to the outer one; `make test ARGS=-q` passed -q to every baked project's
# train). A test's make sees only its own Makefile and arguments, under make or not.
for _name in outer_make_variables(os.environ.get("MAKEFLAGS", "")):
    os.environ.pop(_name, None)
for _name in ("MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES", "MAKELEVEL"):
    os.environ.pop(_name, None)

# Generated projects here are not started as git repositories (the post-generation hook's opt-out):
# the bakes compare file trees and are many; tests/test_cruft.py generates without it, as users do.
os.environ.setdefault("GRPO_NO_GIT", "1")

# Torch threads per worker (one each on 2 cores), before anything imports torch; the baked
# projects' commands inherit them.
share_cores_among_test_workers()

OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "PYTHONUNBUFFERED": "1",
    # A baked project's `make test` fuzzes its rewards with 100 examples each, not 1000: the
    # rewards it carries are grpo-kit's starters, which the kit's suite fuzzes with 1000 each
    # (kit/tests/test_reward_fuzz.py); here the project's own tests are shown to run and pass.
    "GRPO_FUZZ_EXAMPLES": "100",
}


def bake_ok(cookies, **answers) -> Path:
    """Bake with these answers; fail the test with the reason if cookiecutter did not succeed."""
    result = cookies.bake(extra_context=answers, template=str(ROOT))
    assert result.exit_code == 0 and result.exception is None, (answers, result.exception)
    return Path(result.project_path)


@contextmanager
def hooks_in_this_process():
    """cookiecutter runs each hook it rendered as `python <hook>`: a new interpreter that imports
    grpo_template again (~0.3 s of a 0.4 s bake). Inside this block the same rendered hooks run
    in this process instead, from the project's folder, a non-zero exit failing the bake as
    cookiecutter's does. For the bake matrix (253 bakes); every other bake runs its hooks as
    cookiecutter does, as a user's bake does."""
    from cookiecutter import hooks

    def run_script(script_path: str, cwd=".") -> None:
        path, folder = list(sys.path), os.getcwd()
        os.chdir(cwd)
        try:
            runpy.run_path(script_path, run_name="__main__")
        except SystemExit as exit:
            if exit.code not in (None, 0):
                message = f"Hook script failed (exit status: {exit.code})"
                raise hooks.FailedHookException(message) from None
        finally:
            os.chdir(folder)
            sys.path[:] = path

    with mock.patch.object(hooks, "run_script", run_script):
        yield


def run_in(project: Path, *command: str, timeout: int = 600, env: dict | None = None):
    """Run a command inside a baked project (offline, its src/ importable) and return it."""
    environment = {**os.environ, **OFFLINE_ENV, "PYTHONPATH": str(project / "src"), **(env or {})}
    return subprocess.run(
        command, cwd=project, env=environment, capture_output=True, text=True, timeout=timeout
    )


def assert_ok(result: subprocess.CompletedProcess) -> None:
    tail = (result.stdout + result.stderr)[-4000:]
    assert result.returncode == 0, f"exit {result.returncode}: {result.args}\n{tail}"


@pytest.fixture(scope="session")
def default_project(cookies_session) -> Path:
    """The project `cookiecutter --no-input` produces."""
    return bake_ok(cookies_session)


# The longest chains, longest first, then the check that mostly waits for the package index
# (tests/test_stack.py: pip resolving the GPU extras), started while the other suite still
# keeps the cores busy.
FIRST = ("test_unsloth_backend", "test_user_journey", "test_stack")


def deal(items: list, workers: int, long: int) -> list:
    """`items` reordered for pytest-xdist's worksteal (`--dist worksteal`): it hands the first
    len/workers items to one worker, the next share to the next, and a worker that runs out
    steals from the end of another's queue, but never that worker's last two (its running test
    and the next). The `long` items at the front are dealt round-robin, so that each worker's
    share starts with its part of them; the short ones follow in each share, and they are what
    is stolen at the end. Collected in one block, the long tests all fell to one worker, and its
    last long test ran alone while the other worker idled (2 minutes in a run)."""
    shares: list[list] = [[] for _ in range(workers)]
    for number, item in enumerate(items[:long]):
        shares[number % workers].append(item)
    rest = iter(items[long:])
    left = len(items)
    for place, share in enumerate(shares):
        size = left // (workers - place)  # worksteal's own split: what is left, evenly
        share.extend(next(rest) for _ in range(size - len(share)))
        left -= size
    dealt = [item for share in shares for item in share]
    assert len(dealt) == len(items), "a share was dealt more long tests than its size"
    return dealt


def pytest_collection_modifyitems(config, items):
    """The longest tests first (the Unsloth environment's, the user journey, the package index's
    resolution, then the rest of the slow ones: baked projects), dealt among the workers
    (`deal`), so that no long test starts late and ends the run on one worker while the other
    idles. The sort is stable: each module's tests keep their order."""

    def rank(item) -> int:
        for place, module in enumerate(FIRST):
            if module in item.nodeid:
                return place
        return len(FIRST) + (item.get_closest_marker("slow") is None)

    items.sort(key=rank)
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    long = sum(rank(item) <= len(FIRST) for item in items)
    if workers > 1 and long <= len(items) // workers:
        items[:] = deal(items, workers, long)
