"""The reward-model recipe (configs/reward_model.yaml): tuned per tier by the memory model and the
size table, every value explained, and accepted by the installed TRL's RewardConfig/ModelConfig
through grpo-kit's reward-model command parser."""

import dataclasses
import importlib
import json
import re
import subprocess

import pytest
import yaml
from conftest import bake_ok
from matrix import VALID, name

from grpo_template import catalog, memory, reward_model, stack, tuning
from grpo_template.answers import Answers

SAMPLE_PREFERENCES = "data/sample_preferences.jsonl"  # in a generated project
# Fields of the command that the rendered recipe leaves at their defaults.
# system_prompt: task.py is its one home (the command reads it from the project).
UNRENDERED_SCRIPT_FIELDS = {"max_train_samples", "resume", "smoke", "system_prompt"}


def plans(combos):
    for combo in combos:
        answers = Answers.from_context(combo)
        yield combo, answers, reward_model.plan(answers.plan)


@pytest.mark.parametrize(
    ("params", "label"),
    [(0.49e9, "< 1B"), (0.999e9, "< 1B"), (1e9, "1-7B"), (6.9e9, "1-7B"), (7.6e9, "7-13B"),
     (12.9e9, "7-13B"), (70e9, "7-13B")],
)  # fmt: skip
def test_the_size_table_row_follows_the_parameter_count(params, label):
    assert reward_model.size_row(params).label == label


def test_a_classifier_loses_an_untied_lm_head_and_gains_a_one_output_score_head():
    untied, tied = catalog.CATALOG["Qwen/Qwen2.5-7B-Instruct"], catalog.CATALOG["Qwen/Qwen3-0.6B"]
    assert not untied.tied_embeddings and tied.tied_embeddings
    rm = reward_model.classifier_spec(untied)
    assert rm.params == untied.params - untied.vocab * untied.hidden + untied.hidden
    assert reward_model.classifier_spec(tied).params == tied.params + tied.hidden


def test_every_valid_combination_fits_one_device_and_follows_the_size_table():
    """All 1000+ combinations, cheaply: the plan is pure Python."""
    for combo, answers, rm in plans(VALID):
        grpo, tier = answers.plan, answers.tier
        where = name(combo)
        assert rm.memory.peak <= tier.memory_bytes * tuning.HEADROOM, where
        # The estimate is the memory model's, for the classifier at the chosen shape.
        classifier = reward_model.classifier_spec(rm.model)
        shape = reward_model.shape(
            tier, rm.mode, rm.per_device_train_batch_size, rm.max_length, rm.lora_r
        )
        assert memory.estimate(classifier, shape) == rm.memory, where
        row = reward_model.size_row(rm.model.params)
        assert rm.row == row and rm.pairs_per_step == row.batch[1], where
        factor = reward_model.LORA_LR_FACTOR if rm.use_peft else 1
        assert rm.learning_rate == pytest.approx(row.learning_rate * factor), where
        assert rm.num_train_epochs == row.epochs[0], where
        quantization = stack.BITSANDBYTES in stack.gpu_dependencies(grpo)
        assert rm.mode in reward_model.modes(tier, quantization), where
        if not tier.is_gpu:
            assert (rm.mode, rm.dtype, rm.optim) == ("lora", "float32", "adamw_torch"), where
        grpo_length = grpo.max_prompt_tokens + grpo.max_completion_length
        lowered = any(n.startswith("max_length lowered") for n in rm.notes)
        assert rm.max_length == grpo_length or (lowered and rm.max_length < grpo_length), where
        assert rm.model == grpo.model or any("largest catalog model" in n for n in rm.notes)


def test_a_model_too_big_for_one_device_trains_a_smaller_catalog_base():
    combo = next(c for c in VALID if c["gpu_tier"] == "multi-gpu")
    base = Answers.from_context(combo).plan
    big = dataclasses.replace(
        base, model=catalog.custom_model("org/big-34b", 34), mode="lora", optim="adamw_torch_fused"
    )
    assert stack.BITSANDBYTES not in stack.gpu_dependencies(big)  # so no QLoRA for it either
    rm = reward_model.plan(big)
    assert rm.model.hub_id in catalog.CATALOG and rm.model.params < 34e9
    assert any("org/big-34b does not fit one multi-gpu device" in note for note in rm.notes)
    assert f'model_name_or_path: "{rm.model.hub_id}"' in reward_model.render(big, "none")


@pytest.mark.parametrize(
    "hub_id", [h for h, m in catalog.CATALOG.items() if not m.sequence_classifier]
)
def test_a_model_transformers_cannot_load_as_a_classifier_trains_another_base(hub_id):
    """Gemma 4, LFM2.5 and Nemotron-H have no AutoModelForSequenceClassification class: the
    reward model's base is a catalog model that has one (no larger, ungated), and the recipe
    says why."""
    combo = next(c for c in VALID if c["model"] == hub_id)
    grpo_plan = Answers.from_context(combo).plan
    rm = reward_model.plan(grpo_plan)
    assert rm.model.sequence_classifier and rm.model.params <= grpo_plan.model.params
    assert not rm.model.gated
    text = reward_model.render(grpo_plan, "none")
    assert "no sequence-classification class" in text
    assert f'model_name_or_path: "{rm.model.hub_id}"' in text


