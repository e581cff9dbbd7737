"""The recipe is checked against the installed TRL: a field TRL removed or renamed fails here."""

import sys
from pathlib import Path

import pytest

from {{ cookiecutter.package_name }} import config
from {{ cookiecutter.package_name }}.config import LOCAL_RECIPE, parse_recipe
from {{ cookiecutter.package_name }}.errors import UserError
from {{ cookiecutter.package_name }}.rewards import REGISTRY

RECIPE = Path("configs/grpo.yaml")


def recipe_values() -> dict:
    """What the recipe files say (configs/local.yaml on top, if you have one): the test compares
    it with what the parser made of them."""
    import yaml

    values = yaml.safe_load(RECIPE.read_text())
    if LOCAL_RECIPE.is_file():
        values.update(yaml.safe_load(LOCAL_RECIPE.read_text()) or {})
    return values


# Fields Unsloth's CPU fallback rewrites when the config is built (bf16/fp16 by what the CPU
# supports, 8-bit optimizers to fused AdamW).
UNSLOTH_CPU_REWRITES = {"bf16", "fp16", "tf32", "optim", "use_cpu", "dataloader_pin_memory"}


def unsloth_cpu_mode() -> bool:
    import torch

    return "unsloth" in sys.modules and not torch.cuda.is_available()


def parse(*overrides):
    # read_only (use_cpu) lets a GPU recipe (bf16/fp16) parse on this machine.
    return parse_recipe(["--config", str(RECIPE), *overrides], read_only=True)


def test_recipe_loads_into_installed_grpo_config_and_model_config():
    from trl import GRPOConfig, ModelConfig

    script_args, task_args, backend_args, training_args, model_args = parse()
    assert isinstance(training_args, GRPOConfig)
    assert isinstance(model_args, ModelConfig)
    values = recipe_values()
    parsed = {
        **vars(script_args),
        **vars(task_args),
        **vars(backend_args),
        **vars(model_args),
        **training_args.to_dict(),
    }
    for key, value in values.items():
        assert key in parsed, f"{key} is not a field of the installed TRL"
        got = parsed[key]
        if key == "lora_target_modules" and isinstance(got, str):
            got = [got]  # ModelConfig turns a one-element list into its string
        if key == "report_to":
            got = got[0] if got else "none"
        if key in UNSLOTH_CPU_REWRITES and unsloth_cpu_mode():
            continue  # present, but Unsloth's CPU mode picks precision and optimizer itself
        assert got == value or str(got) == str(value), f"{key}: recipe {value!r}, parsed {got!r}"


def test_no_field_that_current_trl_rejects():
    values = recipe_values()
    for stale in ("max_prompt_length", "warmup_ratio", "vllm_device", "max_new_tokens"):
        assert stale not in values


def test_a_removed_field_fails_the_parse(tmp_path):
    stale = tmp_path / "stale.yaml"
    stale.write_text(RECIPE.read_text() + "\nmax_prompt_length: 512\n")
    with pytest.raises(UserError, match="max_prompt_length"):
        parse_recipe(["--config", str(stale)], read_only=True)


def test_batch_arithmetic_is_valid():
    training_args = parse().training
    generation_batch = training_args.generation_batch_size
    assert generation_batch % training_args.num_generations == 0
    assert generation_batch % training_args.per_device_train_batch_size == 0


def test_rewards_and_weights_line_up():
    values = recipe_values()
    assert len(values["reward_weights"]) == len(values["reward_funcs"])
    for name in values["reward_funcs"]:
        assert name in REGISTRY or "." in name


def test_command_line_overrides_the_recipe():
    recipe = parse("--learning_rate", "3e-5", "--max_prompt_tokens", "99")
    assert recipe.training.learning_rate == pytest.approx(3e-5)
    assert recipe.script.max_prompt_tokens == 99


def test_missing_recipe_is_one_clear_error():
    with pytest.raises(UserError, match="recipe not found"):
        parse_recipe(["--config", "configs/nope.yaml"])


def test_smoke_overrides_make_any_recipe_cpu_and_tiny():
    script_args, _, _, training_args, model_args = parse_recipe(
        ["--config", str(RECIPE), "--smoke"]
    )
    assert training_args.use_cpu and not training_args.bf16 and not training_args.fp16
    assert not model_args.load_in_4bit and not training_args.use_vllm
    assert model_args.model_name_or_path == "outputs/tiny-model"
    assert training_args.max_steps == 2
    assert script_args.reward_funcs == recipe_values()["reward_funcs"]


