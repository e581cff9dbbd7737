"""The kit's manual (`grpo_kit/docs/`, `grpo docs`): it ships inside the package, so a project
reads the manual of the kit it pins, offline; a default it states is the code's (one home per
fact: a table headed `| field | default |` is checked against `ScriptArguments`); its links
resolve; kit/README.md indexes every page."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from grpo_kit.callbacks import health
from grpo_kit.commands import docs
from grpo_kit.recipe import ScriptArguments

PAGES = sorted(docs.DOCS.glob("*.md"))
README = Path(__file__).resolve().parents[1] / "README.md"
# The subprocesses run this kit (the one under test), from a folder that is no project.
ENV = {**os.environ, "PYTHONPATH": str(docs.DOCS.parents[1])}
ROW = re.compile(r"^\| `(\w+)` \| ([^|]+?) \|")


def stated_defaults(text: str) -> list[tuple[str, str]]:
    """(field, default) for each row of the page's `| field | default |` tables."""
    found, inside = [], False
    for line in text.splitlines():
        if line.startswith("| field | default |"):
            inside = True
        elif not line.startswith("|"):
            inside = False
        elif inside and (row := ROW.match(line)):
            found.append(row.groups())
    return found


def test_the_manual_ships_inside_the_package():
    assert docs.DOCS.parent.name == "grpo_kit" and len(PAGES) >= 10
    assert {"commands", "recipe", "rewards", "health", "training"} <= set(docs.topics())


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_every_default_the_manual_states_is_the_kits(page):
    defaults = {f.name: f.default for f in dataclasses.fields(ScriptArguments)}
    for name, stated in stated_defaults(page.read_text(encoding="utf-8")):
        assert name in defaults, f"{page.name}: {name} is no field of ScriptArguments"
        assert yaml.safe_load(stated) == defaults[name], f"{page.name}: {name} {stated}"


def test_the_health_page_states_every_threshold_and_the_sampling_limits():
    """Every health_* field is in the page's defaults table; the vLLM limits it names are
    health.py's."""
    text = (docs.DOCS / "health.md").read_text(encoding="utf-8")
    stated = {name for name, _ in stated_defaults(text)}
    fields = {f.name for f in dataclasses.fields(ScriptArguments) if f.name.startswith("health_")}
    assert fields and fields == stated
    (limits,) = [  # the monitor's limits (a dataclass of health.py, whatever its name)
        {f.name: f.default for f in dataclasses.fields(kind)}
        for kind in vars(health).values()
        if dataclasses.is_dataclass(kind) and "logp_difference_max" in kind.__dataclass_fields__
    ]
    assert f"gap above {limits['logp_difference_max']:g} nats" in text
    low, high = 1 - limits["importance_ratio_tolerance"], 1 + limits["importance_ratio_tolerance"]
    assert f"mean ratio outside {low:g}-{high:g}" in text


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_links_between_pages_resolve(page):
    for target in re.findall(r"\]\(([\w-]+\.md)\)", page.read_text(encoding="utf-8")):
        assert (docs.DOCS / target).is_file(), f"{page.name} -> {target}"


def test_the_kit_readme_indexes_every_page():
    readme = README.read_text(encoding="utf-8")
    for page in PAGES:
        assert f"(src/grpo_kit/docs/{page.name})" in readme, page.name


def run(folder: Path, *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *command], cwd=folder, env=ENV, capture_output=True, text=True, timeout=60
    )


def test_grpo_docs_lists_and_prints_the_topics_anywhere(tmp_path):
    """Outside any project (no pyproject.toml), without loading the training stack."""
    listed = run(tmp_path, "-m", "grpo_kit", "docs")
    assert listed.returncode == 0, listed.stderr
    for topic in docs.topics():
        assert f"  {topic} " in listed.stdout, topic
    shown = run(tmp_path, "-m", "grpo_kit", "docs", "health")
    assert shown.returncode == 0 and shown.stdout == (docs.DOCS / "health.md").read_text()
    path = run(tmp_path, "-m", "grpo_kit", "docs", "--path", "health")
    assert path.stdout.strip() == str(docs.DOCS / "health.md")
    code = "import sys; from grpo_kit import cli; cli.main(['docs']); print('torch' in sys.modules)"
    quiet = run(tmp_path, "-c", code)
    assert quiet.stdout.strip().endswith("False"), quiet.stdout[-500:] + quiet.stderr[-500:]


def test_an_unknown_topic_is_one_error_line_naming_the_topics(tmp_path):
    result = run(tmp_path, "-m", "grpo_kit", "docs", "helth")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: no topic 'helth' in the manual: choose one of {', '.join(docs.topics())}"
    ]
