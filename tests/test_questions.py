"""cookiecutter.json is generated from the catalog, tiers and tasks and must not drift."""

import json

from conftest import ROOT

from grpo_template import answers, catalog, questions, tasks, tiers


def test_cookiecutter_json_is_generated():
    committed = (ROOT / "cookiecutter.json").read_text(encoding="utf-8")
    assert committed == questions.render(), "run: python -m grpo_template.questions --write"


def test_choices_match_the_knowledge_modules():
    data = json.loads((ROOT / "cookiecutter.json").read_text(encoding="utf-8"))
    assert data["model"][0] == catalog.DEFAULT_MODEL
    assert set(data["model"]) == {*catalog.CATALOG, catalog.CUSTOM}
    assert set(data["gpu_tier"]) == set(tiers.TIERS) and data["gpu_tier"][0] == tiers.DEFAULT_TIER
    assert set(data["task_type"]) == set(tasks.TASKS)
    assert data["backend"] == list(answers.BACKENDS)
    assert data["tracker"] == list(answers.TRACKERS)


def test_every_question_has_a_readable_prompt():
    data = json.loads((ROOT / "cookiecutter.json").read_text(encoding="utf-8"))
    prompts = data["__prompts__"]
    for key in data:
        if not key.startswith("_"):
            assert key in prompts, key
    for key, options in prompts.items():
        if isinstance(options, dict):
            for choice in data[key]:
                assert choice in options, (key, choice)


def test_example_prompts_fit_on_one_generated_line():
    """They are placed in project.py as `EXAMPLE_PROMPT = "..."` (ruff's limit is 100)."""
    from grpo_template.tasks import TASKS

    for task in TASKS.values():
        assert len(f"EXAMPLE_PROMPT = {task.example_prompt!r}") <= 100, task.name


def _spawn_cookiecutter(tmp_path):
    import os
    import sys

    import pexpect

    env = {**os.environ, "TERM": "dumb", "NO_COLOR": "1"}
    command = ["-m", "cookiecutter", str(ROOT), "-o", str(tmp_path / "out")]
    return pexpect.spawn(sys.executable, command, env=env, encoding="utf-8", timeout=120)


def test_a_model_that_cannot_fit_is_refused_before_the_remaining_questions(tmp_path):
    """Interactively, as a user answers: a 7B model on the cpu tier is refused in one line right
    after the tier question (not after all of them), without a traceback, writing nothing."""
    import pexpect

    data = json.loads((ROOT / "cookiecutter.json").read_text(encoding="utf-8"))
    model = data["model"].index("Qwen/Qwen2.5-7B-Instruct") + 1
    tier = data["gpu_tier"].index("cpu") + 1
    child = _spawn_cookiecutter(tmp_path)
    for _ in range(3):  # project name, slug, package: the defaults
        child.expect(r"\]: |\): ")
        child.sendline("")
    child.expect("Choose from")
    child.sendline(str(model))
    for _ in range(2):  # custom model id and size: not asked about, defaults
        child.expect(r"\]: |\): ")
        child.sendline("")
    child.expect("Choose from")  # task
    child.sendline("")
    child.expect("Choose from")  # tier
    child.sendline(str(tier))
    child.expect(pexpect.EOF)
    output = child.before
    child.close()
    assert child.exitstatus == 1, output
    errors = [line for line in output.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1 and "does not fit the cpu tier" in errors[0], output
    assert "16GB" in errors[0]  # every tier that fits is suggested (QLoRA on a 16 GB GPU)
    assert "Traceback" not in output and "Training backend" not in output
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_bad_combination_is_one_line_without_a_traceback(tmp_path):
    """Combinations only the last answers reveal (unsloth on several GPUs, a GPU count on a
    one-GPU tier, the custom id's placeholder) are refused in one line before any file."""
    import subprocess
    import sys

    for given in (
        ["backend=unsloth", "gpu_tier=multi-gpu"],
        ["gpu_tier=24GB", "num_gpus=4"],
        ["model=custom"],
    ):
        out = tmp_path / given[0]
        command = [sys.executable, "-m", "cookiecutter", str(ROOT), "--no-input", "-o", str(out)]
        result = subprocess.run([*command, *given], capture_output=True, text=True)
        errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR:")]
        assert result.returncode == 1 and len(errors) == 1, (given, result.stderr)
        assert "Traceback" not in result.stderr, result.stderr
        assert not out.exists() or not any(out.iterdir())
