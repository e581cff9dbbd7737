"""Training a reward model on preference pairs (offline, tiny), and using it as a GRPO reward."""

import json
import math

import pytest
from conftest import load, make_project, smoke_train
from grpo_kit.commands import reward_model
from grpo_kit.commands.reward_model import (
    RewardScriptArguments,
    load_pairs,
    parse_reward_recipe,
)
from grpo_kit.errors import DataError

RECIPE = "configs/reward_model.yaml"
# configs/reward_model.yaml as the template renders it for the CPU tier (LoRA on every linear
# layer, the score head trained and saved with the adapters), and as a bf16 GPU tier may render
# it for a small model: full fine-tuning.
REWARD_RECIPE = """\
dataset_name: data/sample_preferences.jsonl
dataset_test_split: null
test_size: 0.2
prompt_column: prompt
chosen_column: chosen
rejected_column: rejected
system_prompt: You solve math problems.
as_chat: true
accuracy_target: 0.8
model_name_or_path: kit/test-model
dtype: float32
output_dir: outputs/test-model-math-reward-model
learning_rate: 1.0e-04
lr_scheduler_type: linear
num_train_epochs: 1
per_device_train_batch_size: 4
gradient_accumulation_steps: 2
max_length: 1024
center_rewards_coefficient: 0.01
disable_dropout: true
use_cpu: true
bf16: false
optim: adamw_torch
logging_steps: 10
save_steps: 100
save_total_limit: 2
report_to: none
seed: 42
"""
LORA = """\
use_peft: true
lora_r: 8
lora_alpha: 16
lora_dropout: 0.0
lora_target_modules: [all-linear]
lora_task_type: SEQ_CLS
"""
REWARD_RECIPES = {"lora": REWARD_RECIPE + LORA, "full": REWARD_RECIPE}


@pytest.fixture(scope="module")
def reward_projects(tmp_path_factory):
    """{mode: a math project with that configs/reward_model.yaml}."""
    roots = {}
    for mode, text in REWARD_RECIPES.items():
        roots[mode] = make_project(tmp_path_factory.mktemp(f"rm-{mode}"))
        (roots[mode] / RECIPE).write_text(text, encoding="utf-8")
    return roots


@pytest.fixture(params=list(REWARD_RECIPES))
def reward_project(request, reward_projects, monkeypatch):
    """A project with its reward-model recipe (LoRA, or full fine-tuning), run from its folder."""
    monkeypatch.chdir(reward_projects[request.param])
    return reward_projects[request.param]


def test_the_recipe_parses_with_the_installed_trl(reward_project):
    script, training, model = parse_reward_recipe(["--config", RECIPE, "--use_cpu", "true"])
    assert script.dataset_name == reward_model.SAMPLE_PREFERENCES
    assert training.max_length > 0 and training.learning_rate > 0
    if model.use_peft:  # peft must train and save the score head with the adapters
        assert model.lora_task_type == "SEQ_CLS"
    smoke = parse_reward_recipe(["--config", RECIPE, "--smoke"]).model
    assert smoke.model_name_or_path == str(reward_model.TINY_REWARD_MODEL_DIR)


def test_the_system_prompt_is_the_tasks_unless_the_recipe_sets_one(reward_project):
    """task.py is the system prompt's one home: the reward model learns on the prompts GRPO
    scores, without a copy in configs/reward_model.yaml (issue 37)."""
    from grpo_kit.project import load

    written = reward_project / RECIPE
    generated = reward_project / "configs" / "generated_reward_model.yaml"  # as the template
    generated.write_text(  # writes it: no system prompt
        written.read_text().replace("system_prompt: You solve math problems.\n", "")
    )
    script = parse_reward_recipe(["--config", str(generated), "--use_cpu", "true"])[0]
    assert script.system_prompt == load().task.system_prompt
    own = parse_reward_recipe(["--config", RECIPE, "--use_cpu", "true"])[0]  # a recipe's own
    assert own.system_prompt == "You solve math problems."


def test_the_sample_pairs_pass_the_checks_and_become_chats():
    script = RewardScriptArguments(system_prompt="Be brief.")
    pairs = load_pairs(script)
    assert len(pairs.train) + len(pairs.test) == 47 and len(pairs.test) == 9
    row = pairs.train[0]
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    assert row["prompt"][0]["content"] == "Be brief."
    assert [m["role"] for m in row["chosen"] + row["rejected"]] == ["assistant", "assistant"]
    text = load_pairs(RewardScriptArguments(as_chat=False)).train[0]
    assert isinstance(text["prompt"], str) and isinstance(text["chosen"], str)


def write_pairs(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return RewardScriptArguments(dataset_name=str(path))


GOOD = {"prompt": "What is 2 + 2?", "chosen": "<answer>4</answer>", "rejected": "5"}
CHAT = [{"role": "assistant", "content": "<answer>4</answer>"}]
CHAT_5 = [{"role": "assistant", "content": "5"}]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (
            [{"prompt": "q", "chosen": "a"}],
            "column 'rejected' not found (columns: prompt, chosen); set rejected_column",
        ),
        ([GOOD, {**GOOD, "rejected": GOOD["chosen"] + " "}], "row 2: columns 'chosen' and "),
        ([{**GOOD, "chosen": "  "}], "row 1: column 'chosen' is empty"),
        ([{**GOOD, "chosen": CHAT, "rejected": CHAT_5}], "row 1: column 'prompt' is text but"),
        (
            [{**GOOD, "rejected": [{"role": "assistant", "content": ""}]}],
            "row 1: column 'rejected' message 1 has empty content",
        ),
        (
            [{**GOOD, "chosen": ""}, {**GOOD, "rejected": ""}, {**GOOD, "rejected": ""}],
            "row 1: column 'chosen' is empty (2 more row(s) with problems)",
        ),
    ],
    ids=["missing-column", "identical", "empty", "mixed-formats", "empty-message", "counted"],
)
def test_bad_pairs_are_refused_with_file_row_and_column(tmp_path, rows, message):
    script = write_pairs(tmp_path / "pairs.jsonl", rows)
    with pytest.raises(DataError) as error:
        load_pairs(script)
    assert str(tmp_path / "pairs.jsonl") in str(error.value)
    assert message in str(error.value)


