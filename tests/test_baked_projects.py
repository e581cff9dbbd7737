"""Baked projects run their own test suites and pipelines, offline, as a user would run them."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SHARED, assert_ok, bake_ok, run_in

from grpo_template import catalog, tiers

pytestmark = pytest.mark.slow

TASKS = ("math", "code", "json", "classification", "custom")
TIERS = ("24GB", "cpu", "16GB", "48GB", "80GB", "141GB", "multi-gpu", "multi-node")
CUSTOM_MODEL = {
    "model": "custom",
    "custom_model_id": "mistralai/Mistral-7B-Instruct-v0.3",
    "custom_model_params_b": "7.2",
}
# Every model family (and a custom id) bakes in a cell that runs its project's own `make test`
# and `make smoke` with its real chat template, its tiny model's architecture (LoRA targets,
# towers, hybrid attention, experts) and its tier's plan: the whole suite on the 24GB tier, the
# math suite without the slow tests (learning, kill-and-resume, reward-model training: minutes
# each for every family) on the other tiers. The default model runs the math and tools suites
# on 24GB (the 2-process DDP test included), tools on the CPU tier and every other task x tier.
CELL_MODELS = {
    "code-24GB": {"model": "meta-llama/Llama-3.2-1B-Instruct"},
    "json-24GB": {"model": "google/gemma-3-1b-it"},  # folds the system prompt
    "classification-24GB": {"model": "HuggingFaceTB/SmolLM3-3B"},  # the project's own copy
    "custom-24GB": {"model": "microsoft/Phi-4-mini-instruct"},  # fused projections, <|end|>
    "math-cpu": {"model": "Qwen/Qwen3-1.7B"},  # thinking
    "math-16GB": {"model": "LiquidAI/LFM2.5-1.2B-Instruct"},  # short convolutions
    "math-48GB": {"model": "google/gemma-4-E2B-it"},  # multimodal, KV sharing
    "math-80GB": {"model": "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"},  # Mamba, experts
    "math-141GB": {"model": "Qwen/Qwen3.5-4B"},  # hybrid attention, thinking by default
    "math-multi-gpu": {"model": "Qwen/Qwen2.5-1.5B-Instruct"},
    "math-multi-node": CUSTOM_MODEL,
}
# Architectures no whole-suite cell bakes: the smoke run trains, merges and reloads their tiny
# model, and the project's family tests run.
FAMILIES = {"gemma3-multimodal": {"model": "google/gemma-3-4b-it", "gpu_tier": "48GB"}}
# The agent task on the default tier (its whole suite, the tool-use learning test included) and
# on the CPU tier; its plan differs from the others' only in length and the tool-turn cap. Each
# records to a tracker (its suite's tests/test_tracking.py): TensorBoard and W&B (offline). The
# longest cells come first, so they do not start last and hold one worker alone at the end.
GRID = {
    f"tools-{tier}": {"task_type": "tools", "gpu_tier": tier, "tracker": tracker}
    for tier, tracker in (("24GB", "tensorboard"), ("cpu", "wandb"))
}
# Every other task with every tier (other answers at their defaults): `make test`, `make smoke`.
GRID |= {
    f"{task}-{tier}": {"task_type": task, "gpu_tier": tier} for task in TASKS for tier in TIERS
}
for _cell_name, _model in CELL_MODELS.items():
    GRID[_cell_name] = {**GRID[_cell_name], **_model}


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
# Task-independent suites the tools project shares with the others' 24GB cells (the toy learning
# test, the reward-model training, the sandbox attacks the code project runs): not run twice.
TOOLS_SHARED_TESTS = ("test_learning", "test_reward_model_training", "test_sandbox")


def make_test_arguments(task: str, tier: str) -> list[str]:
    """What `make test` runs for this grid cell (each suite costs 20-100 s of a worker)."""
    multi = tier in ("multi-gpu", "multi-node")
    if tier == "24GB":  # every task's whole suite; the 2-process DDP test once
        if task == "tools":  # less what other cells run unchanged: its own learning test stays
            shared = " ".join(f"--ignore=tests/{name}.py" for name in TOOLS_SHARED_TESTS)
            return [f'ARGS=-m "not distributed" {shared}']
        return [] if task == "math" else ['ARGS=-m "not distributed"']
    if task == "math":  # another model family's suite on every tier, without slow tests; the
        # 2-process DDP test also on the multi-node tier (it runs on 24GB with the default model)
        return [
            'ARGS=-m "distributed or not slow"' if tier == "multi-node" else 'ARGS=-m "not slow"'
        ]
    files = [*TIER_TESTS, "tests/test_launch.py"] if multi else TIER_TESTS
    if task == "tools":  # its tracker records a run
        files = [*files, "tests/test_tracking.py"]
    return [f'ARGS={" ".join(files)} -m "not slow"']


@pytest.mark.parametrize("variant", list(GRID))
def test_every_task_and_tier_passes_make_test_and_make_smoke(cookies, variant):
    project = bake_ok(cookies, **GRID[variant])
    assert_ok(make(project, "test", extra=make_test_arguments(**_cell(variant))))
    smoke = make(project, "smoke")
    check_smoke_output(project, smoke)
    if GRID[variant]["task_type"] == "tools":  # TRL's tool loop ran in every environment
        executed = re.search(r"tool calls executed per environment: (.*)", smoke.stdout)
        assert executed, smoke.stdout[-2000:]
        counts = dict(re.findall(r"(\w+) (\d+) \(", executed.group(1)))
        assert set(counts) == {"python", "lookup"} and all(int(n) > 0 for n in counts.values())


def _cell(variant: str) -> dict:
    return {"task": GRID[variant]["task_type"], "tier": GRID[variant]["gpu_tier"]}


def run_family_tests(project: Path):
    """The baked project's own checks of its model family (tests/test_model_family.py): the
    real chat template, its special tokens, full reward for ideal completions rendered through
    it, and an adapter reloading onto the class TRL trains. No training: a few seconds."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    result = run_in(project, *command, "tests/test_model_family.py")
    assert_ok(result)
    assert " passed" in result.stdout