def test_local_yaml_applies_on_top_of_the_generated_recipe(tmp_path, monkeypatch):
    local = tmp_path / "local.yaml"
    local.write_text("max_steps: 7\nsystem_prompt: mine\n")
    monkeypatch.setattr(config, "LOCAL_RECIPE", local)
    recipe = parse("--learning_rate", "3e-5")
    assert recipe.training.max_steps == 7 and recipe.script.system_prompt == "mine"
    assert recipe.training.learning_rate == pytest.approx(3e-5)  # the command line still wins
    assert parse("--config=configs/grpo.yaml").training.max_steps == 7  # the = form too
    other = tmp_path / "other.yaml"
    other.write_text(RECIPE.read_text())
    assert parse_recipe(["--config", str(other)], read_only=True).training.max_steps != 7


def test_layers_apply_in_the_documented_order(tmp_path, monkeypatch):
    """recipe < local.yaml < an extra layer (stage) < --smoke < command line, all in memory."""
    local = tmp_path / "local.yaml"
    local.write_text("max_steps: 7\nlearning_rate: 1.0e-4\nseed: 3\nlogging_steps: 9\n")
    monkeypatch.setattr(config, "LOCAL_RECIPE", local)
    stage = config.Layer("a stage", {"learning_rate": 2.0e-4, "seed": 5, "logging_steps": 8})
    recipe = parse_recipe(["--config", str(RECIPE), "--smoke", "--seed", "11"], extra=stage)
    training = recipe.training
    assert training.max_steps == 2  # --smoke over local.yaml
    assert training.learning_rate == pytest.approx(2.0e-4)  # the stage over local.yaml
    assert training.logging_steps == 1  # --smoke over the stage
    assert training.seed == 11  # the command line over everything
    assert list(tmp_path.iterdir()) == [local]  # no temporary recipe files


def test_smoke_reads_the_sample_data_with_its_own_columns(tmp_path, monkeypatch):
    """A user's data mapping in local.yaml does not break the offline smoke run."""
    from {{ cookiecutter.package_name }}.project import SAMPLE_DATA

    local = tmp_path / "local.yaml"
    local.write_text("dataset_name: my/data\nprompt_column: q\nanswer_column: a\n")
    monkeypatch.setattr(config, "LOCAL_RECIPE", local)
    mine = parse()
    assert (mine.script.dataset_name, mine.script.prompt_column) == ("my/data", "q")
    smoke = parse_recipe(["--config", str(RECIPE), "--smoke"])
    defaults = config.ScriptArguments()
    assert smoke.script.dataset_name == SAMPLE_DATA
    assert smoke.script.prompt_column == defaults.prompt_column
    assert smoke.script.answer_column == defaults.answer_column


def test_trial_runs_your_own_data_on_the_cpu_and_tiny_model(tmp_path, monkeypatch):
    """`make try`: the smoke overrides, but the data mapping stays yours."""
    local = tmp_path / "local.yaml"
    local.write_text("dataset_name: my/data\nprompt_column: q\nanswer_column: a\n")
    monkeypatch.setattr(config, "LOCAL_RECIPE", local)
    trial = parse_recipe(["--config", str(RECIPE), "--trial"])
    assert (trial.script.dataset_name, trial.script.prompt_column) == ("my/data", "q")
    assert trial.training.use_cpu and not trial.training.use_vllm and not trial.training.bf16
    assert trial.model.model_name_or_path == str(config.TINY_MODEL_DIR)
    assert trial.training.output_dir == str(config.TRIAL_OUTPUT_DIR)
    with pytest.raises(UserError, match="exclude each other"):
        parse_recipe(["--config", str(RECIPE), "--trial", "--smoke"])


def test_an_unknown_field_names_the_layer_that_holds_it(tmp_path, monkeypatch):
    local = tmp_path / "local.yaml"
    local.write_text("max_stepz: 7\n")
    monkeypatch.setattr(config, "LOCAL_RECIPE", local)
    with pytest.raises(UserError, match="local.yaml: unknown field.*max_stepz"):
        parse()


def test_a_broken_local_yaml_is_one_clear_error(tmp_path, monkeypatch):
    local = tmp_path / "local.yaml"
    local.write_text("- not a mapping\n")
    monkeypatch.setattr(config, "LOCAL_RECIPE", local)
    with pytest.raises(UserError, match="local.yaml: a recipe is a mapping"):
        parse()
