"""A new user's journey, walked as the READMEs tell it: generate with the README's `cookiecutter
... --no-input`, install in a fresh virtual environment, bring your own data (other column
names) and a reward module (added to task.py's table), then smoke, the recipe in force,
reward-debug, the CPU trial, evaluate / report / infer on the smoke run, the project's own
`make test`, and `cruft update` to another tier (the project carries the .cruft.json cruft
reads). Every step must pass as documented."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import assert_ok, run_in
from test_cruft import GIT, cookiecutter_generated, cruft, template_repository

pytestmark = pytest.mark.slow

MY_DATA = [
    {"q": f"Tom has {n} apples and buys {n + 3} more. How many apples does he have?",
     "a": f"He has {n} + {n + 3} = {2 * n + 3}.\n#### {2 * n + 3}"}
    for n in range(1, 25)
]  # fmt: skip
MY_REWARD = '''"""My own reward: short answers score 1."""

from grpo_kit.rewards import reward


@reward(low=0.0, high=1.0)
def brevity(completion: str, **row) -> float:
    return 1.0 if len(completion) < 400 else 0.0
'''
MY_SETTINGS = """# my data (the template never writes this file)
dataset_name: data/mine.jsonl
prompt_column: q
answer_column: a
dataset_test_split: train
"""


def add_my_reward(task: Path) -> None:
    """My reward joins the task's table in task.py, the one home of the rewards and weights."""
    text = task.read_text(encoding="utf-8")
    for old, new in (
        ("from . import rewards\n", "from . import my_rewards, rewards\n"),
        ("    ),\n    user_message=", '        Reward(my_rewards.brevity, 0.2, "short"),\n    ),\n'
         "    user_message="),
    ):  # fmt: skip
        assert old in text, old
        text = text.replace(old, new, 1)
    task.write_text(text, encoding="utf-8")


def make(project: Path, python: str, env: dict, *targets: str, timeout: int = 1500):
    return run_in(project, "make", *targets, f"PYTHON={python}", env=env, timeout=timeout)


def test_user_journey_with_own_data_then_regenerate_for_another_tier(tmp_path):
    project = cookiecutter_generated(tmp_path, template_repository(tmp_path))

    # The README's install, in a fresh virtual environment (it sees the packages installed here,
    # so pip resolves the pins without downloading; the project and its scripts install for real).
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    env = {"PATH": f"{venv / 'bin'}:{os.environ['PATH']}", "PYTHONPATH": ""}
    assert_ok(make(project, python, env, "install"))
    assert (venv / "bin" / "grpo").is_file()  # grpo-kit, installed from the template's kit/
    assert_ok(run_in(project, str(venv / "bin" / "grpo"), "--help", env=env))
    readme = (project / "README.md").read_text(encoding="utf-8")
    for target in ("smoke", "recipe", "reward-debug", "try", "evaluate", "report", "infer", "test"):
        assert f"`{target}`" in readme, target  # each target this journey runs is documented

    # My data (other column names), my reward module, my settings.
    with (project / "data" / "mine.jsonl").open("w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(row) + "\n" for row in MY_DATA)
    (project / "src/my_grpo_project/my_rewards.py").write_text(MY_REWARD)
    add_my_reward(project / "src/my_grpo_project/task.py")
    (project / "configs/local.yaml").write_text(MY_SETTINGS)
    smoke_before = project / "outputs" / "smoke" / "keep-me.txt"  # tests never touch outputs/

    smoke = make(project, python, env, "smoke")
    assert_ok(smoke)
    assert "smoke passed" in smoke.stdout
    assert "which src/my_grpo_project/task.py owns" not in smoke.stderr  # nothing shadows it
    explained = make(project, python, env, "recipe")
    assert_ok(explained)
    assert "# src/my_grpo_project/task.py" in explained.stdout
    assert "brevity" in explained.stdout and "dataset_name: data/mine.jsonl" in explained.stdout
    smoke_before.write_text("mine")
    debug = make(project, python, env, "reward-debug")
    assert_ok(debug)
    assert "brevity" in debug.stdout
    trial = make(project, python, env, "try")
    assert_ok(trial)
    assert (project / "outputs/trial/run_record.json").is_file()
    record = json.loads((project / "outputs/trial/run_record.json").read_text())
    assert record["recipe"]["dataset_name"] == "data/mine.jsonl"  # the trial ran on my data
    for target in ("evaluate", "report", "infer"):
        result = make(project, python, env, target, "SMOKE=1")
        assert_ok(result)
        assert "Traceback" not in result.stderr, target
    # evaluate scored my file's held-out rows, which the smoke run (trained on the rest) never saw
    report = (project / "outputs/smoke/eval/report.md").read_text()
    assert "held-out prompts" in report and "TRAINING data" not in report

    # The project's own tests pass with my data and reward in place, and leave outputs/ alone.
    tests = make(project, python, env, "test", timeout=2400)
    assert_ok(tests)
    assert smoke_before.read_text() == "mine"

    # Regenerate for another tier with cruft (the project carries its .cruft.json): my files
    # stay, the recipe follows the new tier.
    for step in (["add", "-A"], ["commit", "-qm", "mine"]):
        assert_ok(subprocess.run([*GIT, *step], cwd=project, capture_output=True, text=True))
    update = cruft(project, "update", "--variables-to-update", '{"gpu_tier": "48GB"}', "-y")
    assert_ok(update)
    assert (project / "configs/local.yaml").read_text() == MY_SETTINGS
    assert "48GB" in (project / "configs/grpo.yaml").read_text()
    recipe_tests = run_in(
        project, python, "-m", "pytest", "-q", "tests/test_project.py", "-k", "recipe", env=env
    )
    assert_ok(recipe_tests)
