"""Every module entry point (`python -m grpo_kit...`: a package's `__main__.py`, or a module with
an `if __name__ == "__main__":` block) behaves like a command: `--help` prints argparse's help,
exits 0 and writes nothing; an unknown option exits 2 with an `error:` line, no traceback, and
writes nothing. The real-model builder once read `--help` as its cache folder and spent a
minute writing 517 MB into `./--help/` (issue 40); the sandbox's harness answered `--help` with
a traceback.

Each runs as a subprocess in a copy of a project (the commands that read one find it), with the
kit's cache in a folder of its own that must stay empty."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import grpo_kit
import pytest

PACKAGE = Path(grpo_kit.__file__).resolve().parent
MAIN_BLOCK = re.compile(r"^if __name__ == [\"']__main__[\"']:", re.M)
UNKNOWN = "--no-such-option-here"


def entry_points() -> list[str]:
    """The modules `python -m` runs: packages with a __main__.py, modules with a main block."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if path.name == "__main__.py":
            found.append(".".join(parts[:-1]))
        elif MAIN_BLOCK.search(path.read_text(encoding="utf-8")):
            found.append(".".join(parts[:-1] if path.name == "__init__.py" else parts))
    return found


ENTRY_POINTS = entry_points()


def test_the_walk_finds_the_entry_points():
    """A walk that found none would check nothing."""
    assert {
        "grpo_kit", "grpo_kit.cli", "grpo_kit.offline.real_model", "grpo_kit.sandbox.harness",
        "grpo_kit.commands.warmup", "grpo_kit.starters.scripts.train",
    } <= set(ENTRY_POINTS)  # fmt: skip


def files_under(root: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under `root`: (size, modification time)."""
    found = {}
    for path in root.rglob("*"):
        if "__pycache__" in path.parts:
            continue
        stat = path.stat()
        found[str(path.relative_to(root))] = (
            stat.st_size if path.is_file() else 0,
            stat.st_mtime_ns,
        )
    return found


@pytest.fixture(scope="module")
def sandbox(projects, tmp_path_factory) -> tuple[Path, dict]:
    """(a copy of the math project, the environment: this kit first, its own empty cache)."""
    root = tmp_path_factory.mktemp("entry-points")
    project = root / "project"
    shutil.copytree(projects("math"), project, ignore=shutil.ignore_patterns("outputs"))
    cache = root / "cache"
    cache.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(PACKAGE.parent), os.environ.get("PYTHONPATH")])
        ),  # fmt: skip
        "GRPO_KIT_CACHE": str(cache),
        "XDG_CACHE_HOME": str(cache),
        "HF_HUB_OFFLINE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    return project, env


def run_module(module: str, argument: str, sandbox) -> tuple[subprocess.CompletedProcess, dict]:
    project, env = sandbox
    cache = Path(env["GRPO_KIT_CACHE"])
    before = files_under(project)
    done = subprocess.run(
        [sys.executable, "-m", module, argument],
        cwd=project, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    after = files_under(project)
    written = {
        "project": sorted(k for k in after.keys() | before.keys() if after.get(k) != before.get(k)),
        "cache": sorted(str(p.relative_to(cache)) for p in cache.rglob("*")),
    }
    return done, written


@pytest.mark.slow
@pytest.mark.parametrize("module", ENTRY_POINTS)
def test_help_prints_the_help_exits_0_and_writes_nothing(module, sandbox):
    done, written = run_module(module, "--help", sandbox)
    shown = f"{done.stdout[-1500:]}\n{done.stderr[-1500:]}"
    assert done.returncode == 0, shown
    assert done.stdout.startswith("usage: "), shown
    assert "-h, --help" in done.stdout and "Traceback" not in done.stderr, shown
    assert written == {"project": [], "cache": []}


@pytest.mark.slow
@pytest.mark.parametrize("module", ENTRY_POINTS)
def test_an_unknown_option_exits_2_with_one_error_and_writes_nothing(module, sandbox):
    done, written = run_module(module, UNKNOWN, sandbox)
    shown = f"{done.stdout[-1500:]}\n{done.stderr[-1500:]}"
    assert done.returncode == 2, shown
    assert "Traceback" not in done.stderr, shown
    last = done.stderr.strip().splitlines()[-1]
    assert "error:" in last, shown
    assert written == {"project": [], "cache": []}
