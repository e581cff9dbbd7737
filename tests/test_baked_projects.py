"""Baked projects run their own test suites and pipelines, offline, as a user would run them."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SHARED, assert_ok, bake_ok, run_in

pytestmark = pytest.mark.slow

TASKS = ("math", "code", "json", "classification", "custom")
TIERS = ("24GB", "cpu", "16GB", "48GB", "80GB", "141GB", "multi-gpu", "multi-node")
# Every task with every tier (other answers at their defaults): `make test` and `make smoke`.
GRID = {f"{task}-{tier}": {"task_type": task, "gpu_tier": tier} for task in TASKS for tier in TIERS}
# One model of every other architecture family (different LoRA targets, a multimodal tower, a
# custom id): the smoke run trains, merges and reloads the tiny model of that family.
FAMILIES = {
    "qwen3-thinking": {"model": "Qwen/Qwen3-1.7B", "gpu_tier": "16GB"},
    "llama": {"model": "meta-llama/Llama-3.2-1B-Instruct", "tracker": "tensorboard"},
    "gemma3-text": {"model": "google/gemma-3-1b-it"},
    "gemma3-multimodal": {"model": "google/gemma-3-4b-it", "gpu_tier": "48GB"},
    "phi3-fused-projections": {"model": "microsoft/Phi-4-mini-instruct", "gpu_tier": "80GB"},
    "custom": {
        "model": "custom",
        "custom_model_id": "mistralai/Mistral-7B-Instruct-v0.3",
        "custom_model_params_b": "7.2",
        "gpu_tier": "141GB",
    },
}


def make(project: Path, target: str, python: str = sys.executable, env=None, extra=()):
    return run_in(project, "make", target, f"PYTHON={python}", *extra, timeout=900, env=env)


def check_smoke_output(project: Path, result) -> None:
    assert_ok(result)
    merged = project / "outputs" / "smoke" / "merged"
    assert (merged / "config.json").is_file() and (merged / "model.safetensors").is_file()
    assert "merge check passed" in result.stdout
    completion = result.stdout.split("### completion", 1)[1]
    assert completion.strip(), "inference printed no text"


def test_default_project_lint(default_project):
    assert_ok(make(default_project, "lint"))


# The tests a tier changes: the recipe it renders, the doctor's checks and (multi-GPU) the launch
# plan. Full fine-tuning or LoRA, also chosen by the tier, is covered by `make smoke` everywhere
# and by the math project's suite on every tier.
TIER_TESTS = ["tests/test_recipe.py", "tests/test_doctor.py"]


def make_test_arguments(task: str, tier: str) -> list[str]:
    """What `make test` runs for this grid cell (each suite costs 20-100 s of a worker)."""
    multi = tier in ("multi-gpu", "multi-node")
    if tier == "24GB":  # every task's whole suite; the 2-process DDP test once
        return [] if task == "math" else ['ARGS=-m "not distributed"']
    if task == "math":  # the math project's suite on every tier, without slow tests
        return ['ARGS=-m "distributed or not slow"' if multi else 'ARGS=-m "not slow"']
    files = [*TIER_TESTS, "tests/test_launch.py"] if multi else TIER_TESTS
    return [f'ARGS={" ".join(files)} -m "not slow"']


@pytest.mark.parametrize("variant", list(GRID))
def test_every_task_and_tier_passes_make_test_and_make_smoke(cookies, variant):
    project = bake_ok(cookies, **GRID[variant])
    assert_ok(make(project, "test", extra=make_test_arguments(**_cell(variant))))
    check_smoke_output(project, make(project, "smoke"))


def _cell(variant: str) -> dict:
    return {"task": GRID[variant]["task_type"], "tier": GRID[variant]["gpu_tier"]}


@pytest.mark.parametrize("variant", list(FAMILIES))
def test_every_architecture_family_runs_the_smoke_pipeline(cookies, variant):
    project = bake_ok(cookies, **FAMILIES[variant])
    check_smoke_output(project, make(project, "smoke"))


@pytest.mark.parametrize("tracker", ["tensorboard", "trackio", "wandb"])
def test_every_tracker_records_a_run_offline(cookies, tracker):
    project = bake_ok(cookies, tracker=tracker)
    result = run_in(project, sys.executable, "-m", "pytest", "-q", "tests/test_tracking.py")
    assert_ok(result)
    assert "1 passed" in result.stdout


def test_readme_install_command_then_smoke(cookies, tmp_path):
    """The README's install command in a fresh virtual environment, then `make smoke`.

    The environment sees the packages already installed here (--system-site-packages), so pip
    resolves the project's pins against them without downloading; the project itself, its
    console scripts and its build backend are installed for real.
    """
    project = bake_ok(cookies)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    assert "make install" in (project / "README.md").read_text(encoding="utf-8")
    env = {"PATH": f"{venv / 'bin'}:{os.environ['PATH']}", "PYTHONPATH": ""}
    assert_ok(make(project, "install", python, env))
    assert (venv / "bin" / "my-grpo-project-train").is_file()
    check_smoke_output(project, make(project, "smoke", python, env))


GSM8K = SHARED / "datasets" / "gsm8k-test-200.jsonl"
CHECK_GSM8K = """
import json, sys
from my_grpo_project.rewards import REGISTRY
from my_grpo_project.rewards.math_rewards import gold_text
reward = REGISTRY["math_correctness"]
golds = [json.loads(line)["answer"] for line in open(sys.argv[1])]
boxed = lambda text: "\\\\boxed{" + text + "}"
right = reward([boxed(gold_text(g)) for g in golds], answer=golds)
off_by_one = [str(int(float(gold_text(g).replace(",", ""))) + 1) for g in golds]
wrong = reward([boxed(n) for n in off_by_one], answer=golds)
print(json.dumps({"rows": len(golds), "right": right, "wrong": wrong}))
"""


@pytest.mark.skipif(not GSM8K.is_file(), reason="shared GSM8K rows absent")
def test_math_correctness_on_200_real_gsm8k_rows(default_project):
    """Each real row's gold answer as a \\boxed{} completion gets full credit; a wrong number
    gets none."""
    result = run_in(default_project, sys.executable, "-c", CHECK_GSM8K, str(GSM8K))
    assert_ok(result)
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["rows"] == 200
    assert report["right"] == [1.0] * 200
    assert report["wrong"] == [0.0] * 200


def test_regenerate_from_the_recorded_answers(default_project, tmp_path):
    """`cookiecutter <template> --replay-file .cookiecutter.json` bakes the same project."""
    out = tmp_path / "again"
    record = str(default_project / ".cookiecutter.json")
    command = [
        sys.executable,
        "-m",
        "cookiecutter",
        str(ROOT),
        "--replay-file",
        record,
        "-o",
        str(out),
    ]
    assert_ok(subprocess.run(command, capture_output=True, text=True))
    again = out / default_project.name
    for name in ("configs/grpo.yaml", "pyproject.toml", "Makefile", "README.md"):
        assert (again / name).read_text() == (default_project / name).read_text(), name