def representatives():
    """One combination per (tier, backend, fine-tuning mode): the recipe's shape varies with
    these (precision, checkpointing key, LoRA/QLoRA fields); every tier is covered."""
    seen = {}
    for combo, _, rm in plans(VALID):
        seen.setdefault((combo["gpu_tier"], combo["backend"], rm.mode), combo)
    return list(seen.values())


REPRESENTATIVES = representatives()


SLUG = "rm-recipe-check"


@pytest.fixture(scope="module")
def project(cookies_session):
    return bake_ok(cookies_session, project_slug=SLUG)


@pytest.fixture(scope="module")
def command():
    """grpo-kit's reward-model command (its parser and dataclass)."""
    return importlib.import_module("grpo_kit.commands.reward_model")


def test_make_reward_model_runs_the_kits_command(project, command):
    dry_run = subprocess.run(
        ["make", "-n", "--no-print-directory", "reward-model", "ARGS=--max_steps 5"],
        cwd=project, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert dry_run.stdout.split() == [
        "python", "-m", "grpo_kit", "reward-model", "--config", "configs/reward_model.yaml",
        "--max_steps", "5",
    ]  # fmt: skip
    makefile = (project / "Makefile").read_text(encoding="utf-8")
    assert "reward-model" in next(
        line for line in makefile.splitlines() if line.startswith(".PHONY")
    )
    assert callable(command.main)


def test_every_tier_is_represented():
    tiers = {c["gpu_tier"] for c in REPRESENTATIVES}
    assert tiers == {c["gpu_tier"] for c in VALID}
    assert {"full", "lora", "qlora"} <= {reward_model.plan(Answers.from_context(c).plan).mode
                                         for c in REPRESENTATIVES}  # fmt: skip


@pytest.mark.parametrize("combo", REPRESENTATIVES, ids=name)
def test_the_recipe_is_the_plan_explained_and_loads_into_the_installed_trl(
    combo, command, tmp_path
):
    answers = Answers.from_context(combo)
    rm = reward_model.plan(answers.plan)
    text = reward_model.render(answers.plan, answers.tracker)
    loaded = yaml.safe_load(text)
    assert loaded == reward_model.values(answers.plan, answers.tracker)
    unexplained = [
        line
        for line in text.splitlines()
        if line and not line.startswith("#") and "  # " not in line
    ]
    assert not unexplained
    path = tmp_path / "reward_model.yaml"
    path.write_text(text, encoding="utf-8")
    script, training, model = command.parse_reward_recipe(
        ["--config", str(path), "--use_cpu", "true"]
    )
    assert training.per_device_train_batch_size == rm.per_device_train_batch_size
    assert training.gradient_accumulation_steps == rm.gradient_accumulation_steps
    assert training.max_length == rm.max_length
    assert training.learning_rate == rm.learning_rate
    assert training.gradient_checkpointing == rm.gradient_checkpointing
    assert training.center_rewards_coefficient == reward_model.CENTER_REWARDS
    assert model.model_name_or_path == rm.model.hub_id
    assert model.use_peft == rm.use_peft
    assert model.load_in_4bit == (rm.mode == "qlora")
    if rm.use_peft:
        assert model.lora_task_type == "SEQ_CLS"  # PEFT keeps the score head trainable, saved
    assert "system_prompt" not in loaded  # task.py's (kit/tests/test_reward_model_training.py)
    assert script.dataset_name == SAMPLE_PREFERENCES


def test_the_template_knows_the_commands_fields_and_their_defaults(command):
    """The recipe writes every field of the command, each default value as the dataclass has it
    (one default per field; the system prompt is task.py's, not written)."""
    fields = {f.name: f.default for f in dataclasses.fields(command.RewardScriptArguments)}
    assert set(reward_model.SCRIPT_FIELDS) == set(fields) - UNRENDERED_SCRIPT_FIELDS
    answers = Answers.from_context(VALID[0])
    written = reward_model.values(answers.plan, answers.tracker)
    for key in reward_model.SCRIPT_FIELDS:
        assert written[key] == fields[key], key


THINK_ANSWER = re.compile(r"^<think>.+?</think><answer>.+?</answer>$", re.DOTALL)


def test_the_sample_pairs_are_well_formed_and_credited(project):
    path = project / SAMPLE_PREFERENCES
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert 40 <= len(rows) <= 60
    assert all(set(row) == {"prompt", "chosen", "rejected"} for row in rows)
    assert len({row["prompt"] for row in rows}) == len(rows)
    for row in rows:
        assert THINK_ANSWER.match(row["chosen"]), row["chosen"]
        assert row["chosen"].strip() != row["rejected"].strip()
        assert row["rejected"].strip()
    sources = (project / "data" / "SOURCES.md").read_text(encoding="utf-8")
    line = next(line for line in sources.splitlines() if SAMPLE_PREFERENCES in line)
    assert f"{len(rows)} preference pairs" in line and "CC0" in line
