"""cookiecutter.json is generated from the catalog, tiers and tasks and must not drift."""

import json

import pytest
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


def test_example_prompts_survive_the_makefile_and_the_shell():
    """The Makefile's PROMPT is empty by default: `make infer` then asks the example `grpo infer`
    builds from the recipe's data (your first row and labels once configs/local.yaml names
    them, issue 41), never a sample prompt baked in at generation. A task's example stays
    plain text (no `#`, `$`, `"`, `` ` ``, `\\`, line ends), so it reads the same pasted into
    `make infer PROMPT="..."`, which `shell_quote` quotes (tests/test_makefile_quoting.py)."""
    makefile = (ROOT / "{{cookiecutter.project_slug}}" / "Makefile").read_text(encoding="utf-8")
    assert "PROMPT ?=#" in makefile and 'grpo("example_prompt")' not in makefile
    assert "$(if $(PROMPT),--prompt $(PROMPT))" in makefile
    assert "override PROMPT := $(call shell_quote,$(PROMPT))" in makefile
    for task in tasks.TASKS.values():
        prompt = task.example_prompt
        assert prompt.strip() and not set(prompt) & set('#$"`\\\n'), task.name


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


def _answer(child, replies) -> None:
    """Answer questions in turn: ("text", reply) at a text prompt, ("choice", reply) at a
    choice's "Choose from" prompt ("" takes the default)."""
    for kind, reply in replies:
        child.expect(r"\]: |\): " if kind == "text" else "Choose from")
        if kind == "choice":
            child.expect(r"\]: |\): ")
        child.sendline(reply)


def _refused_at_once(child, tmp_path, next_prompt: str) -> str:
    """The last answer was refused before the next question: exit 1, one ERROR line, no
    traceback, no file written; returns that line."""
    import pexpect

    child.expect(pexpect.EOF)
    output = child.before
    child.close()
    assert child.exitstatus == 1, output
    errors = [line for line in output.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1, output
    assert next_prompt not in output and "Traceback" not in output, output
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    return errors[0]


# Defaults up to the model's size: name, slug, package, model, custom id, custom size.
TO_THE_TASK = [("text", "")] * 3 + [("choice", "")] + [("text", "")] * 2


@pytest.mark.parametrize(
    ("reply", "words"),
    [(" ", "project_name is empty: give the project a name"), ("{{ 7 }}", "is not allowed")],
)
def test_a_bad_project_name_is_refused_right_after_its_question(tmp_path, reply, words):
    """A blank (space) name is refused before the slug question, saying it is empty."""
    child = _spawn_cookiecutter(tmp_path)
    _answer(child, [("text", reply)])
    error = _refused_at_once(child, tmp_path, next_prompt="Project folder and distribution name")
    assert words in error, error


@pytest.mark.parametrize(
    ("reply", "words"),
    [(" ", "project_slug is empty"), ("My Slug!", "project_slug 'My Slug!' is not valid")],
)
def test_a_bad_slug_is_refused_right_after_its_question(tmp_path, reply, words):
    child = _spawn_cookiecutter(tmp_path)
    _answer(child, [("text", ""), ("text", reply)])
    error = _refused_at_once(child, tmp_path, next_prompt="Python package name")
    assert words in error and "e.g. project_slug=my-grpo-project" in error, error


def test_a_bad_package_name_is_refused_right_after_its_question(tmp_path):
    child = _spawn_cookiecutter(tmp_path)
    _answer(child, [("text", ""), ("text", ""), ("text", "json")])
    error = _refused_at_once(child, tmp_path, next_prompt="Base model to fine-tune")
    assert "would shadow the 'json' module" in error, error


def test_a_gpu_count_on_a_one_gpu_tier_is_refused_right_after_it(tmp_path):
    """num_gpus is asked on every tier (Cookiecutter cannot skip a question): 4 on the default
    24GB tier is refused before the node question, telling the user what to answer."""
    data = json.loads((ROOT / "cookiecutter.json").read_text(encoding="utf-8"))
    assert data["gpu_tier"][0] == "24GB"
    child = _spawn_cookiecutter(tmp_path)
    _answer(child, [*TO_THE_TASK, ("choice", ""), ("choice", ""), ("text", "4")])
    error = _refused_at_once(child, tmp_path, next_prompt="Number of nodes")
    assert "num_gpus '4' does not apply to the 24GB tier: this tier has one GPU: answer 1" in error
    assert "leave num_gpus out" not in error


def test_the_tools_task_is_refused_for_its_model_right_after_the_task_question(tmp_path):
    data = json.loads((ROOT / "cookiecutter.json").read_text(encoding="utf-8"))
    model = str(data["model"].index("google/gemma-3-1b-it") + 1)
    task = str(data["task_type"].index("tools") + 1)
    child = _spawn_cookiecutter(tmp_path)
    replies = [("text", "")] * 3 + [("choice", model)] + [("text", "")] * 2 + [("choice", task)]
    _answer(child, replies)
    error = _refused_at_once(child, tmp_path, next_prompt="GPU tier")
    assert "task_type=tools is not offered for google/gemma-3-1b-it" in error, error


def test_every_answer_check_follows_its_question():
    """Each check key sits right after its question in cookiecutter.json (Cookiecutter renders
    it as soon as that question is answered), and every check key names a question."""
    from grpo_template.answers import CHECKS_AFTER

    keys = list(json.loads((ROOT / "cookiecutter.json").read_text(encoding="utf-8")))
    for question in CHECKS_AFTER:
        assert keys[keys.index(question) + 1] == questions.checked_key(question), question
    checks = [k for k in keys if k.startswith("__") and k.endswith("_checked")]
    assert len(checks) == len(CHECKS_AFTER) + 1  # and the final one, after the last answer


def test_a_record_made_before_the_answer_checks_still_replays(tmp_path):
    """A project's .cookiecutter.json from before the per-question checks lacks their keys: a
    replay renders those without the template's extension, where they read as nothing."""
    import subprocess
    import sys

    from grpo_template.answers import CHECKS_AFTER

    base = [sys.executable, "-m", "cookiecutter", str(ROOT)]
    first = subprocess.run([*base, "--no-input", "-o", str(tmp_path / "first")],
                           capture_output=True, text=True, timeout=600)  # fmt: skip
    assert first.returncode == 0, first.stderr
    record = json.loads((tmp_path / "first/my-grpo-project/.cookiecutter.json").read_text())
    for question in CHECKS_AFTER:
        del record["cookiecutter"][questions.checked_key(question)]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(record))
    again = subprocess.run([*base, "--replay-file", str(old), "-o", str(tmp_path / "again")],
                           capture_output=True, text=True, timeout=600)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "again/my-grpo-project/configs/grpo.yaml").is_file()
