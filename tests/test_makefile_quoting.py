"""The generated Makefile passes what you set (PROMPT, MODEL, RUN_DIR, RECIPE, ENGINE, ARGS) to
its commands as arguments, never as shell text: a prompt pasted from data that holds `; touch x`
ran `touch x` (issue 39). Real make runs each target in a baked project with PYTHON set to a
program that prints the arguments it got; nothing may be created, and each value arrives as one
argument."""

import json
import sys

import pytest
from conftest import assert_ok, run_in

HOSTILE = [
    "2+2; touch pwned-semicolon",
    "$$(touch pwned-dollar)",
    "`touch pwned-backtick`",
    'it\'s "quoted" && touch pwned-and | cat > pwned-redirect #',
]


ARGV = f"{sys.executable} -c 'import json, sys; print(json.dumps(sys.argv[1:]))'"


def make(project, *arguments) -> list[str]:
    """The arguments the target's command got (after `-m grpo_kit <command>`)."""
    result = run_in(project, "make", "--no-print-directory", *arguments, f"PYTHON={ARGV}")
    assert_ok(result)
    return json.loads(result.stdout.strip().splitlines()[-1])


def created(project) -> list[str]:
    return sorted(p.name for p in project.iterdir() if p.name.startswith("pwned"))


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_values_reach_the_commands_as_one_argument(default_project, value):
    shown = value.replace("$$", "$")  # make reads `$$` as one `$`
    words = make(default_project, "infer", f"PROMPT={value}", f"RUN_DIR={value}")
    assert words[words.index("--prompt") + 1] == shown
    assert words[words.index("--model") + 1] == f"{shown}/merged"
    words = make(default_project, "preflight", f"MODEL={value}", f"RECIPE={value}")
    assert words[words.index("--model_name_or_path") + 1] == shown
    assert words[words.index("--config") + 1] == shown
    words = make(default_project, "export", f"ENGINE={value}")
    assert words[words.index("--engine") + 1] == shown
    words = make(default_project, "train", f"ARGS=--max_steps 5 {value}")
    assert words[-len(shown.split()) - 2 :] == ["--max_steps", "5", *shown.split()]
    assert created(default_project) == []


def test_infer_without_prompt_lets_the_recipe_choose(default_project):
    """No PROMPT: no --prompt, so `grpo infer` asks the recipe's data's example (issue 41)."""
    assert "--prompt" not in make(default_project, "infer")


def test_ordinary_values_are_written_as_they_are(default_project):
    """Plain values stay unquoted (what `make -n` shows reads as before)."""
    shown = run_in(default_project, "make", "-n", "--no-print-directory", "merge",
                   "RUN_DIR=outputs/run-1", "ARGS=--max_steps 5", "PYTHON=python")  # fmt: skip
    assert_ok(shown)
    assert shown.stdout.split() == [
        "python", "-m", "grpo_kit", "merge", "outputs/run-1", "--config", "configs/grpo.yaml",
        "--max_steps", "5",
    ]  # fmt: skip


def test_make_real_model_runs_the_kits_builder(default_project):
    """Issue 40: every project builds the real model with one documented target, which installs
    the `gguf` package the build needs when it is missing."""
    assert make(default_project, "real-model") == [
        "-m", "grpo_kit", "real-model", "--install-missing",
    ]  # fmt: skip
    makefile = (default_project / "Makefile").read_text(encoding="utf-8")
    phony = next(line for line in makefile.splitlines() if line.startswith(".PHONY: help"))
    assert "real-model" in phony.split()
    from grpo_kit import cli

    assert cli.COMMANDS["real-model"][:2] == ("offline.real_model", "main")
