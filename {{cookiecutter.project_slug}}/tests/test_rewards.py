"""The recipe's rewards: registered, maxed by ideal completions, TRL's contract, hostile input."""

import math

import pytest

from {{ cookiecutter.package_name }}.errors import UserError
from {{ cookiecutter.package_name }}.rewards import REGISTRY, bind, resolve
from {{ cookiecutter.package_name }}.rewards.base import call_like_trl
from {{ cookiecutter.package_name }}.tasks import TASK
from {{ cookiecutter.package_name }}.tools import reward_debug

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
    "[" * 5000 + "]" * 5000,
    "```python\n" + "(" * 500 + "\n```",
    '<answer>```json\n{"a": 1\n```</answer>',
    "<think>" + "<answer>" * 1000,
]


def test_every_recipe_reward_is_registered_with_a_range(recipe):
    for name in recipe.script.reward_funcs:
        assert name in REGISTRY, name
        bounds = REGISTRY[name].reward_range
        assert bounds.low < bounds.high


def test_ideal_completions_reach_the_top_of_every_range():
    """The reward debug command on the sample data: every ideal completion maxes every reward."""
    assert reward_debug.debug(["--limit", "2"])


def test_rewards_follow_trls_contract(recipe, sample_rows):
    row = sample_rows[0]
    funcs = resolve(recipe.script.reward_funcs, recipe.reward_settings())
    ideal = TASK.ideal_completion(row, recipe.task)
    for func in funcs:
        values = call_like_trl(func, [ideal, "", "junk"], [row] * 3)
        assert len(values) == 3
        assert all(v is None or isinstance(v, float) for v in values)


@pytest.mark.parametrize("completion", NASTY, ids=range(len(NASTY)))
def test_rewards_never_raise_and_stay_in_range(completion, sample_rows, recipe):
    row = sample_rows[0]
    for name, func in REGISTRY.items():
        value = call_like_trl(bind(func, recipe.reward_settings()), [completion], [row])[0]
        if value is None:
            continue
        assert math.isfinite(value), name
        assert func.reward_range.low <= value <= func.reward_range.high, (name, value)


def test_a_missing_column_is_a_configuration_error(recipe):
    for func in REGISTRY.values():
        if func.required_columns:
            with pytest.raises(KeyError, match="needs dataset column"):
                bind(func, recipe.reward_settings())(["text"])


def test_resolve_registry_names_and_dotted_paths():
    assert resolve(["partial_format"]) == [REGISTRY["partial_format"]]
    assert resolve(["os.path.basename"])[0].__name__ == "basename"
    with pytest.raises(UserError, match="unknown reward"):
        resolve(["no_such_reward"])
    with pytest.raises(UserError, match="cannot import"):
        resolve(["no_such_module.func"])
    with pytest.raises(UserError, match="has no function"):
        resolve(["os.no_such_function"])


def score(name: str, completion: str, **columns):
    return REGISTRY[name]([completion], **{k: [v] for k, v in columns.items()})[0]


# --- format rewards shared by the tasks -------------------------------------------------------


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
        ("x <think>steps</think><answer>42</answer>", 0.0),
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
        ("<answer>1</answer>" + "z" * 5000, 0.0),
    ],
)
def test_partial_format(completion, expected):
    assert score("partial_format", completion) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("tokens", "expected"), [(0, 0.0), (96, 0.0), (112, -0.5), (128, -1.0), (500, -1.0)]
)
def test_soft_overlong(tokens, expected):
    func = resolve(["soft_overlong"], {"max_completion_length": 128})[0]
    value = func(["x"], completion_ids=[[1] * tokens])[0]
    assert value == pytest.approx(expected)


def test_recipe_settings_are_passed_in_never_module_state():
    """A reward with parameters refuses to run without them, and no module of the package keeps
    settings in a global that an earlier call could have left behind."""
    import ast
    from pathlib import Path

    import {{ cookiecutter.package_name }} as package

    with pytest.raises(TypeError, match="needs the settings"):
        REGISTRY["soft_overlong"](["x"], completion_ids=[[1]])
    with pytest.raises(UserError, match="needs the settings"):
        resolve(["soft_overlong"], {})
    for path in Path(package.__file__).parent.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert not any(isinstance(node, ast.Global) for node in ast.walk(tree)), path