@pytest.mark.parametrize("variant", list(FAMILIES))
def test_every_architecture_family_runs_the_smoke_pipeline(cookies, variant):
    project = bake_ok(cookies, **FAMILIES[variant])
    check_smoke_output(project, make(project, "smoke"))
    run_family_tests(project)


def template_families() -> dict[str, str]:
    """One catalog model per (tiny architecture, chat template, chat_template_kwargs of the
    default task), a GRID model (its whole suite runs there) where one stands for it."""
    from grpo_template import tasks, tuning

    smoke = [*COVERED]
    models = sorted(catalog.CATALOG.values(), key=lambda m: m.hub_id not in smoke)
    chosen: dict[str, str] = {}
    for model in models:
        kwargs = tuning.thinks(model, tasks.TASKS[tasks.DEFAULT_TASK])
        key = f"{model.tiny_arch}-{model.chat_template or 'stand-in'}-thinking-{kwargs}"
        chosen.setdefault(key, model.hub_id)
    return chosen


# Models whose baked project runs tests/test_model_family.py elsewhere: in GRID (the whole
# suite) or FAMILIES.
COVERED = {
    cell.get("model", catalog.DEFAULT_MODEL) for cell in [*GRID.values(), *FAMILIES.values()]
} - {catalog.CUSTOM}
TEMPLATE_FAMILIES = template_families()


def fitting_tier(hub_id: str) -> str:
    from grpo_template import tasks, tuning

    model, task = catalog.CATALOG[hub_id], tasks.TASKS[tasks.DEFAULT_TASK]
    return next(t for t in ("24GB", "48GB", "80GB", "141GB") if tuning._fits(
        model, tiers.TIERS[t], task, "transformers"))  # fmt: skip


@pytest.mark.parametrize(
    "hub_id",
    [h for h in TEMPLATE_FAMILIES.values() if h not in COVERED],
)
def test_every_chat_template_family_renders_like_the_real_model(cookies, hub_id):
    """The families the smoke runs above do not cover: their own family checks."""
    run_family_tests(bake_ok(cookies, model=hub_id, gpu_tier=fitting_tier(hub_id)))


def test_every_model_family_runs_its_suite_in_the_grid():
    """Each catalog family (and a custom id) bakes in a cell that runs its `make test`: whole,
    or without the slow tests, on the tiers other than 24GB."""
    suites = (
        [],
        ['ARGS=-m "not distributed"'],
        ['ARGS=-m "not slow"'],
        ['ARGS=-m "distributed or not slow"'],
    )
    cells = [c for n, c in GRID.items() if make_test_arguments(**_cell(n)) in suites]
    models = {cell.get("model", catalog.DEFAULT_MODEL) for cell in cells}
    families = {catalog.CATALOG[m].family for m in models - {catalog.CUSTOM}}
    assert families == {m.family for m in catalog.CATALOG.values()}
    assert catalog.CUSTOM in models


def test_every_catalog_model_has_its_family_checked():
    checked = set(TEMPLATE_FAMILIES.values())
    for model in catalog.CATALOG.values():
        assert any(
            catalog.CATALOG[h].tiny_arch == model.tiny_arch
            and catalog.CATALOG[h].chat_template == model.chat_template
            for h in checked
        ), model.hub_id


@pytest.mark.parametrize("tracker", ["tensorboard", "trackio", "wandb"])
def test_every_tracker_records_a_run_offline(cookies, tracker):
    project = bake_ok(cookies, tracker=tracker)
    result = run_in(project, sys.executable, "-m", "pytest", "-q", "tests/test_tracking.py")
    assert_ok(result)
    assert "1 passed" in result.stdout


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