def test_a_margin_must_be_a_number(tmp_path):
    rows = [{**GOOD, "margin": "big"}, {**GOOD, "margin": "small"}]
    script = write_pairs(tmp_path / "pairs.jsonl", rows)
    script.margin_column = "margin"
    with pytest.raises(DataError, match="row 1: column 'margin' is 'big', expected a number"):
        load_pairs(script)


# TRL's four preference formats, as its dataset-formats guide shows them.
SKY = [{"role": "user", "content": "What color is the sky?"}]
TRL_FORMATS = {
    "standard": ({"prompt": "The sky is", "chosen": " blue.", "rejected": " green."}, "prompt"),
    "standard-implicit": ({"chosen": "The sky is blue.", "rejected": "The sky is green."}, None),
    "conversational": (
        {
            "prompt": SKY,
            "chosen": [{"role": "assistant", "content": "It is blue."}],
            "rejected": [{"role": "assistant", "content": "It is green."}],
        },
        "prompt",
    ),
    "conversational-implicit": (
        {
            "chosen": [*SKY, {"role": "assistant", "content": "It is blue."}],
            "rejected": [*SKY, {"role": "assistant", "content": "It is green."}],
        },
        None,
    ),
}


@pytest.mark.parametrize("form", list(TRL_FORMATS))
def test_trls_preference_formats_are_accepted_and_stay_what_trl_expects(
    form, tmp_path, tiny_tokenizer
):
    from trl.data_utils import is_conversational

    row, prompt_column = TRL_FORMATS[form]
    script = write_pairs(tmp_path / "pairs.jsonl", [row] * 6)
    script.prompt_column = prompt_column
    pairs = load_pairs(script)
    converted = pairs.train[0]
    assert set(converted) == set(row)
    # Text pairs with a prompt become chats (as GRPO scores this project's completions); the
    # others keep their format.
    assert is_conversational(converted) == (form != "standard-implicit")
    chosen = reward_model.chat_text(tiny_tokenizer, converted.get("prompt"), converted["chosen"])
    assert "blue" in chosen and "green" not in chosen


def test_the_scored_text_is_the_one_grpo_scores(tiny_tokenizer):
    """GRPOTrainer scores a chat prompt plus the completion through TRL's apply_chat_template."""
    from trl.data_utils import apply_chat_template

    prompt = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2 + 2?"}]
    completion = "<think>2 + 2 = 4</think><answer>4</answer>"
    messages = {"messages": prompt + [{"role": "assistant", "content": completion}]}
    expected = apply_chat_template(messages, tiny_tokenizer)["text"]
    assert reward_model.chat_text(tiny_tokenizer, prompt, completion) == expected
    assert reward_model.chat_text(tiny_tokenizer, "2 + 2? ", "4") == "2 + 2? 4"


@pytest.mark.slow
def test_a_trained_reward_model_is_evaluated_and_rewards_grpo(
    reward_project, tiny_model_dir, tmp_path, recipe, sample_rows
):
    from grpo_kit.offline.tiny_model import build_tiny_reward_model

    base = build_tiny_reward_model(tmp_path / "rm-base", load(reward_project))
    out = tmp_path / "reward-model"
    args = ["--config", RECIPE, "--smoke", "--model_name_or_path", str(base),
            "--output_dir", str(out)]  # fmt: skip
    evaluation = reward_model.train_reward_model(args)

    # The evaluation: printed, written, on the held-out pairs.
    assert json.loads((out / reward_model.EVAL_FILE).read_text()) == evaluation
    assert evaluation["pairs"] == 9 and 0 <= evaluation["accuracy"] <= 1
    assert evaluation["passed"] == (evaluation["accuracy"] >= 0.8)
    assert math.isfinite(evaluation["mean_margin"])
    # A plain sequence-classification folder (a LoRA adapter merged, and kept aside).
    _, _, model_args = parse_reward_recipe(args)
    assert (out / "config.json").is_file() and not (out / "adapter_config.json").exists()
    assert (out / "adapter" / "adapter_config.json").is_file() == model_args.use_peft

    # It learned its training pairs in the right direction (a swap would score below 50 %).
    pairs = load_pairs(parse_reward_recipe(args).script)
    prompts = pairs.train["prompt"]
    chosen = reward_model.score_pairs(out, prompts, pairs.train["chosen"])
    rejected = reward_model.score_pairs(out, prompts, pairs.train["rejected"])
    learned = sum(c > r for c, r in zip(chosen, rejected, strict=True)) / len(chosen)
    assert learned >= 0.8, learned

    # reward-debug's call: GRPO prompts (chats) and completion texts.
    scores = reward_model.score_pairs(
        out, [row["prompt"] for row in sample_rows.select(range(3))], ["<answer>1</answer>"] * 3
    )
    assert len(scores) == 3 and all(math.isfinite(s) for s in scores)

    # GRPO loads the folder as its reward model and logs its reward.
    weights = [str(w) for w in recipe.training.reward_weights] + ["0.5"]
    trainer = smoke_train(
        tiny_model_dir, tmp_path / "grpo", "--reward_model", str(out), "--reward_weights", *weights
    )
    logged = [row for row in trainer.state.log_history if "reward" in row]
    assert f"rewards/{out.name}/mean" in logged[-1]
