"""The rendered recipe: valid YAML, every value commented, and accepted by the installed TRL."""

import pytest
import yaml
from conftest import bake_ok
from matrix import VALID, name

from grpo_template import recipe, tasks, yaml_text
from grpo_template.answers import Answers
from grpo_template.derived import recipe_header

STALE = (
    "max_prompt_length",
    "warmup_ratio",
    "vllm_device",
    "max_new_tokens",
    "evaluation_strategy",
)


@pytest.mark.parametrize(
    "value",
    [0.0, 1e-05, 2.5e-06, 3.0, 1e20, 7, True, None, "a: b # c", 'quote " and \\', "ünï", []],
)
def test_yaml_scalar_round_trips(value):
    assert yaml.safe_load(f"key: {yaml_text.yaml_scalar(value)}")["key"] == value


def rendered(combo):
    answers = Answers.from_context(combo)
    text = recipe.render(answers.plan, answers.tracker, recipe_header(answers), answers.algorithm)
    return answers, text


@pytest.mark.parametrize("combo", VALID, ids=name)
def test_recipe_is_the_plan_and_every_value_is_explained(combo):
    answers, text = rendered(combo)
    loaded = yaml.safe_load(text)
    assert loaded == recipe.values(answers.plan, answers.tracker, answers.algorithm)
    for key in STALE:
        assert key not in loaded
    unexplained = [
        line
        for line in text.splitlines()
        if line
        and not line.startswith("#")
        and "  # " not in line
        and line.split(":")[0] not in ("dataset_train_split", "seed")
    ]
    assert not unexplained


@pytest.mark.parametrize(
    "model, says",
    [
        ("google/gemma-3-1b-it", "no system turn"),  # folded into the first user message
        ("HuggingFaceTB/SmolLM3-3B", "/no_think in it overrides enable_thinking"),
        ("Qwen/Qwen3.5-2B", None),  # a system turn of its own: nothing to say
    ],
)
def test_the_system_prompt_note_says_how_the_models_template_writes_it(model, says):
    """The system prompt itself is task.py's; the recipe notes how this model's template writes
    it, where that is unusual."""
    combo = next(c for c in VALID if c["model"] == model)
    notes = [x for x in rendered(combo)[1].splitlines() if x.startswith("# The system prompt")]
    assert (len(notes) == 1 and says in notes[0]) if says else notes == []


@pytest.mark.parametrize("combo", VALID, ids=name)
def test_the_recipe_restates_nothing_task_py_owns(combo):
    """issue 37: task.py is the one home of the rewards, weights, system prompt and default
    data; a generated recipe that restated them shadowed every edit of task.py, silently."""
    from grpo_kit.recipe import DATA_FIELDS, TASK_OWNED

    answers, text = rendered(combo)
    loaded = yaml.safe_load(text)
    assert not set(loaded) & {*TASK_OWNED, *DATA_FIELDS}
    assert "task.py (TASK): change them there" in text.replace("\n# ", " ")


@pytest.fixture(scope="module")
def project_parsers(cookies_session):
    """grpo-kit's parse_recipe for a baked project per task: each recipe is parsed as its
    project parses it (the kit's ScriptArguments, the project's TaskArguments, the installed
    TRL's dataclasses)."""
    import functools

    from grpo_kit.project import load
    from grpo_kit.recipe import parse_recipe

    parsers = {}
    for task in tasks.TASKS:
        project = bake_ok(cookies_session, task_type=task, project_slug=f"recipe-check-{task}")
        parsers[task] = functools.partial(parse_recipe, project=load(project))
    return parsers


UNSLOTH = [c for c in VALID if c["backend"] == "unsloth"]
TRANSFORMERS = [c for c in VALID if c["backend"] == "transformers"]


@pytest.mark.parametrize("combo", UNSLOTH, ids=name)
def test_unsloth_recipe_section_is_consistent(combo):
    answers, _ = rendered(combo)
    values = recipe.values(answers.plan, answers.tracker, answers.algorithm)
    assert values["max_seq_length"] >= values["max_prompt_tokens"] + values["max_completion_length"]
    assert values["max_lora_rank"] >= values["lora_r"]
    assert values["fast_inference"] == answers.plan.fast_inference
    # Unsloth's standby mode sets vLLM's share itself: the recipe does not pretend to.
    assert "gpu_memory_utilization" not in values
    assert "activation_checkpointing" not in values  # transformers 5.17 has the old name
    assert not any(
        (key.startswith("vllm") and not key.startswith("vllm_importance_sampling"))
        or key == "use_vllm"
        for key in values
    )


# Unsloth recipes are parsed by an Unsloth project in the Unsloth environment
# (test_baked_projects.py::test_unsloth_recipes_load_into_the_unsloth_stack).
@pytest.mark.parametrize("combo", TRANSFORMERS, ids=name)
def test_recipe_loads_into_the_installed_trl(combo, project_parsers, tmp_path):
    answers, text = rendered(combo)
    path = tmp_path / "grpo.yaml"
    path.write_text(text, encoding="utf-8")
    parse = project_parsers[combo["task_type"]]
    script_args, _, _, training_args, model_args, *_ = parse(
        ["--config", str(path), "--use_cpu", "true"]
    )
    plan = answers.plan
    assert training_args.num_generations == plan.num_generations
    assert training_args.generation_batch_size % plan.num_generations == 0
    assert model_args.use_peft == plan.use_peft
    assert script_args.max_prompt_tokens == plan.max_prompt_tokens


@pytest.mark.parametrize("combo", VALID, ids=name)
def test_warm_up_is_a_small_share_of_the_run(combo):
    """2% of max_steps (10 of a GPU tier's 500, 1 of the CPU tier's 50): a 10-step warm-up kept
    a CPU run of a few steps in warm-up throughout."""
    answers, _ = rendered(combo)
    values = recipe.values(answers.plan, answers.tracker, answers.algorithm)
    assert values["warmup_steps"] == round(values["max_steps"] * recipe.WARMUP_SHARE)
    assert 0 < values["warmup_steps"] <= values["max_steps"] * 0.05


def test_a_cpu_run_leaves_warm_up_at_once_with_a_cpu_sized_rate():
    """transformers' own cosine schedule with the CPU recipe's values: after 2 of its steps the
    LoRA rate is near its peak, and that peak is the short-run rate, not the GPU tiers' 1e-5."""
    import torch
    from transformers import get_cosine_schedule_with_warmup

    from grpo_template import tuning

    combo = next(c for c in VALID if c["gpu_tier"] == "cpu" and c["backend"] == "transformers")
    answers, _ = rendered(combo)
    values = recipe.values(answers.plan, answers.tracker, answers.algorithm)
    assert values["learning_rate"] == tuning.SHORT_RUN_LORA_RATE > tuning.LEARNING_RATE["lora"]
    parameter = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([parameter], lr=values["learning_rate"])
    schedule = get_cosine_schedule_with_warmup(
        optimizer, values["warmup_steps"], values["max_steps"]
    )
    for _ in range(2):
        optimizer.step()
        schedule.step()
    assert schedule.get_last_lr()[0] > 0.9 * values["learning_rate"]
