"""Regenerating with cruft: `cruft create`, then `cruft update` to another task keeps the
user's own files (a reward module, configs/local.yaml) and brings the new task's files."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, assert_ok, run_in

pytestmark = pytest.mark.slow

GIT = ["git", "-c", "user.name=test", "-c", "user.email=test@example.com"]

MY_REWARD = '''"""My own reward: the template never writes this file."""

from .base import reward


@reward(low=0.0, high=1.0)
def brevity(completion: str, **row) -> float:
    return 1.0 if len(completion) < 200 else 0.0
'''
MY_OVERRIDES = "max_steps: 7  # mine\nlearning_rate: 3.0e-05\n"


def git(folder: Path, *args: str) -> None:
    assert_ok(subprocess.run([*GIT, *args], cwd=folder, capture_output=True, text=True))


def template_repository(tmp_path: Path) -> Path:
    """This working tree (committed or not) as a git repository, as cruft reads templates."""
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    copy = tmp_path / "template"
    for name in files:
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    git(copy, "init", "-q")
    git(copy, "add", "-A")
    git(copy, "commit", "-qm", "template")
    return copy


def cruft_created(tmp_path: Path) -> Path:
    """`cruft create` of this template with its defaults, committed in a new git repository."""
    template = template_repository(tmp_path)
    out = tmp_path / "projects"
    out.mkdir()
    assert_ok(cruft(out, "create", str(template), "--no-input"))
    project = out / "my-grpo-project"
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "generated")
    return project


def cruft(folder: Path, *args: str):
    return subprocess.run(
        [sys.executable, "-m", "cruft", *args], cwd=folder, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip


def interactive_update(project: Path, variables: str, answers: tuple[str, ...]) -> str:
    """`cruft update` in a pseudo-terminal, answering its "Apply diff and update?" prompt in
    turn (the path `-y` skips, where an incompatible typer once crashed); returns the output."""
    import os

    import pexpect

    env = {**os.environ, "GIT_PAGER": "cat", "PAGER": "cat", "TERM": "dumb"}
    command = ["-m", "cruft", "update", "--variables-to-update", variables]
    child = pexpect.spawn(sys.executable, command, cwd=str(project), env=env, encoding="utf-8",
                          timeout=600)  # fmt: skip
    output = []
    for answer in answers:
        child.expect("Apply diff and update")
        output.append(child.before)
        child.sendline(answer)
    child.expect(pexpect.EOF)
    output.append(child.before)
    child.close()
    transcript = "".join(output)
    assert child.exitstatus == 0, transcript[-3000:]
    return transcript


def test_cruft_update_to_another_task_keeps_user_files(tmp_path):
    project = cruft_created(tmp_path)
    record = json.loads((project / ".cruft.json").read_text())
    assert record["context"]["cookiecutter"]["task_type"] == "math"
    (project / "src/my_grpo_project/rewards/my_rewards.py").write_text(MY_REWARD)
    (project / "configs/local.yaml").write_text(MY_OVERRIDES)
    readme = project / "README.md"  # an edit to a generated file, on lines the update keeps
    readme.write_text(readme.read_text().replace("## Quick start", "## Quick start (my notes)"))
    git(project, "add", "-A")
    git(project, "commit", "-qm", "my changes")

    # As a user runs it: at the prompt, "v" shows the diff, then "y" applies it.
    transcript = interactive_update(project, '{"task_type": "code"}', answers=("v", "y"))
    assert "diff --git" in transcript and "Traceback" not in transcript
    assert "cruft has been updated" in transcript

    package = project / "src/my_grpo_project"
    assert (package / "rewards/my_rewards.py").read_text() == MY_REWARD
    assert (project / "configs/local.yaml").read_text() == MY_OVERRIDES
    assert "## Quick start (my notes)" in readme.read_text()  # merged, not overwritten
    assert (package / "tasks/code_task.py").is_file()
    assert (package / "sandbox/__init__.py").is_file()
    assert not (package / "tasks/math_task.py").exists()
    assert (
        json.loads((project / ".cruft.json").read_text())["context"]["cookiecutter"]["task_type"]
        == "code"
    )
    check = (
        "from my_grpo_project.config import parse_recipe\n"
        "from my_grpo_project.rewards import REGISTRY\n"
        "r = parse_recipe(['--use_cpu', 'true'])\n"
        "print(r.training.max_steps, 'brevity' in REGISTRY, 'code_correctness' in REGISTRY)\n"
    )
    result = run_in(project, sys.executable, "-c", check)
    assert_ok(result)
    assert result.stdout.split() == ["7", "True", "True"]
    tests = run_in(project, sys.executable, "-m", "pytest", "-q", "tests/test_code_rewards.py")
    assert_ok(tests)


def test_cruft_update_to_and_from_the_tools_task(tmp_path):
    """The agent task's files (environments, sandbox, corpus) come with it and go with it."""
    project = cruft_created(tmp_path)
    package = project / "src/my_grpo_project"
    for task, present, absent in (
        ("tools", "environments/lookup_env.py", "tasks/math_task.py"),
        ("math", "tasks/math_task.py", "environments/lookup_env.py"),
    ):
        variables = json.dumps({"task_type": task})
        update = ["update", "--skip-apply-ask", "--variables-to-update", variables]
        assert_ok(cruft(project, *update))
        assert (package / present).is_file() and not (package / absent).exists(), task
        assert (project / "data/sample_corpus.jsonl").is_file() == (task == "tools")
        git(project, "add", "-A")
        git(project, "commit", "-qm", f"to {task}")
    check = "from my_grpo_project.tasks import TASK; print(TASK.name)"
    result = run_in(project, sys.executable, "-c", check)
    assert_ok(result)
    assert result.stdout.split() == ["math"]
