"""Reward functions on golden completions, TRL's calling contract, and hostile input."""

import json
import math
from pathlib import Path

import pytest
import yaml

from {{ cookiecutter.package_name }}.errors import UserError
from {{ cookiecutter.package_name }}.project import SAMPLE_DATA
from {{ cookiecutter.package_name }}.rewards import REGISTRY, resolve
from {{ cookiecutter.package_name }}.tasks import TASK

RECIPE = (
    yaml.safe_load(Path("configs/grpo.yaml").read_text())
    if Path("configs/grpo.yaml").exists()
    else {}
)
ROOT = Path(__file__).resolve().parents[1]


def rows() -> list[dict]:
    lines = (ROOT / SAMPLE_DATA).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def score(name: str, completion, **columns) -> float | None:
    batch = {key: [value] for key, value in columns.items()}
    return REGISTRY[name]([completion], **batch)[0]


def trl_call(func, completions: list, **columns):
    """Call a reward exactly as GRPOTrainer does (conversational completions, extra kwargs)."""
    n = len(completions)
    return func(
        prompts=[[{"role": "user", "content": "q"}]] * n,
        completions=[[{"role": "assistant", "content": c}] for c in completions],
        completion_ids=[[1, 2, 3]] * n,
        trainer_state=None,
        log_extra=lambda *a, **k: None,
        log_metric=lambda *a, **k: None,
        **{key: [value] * n for key, value in columns.items()},
    )


def test_every_recipe_reward_is_registered_with_a_range():
    for name in RECIPE.get("reward_funcs", []):
        assert name in REGISTRY, name
        low, high = REGISTRY[name].reward_range.low, REGISTRY[name].reward_range.high
        assert low < high


def test_ideal_completions_reach_the_top_of_every_range():
    for row in rows():
        row = {**row, "answer": str(row[RECIPE.get("answer_column", "answer")])}
        ideal = TASK.ideal_completion(row)
        for name in RECIPE.get("reward_funcs", []):
            value = score(name, ideal, **row)
            assert value == REGISTRY[name].reward_range.high, (name, ideal, value)


def test_rewards_follow_trls_contract():
    row = {**rows()[0]}
    row["answer"] = str(row[RECIPE.get("answer_column", "answer")])
    for name in RECIPE.get("reward_funcs", []):
        values = trl_call(REGISTRY[name], ["<think>x</think><answer>1</answer>", "", "junk"], **row)
        assert len(values) == 3
        assert all(v is None or isinstance(v, float) for v in values)


NASTY = [
    "",
    " ",
    "\x00\x00",
    "<answer>",
    "</answer></answer><answer>",
    "<think><think><answer>1</answer>",
    "<answer>" + "9" * 5000 + "</answer>",
    "\\boxed{" * 200,
    "\\frac{\\frac{\\frac{1}{2}}{3}}{" * 50,
    "ünïcödé 答案 🤖 <answer>∞</answer>",
    "x" * 1_000_000,
    '{"a": ' * 500,
]


@pytest.mark.parametrize("completion", NASTY, ids=range(len(NASTY)))
def test_rewards_never_raise_and_stay_in_range(completion):
    row = {**rows()[0]}
    row["answer"] = str(row[RECIPE.get("answer_column", "answer")])
    for name, func in REGISTRY.items():
        try:
            value = trl_call(func, [completion], **row)[0]
        except KeyError:
            continue  # this reward needs a column other tasks have
        if value is None:
            continue
        assert math.isfinite(value)
        assert func.reward_range.low <= value <= func.reward_range.high, (name, value)


def test_a_missing_column_is_a_configuration_error():
    for func in REGISTRY.values():
        if func.required_columns:
            with pytest.raises(KeyError, match="needs dataset column"):
                func(["text"])


def test_resolve_registry_names_and_dotted_paths():
    assert resolve(["strict_format"]) == [REGISTRY["strict_format"]]
    assert resolve(["os.path.basename"])[0].__name__ == "basename"
    with pytest.raises(UserError, match="unknown reward"):
        resolve(["no_such_reward"])
    with pytest.raises(UserError, match="cannot import"):
        resolve(["no_such_module.func"])
    with pytest.raises(UserError, match="has no function"):
        resolve(["os.no_such_function"])


# --- format rewards -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("<think>\nsteps\n</think>\n<answer>\n42\n</answer>", 1.0),
        ("<think>steps</think><answer>42</answer>", 1.0),
        ("steps</think>\n<answer>42</answer>", 1.0),  # <think> pre-filled by the chat template
        ("<answer>42</answer>", 0.0),
        ("<think>steps</think><answer>42</answer> and more", 0.0),
        ("<think>a</think><answer>1</answer><answer>2</answer>", 0.0),
        ("<think></think><answer>42</answer>", 0.0),
        ("<think>steps</think><answer>  </answer>", 0.0),
    ],
)
def test_strict_format(completion, expected):
    assert score("strict_format", completion) == expected


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("<think>a</think><answer>1</answer>", 1.0),
        ("<think>a</think>", 0.5),
        ("<answer>1</answer>", 0.5),
        ("nothing", 0.0),
        ("<think>a</think><answer>1</answer>" + "z" * 100, 0.9),
        ("<think>a</think><answer>1</answer>" + "z" * 5000, 0.5),
        ("<answer>1</answer>" + "z" * 5000, -0.0),
    ],
)
def test_partial_format(completion, expected):
    assert score("partial_format", completion) == pytest.approx(expected)
