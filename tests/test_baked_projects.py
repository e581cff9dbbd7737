"""Baked projects run their own test suites and pipelines, offline, as a user would run them."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SHARED, assert_ok, bake_ok, run_in

from grpo_template import catalog

pytestmark = pytest.mark.slow

TASKS = ("math", "code", "json", "classification", "custom", "tools", "procedural", "judge")
CUSTOM_MODEL = {
    "model": "custom",
    "custom_model_id": "mistralai/Mistral-7B-Instruct-v0.3",
    "custom_model_params_b": "7.2",
}
# Each cell bakes a project and runs its own tests (its task and rewards, grpo-kit's checks of
# them) and `make smoke`, as a user would: every task, with a different model family each (the
# kit's suite checks every family's tiny model and chat template directly), and the tiers whose
# launch differs. The mechanism itself is tested once, in the kit's own suite (kit/tests), not
# again per bake.
GRID = {
    "math-24GB": {"task_type": "math"},
    "code-24GB": {"task_type": "code", "model": "meta-llama/Llama-3.2-1B-Instruct"},
    "json-24GB": {"task_type": "json", "model": "google/gemma-3-1b-it"},  # folds the system prompt
    "classification-24GB": {"task_type": "classification", "model": "HuggingFaceTB/SmolLM3-3B"},
    # The custom task's cell is the judge task's (no new cell; the judge starter is the custom
    # one with a judge reward, and the kit's suite runs the custom starter's checks and smoke):
    # its tests and smoke start a real `transformers serve` on the tiny model.
    "judge-24GB": {"task_type": "judge", "model": "microsoft/Phi-4-mini-instruct"},
    # Qwen3.5-2B's tools plan does not fit the cpu tier (its linear attention's fallback kernels
    # on the CPU): the family's 0.8B does.
    "tools-cpu": {
        "task_type": "tools",
        "gpu_tier": "cpu",
        "tracker": "wandb",
        "model": "Qwen/Qwen3.5-0.8B",
    },
    # The multi-node tier's cell (its launch files, a custom model's stand-in) is also the
    # procedural task's, so the task adds no bake of its own.
    "procedural-multi-node": {"task_type": "procedural", "gpu_tier": "multi-node", **CUSTOM_MODEL},
}
# The default answers' cell (`cookiecutter --no-input`): its project also runs every other
# documented target after its smoke run.
DEFAULT_CELL = "math-24GB"
# Cells that stand for a tier whose task has a cell of its own: their smoke run only (the
# tier's recipe under the smoke layer, on a custom model's stand-in). None now: the multi-node
# cell is the procedural task's only one.
TIER_ONLY: set[str] = set()


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


@pytest.mark.parametrize("variant", list(GRID))
def test_every_task_passes_make_test_and_make_smoke(cookies, variant):
    project = bake_ok(cookies, **GRID[variant])
    if variant not in TIER_ONLY:
        # The project's slow test is grpo smoke's pipeline, which `make smoke` runs next; the
        # default project's whole `make test` runs in the user journey (tests/test_user_journey.py).
        assert_ok(make(project, "test-fast"))
    smoke = make(project, "smoke")
    check_smoke_output(project, smoke)
    if variant in TIER_ONLY:
        return
    if GRID[variant]["task_type"] == "tools":  # TRL's tool loop ran in every environment
        executed = re.search(r"tool calls executed per environment: (.*)", smoke.stdout)
        assert executed, smoke.stdout[-2000:]
        counts = dict(re.findall(r"(\w+) (\d+) \(", executed.group(1)))
        assert set(counts) == {"python", "lookup"} and all(int(n) > 0 for n in counts.values())
    # The targets whose work depends on the task, on the smoke run, as the README documents them.
    for target, extra in TASK_TARGETS:
        result = make(project, target, extra=extra)
        assert_ok(result)
        assert "Traceback" not in result.stderr, target
    if variant == DEFAULT_CELL:  # the default project (cookiecutter --no-input) runs the rest
        run_the_other_documented_targets(project)


# Offline targets the generated README documents, each run as a user runs it after `make smoke`
# (SMOKE=1: the smoke run's recipe), small. The task-dependent ones run in every task's cell;
# the rest once, in the default cell's project (`try`, `report` and `test`: in the user journey's
# default project, tests/test_user_journey.py).
TASK_TARGETS = (
    ("reward-debug", ["ARGS=--limit 2"]),
    ("evaluate", ["SMOKE=1", "ARGS=--limit 4 --max-new-tokens 8"]),
    ("infer", ["SMOKE=1", "ARGS=--max-new-tokens 8"]),
    ("filter", ["SMOKE=1", "ARGS=--k 2 --min 0 --limit 4 --max-new-tokens 8"]),
)
OTHER_TARGETS = (
    ("doctor", ["ARGS=--smoke --offline"]),
    ("stages", ["ARGS=--smoke --max_steps 1"]),
    ("reward-model", ["ARGS=--smoke --max_steps 2"]),
    ("merge", ["SMOKE=1", "ARGS=--overwrite --max-new-tokens 4"]),
    ("warmup", ["SMOKE=1", "ARGS=--examples 2 --epochs 1"]),
)
# Targets whose offline run ends in a documented refusal: the preflight on the random tiny model
# finds no reward that varies within a group, so it prints its table and exits 2 with the advice.
REFUSING_TARGETS = (("preflight", ["SMOKE=1", "ARGS=--prompts 2"], "error: "),)


def run_the_other_documented_targets(project: Path) -> None:
    """The targets not run per task, in the default project after its smoke run."""
    readme = (project / "README.md").read_text(encoding="utf-8")
    for target, extra in OTHER_TARGETS:
        assert f"`{target}`" in readme, target  # documented
        result = make(project, target, extra=extra)
        assert_ok(result)
        assert "Traceback" not in result.stderr, target
    for target, extra, said in REFUSING_TARGETS:
        assert f"`{target}`" in readme, target
        result = make(project, target, extra=extra)
        output = result.stdout + result.stderr
        assert result.returncode == 2 and said in output, (target, output[-3000:])  # make: 2
        assert "Traceback" not in output, target


# A task whose starter another cell's bakes (the judge starter is the custom one with a judge
# reward): task -> that cell.
COVERED_BY = {"custom": "judge-24GB"}


def test_every_task_is_in_the_grid():
    assert {cell["task_type"] for cell in GRID.values()} | set(COVERED_BY) == set(TASKS)
    assert set(COVERED_BY.values()) <= set(GRID)


def test_every_catalog_model_runs_on_what_the_kit_supports():
    """Each catalog model's tiny architecture is one the kit builds, and its chat template one
    the kit carries or the installed TRL ships (the kit's suite checks each family's)."""
    from grpo_kit.offline import tiny_model

    for model in catalog.CATALOG.values():
        assert model.tiny_arch in tiny_model.ARCHITECTURES, model.hub_id
        assert (model.chat_template or "") in tiny_model.TOKENS, model.hub_id
        assert tiny_model.chat_template_text(model.chat_template or ""), model.hub_id


GSM8K = SHARED / "datasets" / "gsm8k-test-200.jsonl"
CHECK_GSM8K = """
import json, sys
from grpo_kit.verify.math import gold_text
from my_grpo_project.rewards import math_correctness as reward
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
