"""The generated README describes its project (task, rewards, data, commands, tier) in at most
200 lines; the kit's manual lives with the kit (`grpo docs`), and the README points at it.

Bakes a few projects with the hooks in this process (conftest.hooks_in_this_process): each task
type on the tier whose README is longest (multi-node: its launch notes and files), and each task
with the Unsloth backend."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ROOT, hooks_in_this_process
from matrix import VALID, name

from grpo_template import kit, tasks

MAX_LINES = 200
DOCS = kit.KIT_SOURCE / "grpo_kit" / "docs"


def _first(**wanted) -> dict | None:
    return next((c for c in VALID if all(c[k] == v for k, v in wanted.items())), None)


# Each task on multi-node (the longest README: its launch notes and files), and each task the
# Unsloth backend takes (not the tools task: refused with Unsloth) with it.
COMBOS = [
    *(_first(task_type=t, gpu_tier="multi-node", backend="transformers") for t in tasks.TASKS),
    *filter(None, (_first(task_type=t, backend="unsloth") for t in tasks.TASKS)),
]


@pytest.fixture(scope="module")
def readmes(tmp_path_factory) -> dict[str, Path]:
    from cookiecutter.main import cookiecutter

    out = tmp_path_factory.mktemp("readme-bakes")
    projects = {}
    for combo in COMBOS:
        with hooks_in_this_process():
            project = cookiecutter(
                str(ROOT), no_input=True, extra_context=combo, output_dir=str(out / name(combo)),
                default_config=True,
            )  # fmt: skip
        projects[name(combo)] = Path(project)
    return projects


def test_the_bakes_cover_every_task_a_multi_gpu_tier_and_both_backends():
    assert {c["task_type"] for c in COMBOS} == set(tasks.TASKS)
    assert len([c for c in COMBOS if c["backend"] == "unsloth"]) >= 5
    assert "multi-node" in {c["gpu_tier"] for c in COMBOS}


@pytest.mark.parametrize("combo", COMBOS, ids=name)
def test_the_generated_readme_is_at_most_200_lines(readmes, combo):
    lines = (readmes[name(combo)] / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"{name(combo)}: {len(lines)} lines"


@pytest.mark.parametrize("combo", COMBOS, ids=name)
def test_the_readme_documents_every_make_target(readmes, combo):
    """Each target of the project's Makefile is in the README's commands table."""
    project = readmes[name(combo)]
    makefile = (project / "Makefile").read_text(encoding="utf-8")
    targets = re.findall(r"^([a-z][\w-]*):.*## ", makefile, re.M)
    assert "train" in targets and "smoke" in targets
    readme = (project / "README.md").read_text(encoding="utf-8")
    missing = [t for t in targets if t != "help" and f"`{t}`" not in readme]
    assert not missing, missing


@pytest.mark.parametrize("combo", COMBOS, ids=name)
def test_the_rewards_are_named_without_weights_that_would_go_stale(readmes, combo):
    """The rewards table names each reward and what it checks; the weights' one home is
    task.py, and the README says so and names `grpo recipe --explain`."""
    readme = (readmes[name(combo)] / "README.md").read_text(encoding="utf-8")
    for reward in tasks.TASKS[combo["task_type"]].rewards:
        assert f"| `{reward.name}` | {reward.why} |" in readme, reward.name
    assert "| reward | what it checks |" in readme
    assert "reward_weights" not in readme
    assert "`TASK.rewards`" in readme and "grpo recipe --explain" in readme
    assert "configs/local.yaml" in readme


@pytest.mark.parametrize("combo", COMBOS, ids=name)
def test_the_readme_points_at_the_manual_of_the_pinned_kit(readmes, combo):
    """Every topic the README lists is a page of the kit's manual (`grpo docs TOPIC`), and the
    version it names is the one the project pins."""
    project = readmes[name(combo)]
    readme = (project / "README.md").read_text(encoding="utf-8")
    manual = readme.split("## The manual", 1)[1]
    topics = re.findall(r"^\| `([\w-]+)` \|", manual, re.M)
    assert "health" in topics and "commands" in topics
    for topic in topics:
        assert (DOCS / f"{topic}.md").is_file(), topic
    assert f"v{kit.VERSION}" in manual and "grpo docs" in manual
    extras = tasks.TASKS[combo["task_type"]].kit_extras  # the procedural task's: [procedural]
    pin = kit.requirement(extras)
    assert pin in (project / "pyproject.toml").read_text(encoding="utf-8") and pin in readme


def test_a_default_project_has_no_train_script_to_document(readmes):
    """Design decision 2: the README offers `grpo eject` and lists no train.py of its own."""
    for project in readmes.values():
        readme = (project / "README.md").read_text(encoding="utf-8")
        assert "grpo eject" in readme
        assert "train.py" not in readme and "merge.py" not in readme
