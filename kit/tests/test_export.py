"""`grpo export`: the sample data in verl's and OpenRLHF's formats, read the way each engine reads
it, and the written reward file, loaded and called the way each engine calls it (their public
source: verl's RLHFDataset and NaiveRewardManager, OpenRLHF's blending_datasets, PromptDataset and
SingleTurnAgentExecutor), scores what the project's own rewards score."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest
from conftest import RECIPE, TASKS, VERIFIED_TASKS, chdir, load, sample_recipe
from conftest import training_rows_of as rows_of  # evaluate's held-out rows left out
from grpo_kit import heldout
from grpo_kit.commands import export
from grpo_kit.errors import DataError, UserError

SINGLE_TURN = [task for task in TASKS if task != "tools"]
ROWS = 4  # training rows exported (max_train_samples): every one is scored
WRONG = "<think>\nno idea\n</think>\n<answer>\nnothing\n</answer>"


def export_to(root: Path, engine: str, out: Path, *extra: str) -> Path:
    argv = ["--engine", engine, "--config", RECIPE, "--output-dir", str(out),
            "--dataset_name", load(root).task.data.sample, "--max_train_samples", str(ROWS),
            *extra]  # fmt: skip
    with chdir(root):
        return export.export(argv)


def model_option(engine: str, model: Path) -> list[str]:
    """OpenRLHF's reward file counts tokens with the model's tokenizer: a model that exists."""
    return ["--model_name_or_path", str(model)] if engine == "openrlhf" else []


def load_reward(path: Path, name: str):
    """The reward entry point loaded as both engines load it: a module from its file path."""
    spec = importlib.util.spec_from_file_location(f"exported_{path.parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def first_rows(recipe) -> list[dict]:
    """The first ROWS training rows of the sample (chat prompt, gold answer, the columns)."""
    return [dict(row) for row in rows_of(recipe).select(range(ROWS))]


def project_scores(root: Path, completions: list, without=()) -> list[float]:
    """The weighted sum of the project's own rewards, as GRPOTrainer computes it (a reward that
    does not apply counts 0), on the first ROWS sample rows; `without`: rewards left out (the
    engine's own)."""
    from grpo_kit.rewards import call_like_trl, resolve

    recipe = sample_recipe(root)
    rows = first_rows(recipe)
    names = recipe.script.reward_funcs
    weights = recipe.training.reward_weights or [1.0] * len(names)
    weights = [0.0 if n in without else w for n, w in zip(names, weights, strict=False)]
    task = recipe.project.task
    with chdir(root):
        funcs = resolve(names, task.reward_table, recipe.reward_settings())
        values = [call_like_trl(f, completions, rows) for f in funcs]
    return [
        sum(w * (v[i] or 0.0) for w, v in zip(weights, values, strict=True))
        for i in range(len(rows))
    ]


def ideal_completions(root: Path) -> list:
    recipe = sample_recipe(root)
    with chdir(root):
        return [recipe.project.task.ideal_completion(r, recipe.task) for r in rows_of(recipe)]


@pytest.fixture(scope="module")
def tokenizers(projects):
    """`tokenizers(task)`: a tokenizer with the project's chat template (the tiny one)."""
    from grpo_kit.offline.tiny_model import build_tokenizer

    made = {}

    def get(task):
        if task not in made:
            project = load(projects(task))
            made[task] = build_tokenizer(project.root / project.task.data.sample,
                                         project.chat_template)  # fmt: skip
        return made[task]

    return get


@pytest.mark.parametrize("task", SINGLE_TURN)
def test_verl_reads_the_rows_and_the_reward_file_scores_as_the_project(
    task, projects, tokenizers, tmp_path
):
    from datasets import load_dataset

    root = projects(task)
    out = export_to(root, "verl", tmp_path / "verl")
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [*export.DATA_FILES["verl"], export.REWARD_FILE, export.LAUNCH_FILE]
    )
    # RLHFDataset._read_files_and_tokenize: datasets' parquet loader, the prompt key rendered.
    rows = load_dataset("parquet", data_files=str(out / "train.parquet"))["train"]
    assert len(rows) == ROWS
    assert {"data_source", "prompt", "ability", "reward_model", "extra_info"} <= set(
        rows.column_names
    )
    held_out = load_dataset("parquet", data_files=str(out / "test.parquet"))["train"]
    with chdir(root):  # evaluate's rows (the sample is one file: the rows held out of it)
        recipe = sample_recipe(root)
        evaluated, _ = heldout.evaluation_rows(recipe.script, recipe.task, recipe.project.task)
    assert len(held_out) == len(evaluated) > 0  # uncapped
    trained = {row["prompt"][-1]["content"] for row in rows}
    assert not trained & {row["prompt"][-1]["content"] for row in held_out}
    tokenizer = tokenizers(task)
    recipe = sample_recipe(root)
    expected_prompts = [r["prompt"] for r in first_rows(recipe)]
    for row, prompt in zip(rows, expected_prompts, strict=True):
        assert row["prompt"] == prompt  # the system prompt and user message training builds
        assert tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True)
        assert row["reward_model"]["style"] == "rule" and row["ability"] == task
        assert row["extra_info"]["split"] == "train"
    # NaiveRewardManager.run_single: keyword arguments, extra_info with its own additions.
    compute_score = load_reward(out / export.REWARD_FILE, "compute_score")
    ideal = ideal_completions(root)[:ROWS]
    engine_own = export.ENGINE_LENGTH_REWARDS["verl"]
    for completions in (ideal, [WRONG] * ROWS):
        expected = project_scores(root, completions, without=engine_own)
        for row, completion, want in zip(rows, completions, expected, strict=True):
            extra_info = {**row["extra_info"], "num_turns": None, "rollout_reward_scores": {}}
            with chdir(tmp_path):  # the engine's working folder is not the project's
                result = compute_score(
                    data_source=row["data_source"],
                    solution_str=completion,
                    ground_truth=row["reward_model"]["ground_truth"],
                    extra_info=extra_info,
                )
            # soft_overlong is verl's own (its DAPO reward manager adds it, on token counts).
            assert result["score"] == pytest.approx(want)
            assert set(result) == {"score", *recipe.script.reward_funcs} - set(engine_own)
    assert project_scores(root, ideal) != project_scores(root, [WRONG] * ROWS)


@pytest.mark.parametrize("task", [task for task in SINGLE_TURN if task in VERIFIED_TASKS])
def test_openrlhf_reads_the_rows_and_the_reward_file_scores_as_the_project(
    task, projects, tokenizers, tmp_path, tiny_model_dir
):
    from datasets import load_dataset

    root = projects(task)
    # max_steps x prompts per step rows (OpenRLHF's training file): ROWS of them.
    # A long max_completion_length: soft_overlong is 0 on these completions whether counted
    # as characters / 4 (the expected scores) or as the tokenizer's tokens (the reward file;
    # test_export_engines.py checks that count).
    out = export_to(root, "openrlhf", tmp_path / "openrlhf", "--max_steps", str(ROWS),
                    "--max_completion_length", "4096",
                    *model_option("openrlhf", tiny_model_dir))  # fmt: skip
    # blending_datasets: a .jsonl file is datasets' json loader; PromptDataset's preprocess_data
    # with --data.input_key prompt --data.apply_chat_template --data.label_key label.
    data = load_dataset("json", data_files=str(out / "train.jsonl"))["train"]
    assert len(data) == ROWS
    tokenizer = tokenizers(task)
    prompts = [tokenizer.apply_chat_template(d["prompt"], tokenize=False,
                                             add_generation_prompt=True) for d in data]  # fmt: skip
    labels = [d[export.LABEL_KEY] for d in data]
    assert all(isinstance(label, str) for label in labels)
    reward_func = load_reward(out / export.REWARD_FILE, "reward_func")
    ideal = ideal_completions(root)[:ROWS]
    for completions in (ideal, [WRONG] * ROWS):
        # SingleTurnAgentExecutor: the prompt's ids and the generated ids (ending in eos),
        # decoded together WITH special tokens, one query per call.
        queries = []
        for prompt, completion in zip(prompts, completions, strict=True):
            ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
            ids += tokenizer(completion, add_special_tokens=False)["input_ids"]
            queries.append(tokenizer.decode([*ids, tokenizer.eos_token_id]))
        with chdir(tmp_path):
            single = [
                reward_func([q], [p], [lb])
                for q, p, lb in zip(queries, prompts, labels, strict=True)
            ]
            batch = reward_func(queries, prompts, labels)
        expected = project_scores(root, completions, without=("soft_overlong",))  # 0 at 4096
        assert [float(s["rewards"][0]) for s in single] == pytest.approx(expected)
        assert batch["rewards"].tolist() == pytest.approx(expected)
        assert all(0.0 <= float(s) <= 1.0 for s in batch["scores"])
        assert set(batch["extra_logs"]) == set(sample_recipe(root).script.reward_funcs)
        if completions is ideal:  # fully correct: dynamic filtering reads 1
            assert batch["scores"].tolist() == [1.0] * ROWS
    assert reward_func([], [], [])["rewards"].numel() == 0


def test_the_reward_file_finds_a_moved_project_through_the_environment(
    projects, tmp_path, monkeypatch
):
    root = projects("math")
    out = export_to(root, "verl", tmp_path / "verl")
    moved = tmp_path / "elsewhere" / "reward.py"
    moved.parent.mkdir()
    moved.write_text((out / export.REWARD_FILE).read_text())
    monkeypatch.setenv(export.ROOT_VARIABLE, str(root))
    compute_score = load_reward(moved, "compute_score")
    from datasets import load_dataset

    first = load_dataset("parquet", data_files=str(out / "train.parquet"))["train"][0]
    ideal = ideal_completions(root)[0]
    result = compute_score(first["data_source"], ideal, first["reward_model"]["ground_truth"],
                           first["extra_info"])  # fmt: skip
    assert result["score"] == pytest.approx(
        project_scores(root, [ideal] * ROWS, export.ENGINE_LENGTH_REWARDS["verl"])[0]
    )


@pytest.mark.parametrize("engine", export.ENGINES)
def test_the_launch_example_carries_the_recipes_numbers(engine, projects, tmp_path, tiny_model_dir):
    root = projects("math")
    out = export_to(root, engine, tmp_path / engine, *model_option(engine, tiny_model_dir))
    text = (out / export.LAUNCH_FILE).read_text()
    recipe = sample_recipe(root)
    training = recipe.training
    assert (
        str(tiny_model_dir) if engine == "openrlhf" else recipe.model.model_name_or_path
    ) in text
    assert str(out / export.REWARD_FILE) in text and str(out / export.DATA_FILES[engine][0]) in text
    group = {"verl": f"rollout.n={training.num_generations}",
             "openrlhf": f"--rollout.n_samples_per_prompt {training.num_generations}"}  # fmt: skip
    assert group[engine] in text
    length = training.max_completion_length
    lengths = {"verl": f"data.max_response_length={length}",
               "openrlhf": f"--rollout.max_new_tokens {length}"}  # fmt: skip
    assert lengths[engine] in text and str(training.learning_rate) in text
    assert f"lora{'_' if engine == 'verl' else '.'}rank" in text  # the recipe trains LoRA
    if engine == "verl":  # the keys main_ppo and validate_config read
        assert f"reward.custom_reward_function.path={out / export.REWARD_FILE}" in text
        assert "\n  custom_reward_function" not in text
        micro = training.per_device_train_batch_size
        assert f"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu={micro}" in text
        assert ("actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu" in text) == (
            training.beta > 0
        )
        assert "trainer.test_freq=" in text and "trainer.test_freq=-1" not in text
        assert "reward.reward_manager.name=dapo" in text  # soft_overlong on verl's token counts
    else:  # names PEFT matches in a list, eval on, the held-out file not cut
        assert "--ds.lora.target_modules down_proj gate_proj k_proj o_proj q_proj" in text
        assert "all-linear" not in text
        assert "--eval.steps " in text and "--data.max_samples" not in text
    assert subprocess.run(["bash", "-n", str(out / export.LAUNCH_FILE)]).returncode == 0


def test_prompts_per_step_follow_trls_batch_arithmetic(projects):
    """TRL: one generation batch of per_device x accumulation x processes completions per
    optimizer step, num_generations per prompt."""
    recipe = sample_recipe(projects("math"))
    numbers = export.numbers(recipe)
    training = recipe.training
    per_step = training.per_device_train_batch_size * training.gradient_accumulation_steps
    assert numbers.prompts_per_step * numbers.group == per_step
    assert numbers.lora_rank == recipe.model.lora_r


def test_an_agent_task_is_refused_with_the_reason(projects, tmp_path):
    with pytest.raises(UserError, match="single-turn tasks only.*agent_func"):
        export_to(projects("tools"), "verl", tmp_path / "verl")
    assert not (tmp_path / "verl").exists()


def test_bad_data_writes_nothing(projects, tmp_path):
    with pytest.raises(DataError, match="column 'nope' not found"):
        export_to(projects("math"), "verl", tmp_path / "verl", "--prompt_column", "nope")
    assert not (tmp_path / "verl").exists()


def test_a_folder_that_is_not_an_export_is_not_replaced(projects, tmp_path, tiny_model_dir):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    with pytest.raises(UserError, match="not empty and holds no earlier export"):
        export_to(projects("math"), "openrlhf", mine, *model_option("openrlhf", tiny_model_dir))
    assert (mine / "notes.txt").read_text() == "keep"
    # An earlier export is replaced whole.
    model = model_option("openrlhf", tiny_model_dir)
    out = export_to(projects("math"), "openrlhf", tmp_path / "again", *model)
    (out / "stale.txt").write_text("old")
    export_to(projects("math"), "openrlhf", out, *model)
    assert not (out / "stale.txt").exists() and (out / export.REWARD_FILE).is_file()


def test_openrlhf_queries_lose_the_prompt_and_the_special_tokens():
    scorer = export.Scorer([], [], [], None, ["<|im_end|>", "<|endoftext|>"])
    prompt = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert scorer.response(prompt + "<answer>4</answer><|im_end|>", prompt) == "<answer>4</answer>"
    # A prompt that does not round-trip exactly: cut at the common prefix.
    assert scorer.response("<|im_start|>user\nho there", prompt) == "o there"


def test_the_reward_file_refuses_to_load_without_its_verifiers(projects, tmp_path, monkeypatch):
    """A missing verifier package would score every completion its minimum with a warning (the
    engines swallow errors raised while scoring): the file fails when the engine loads it."""
    out = export_to(projects("math"), "verl", tmp_path / "verl")
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "math_verify" else real(name, *a),
    )
    with pytest.raises(UserError, match="cannot score without math-verify.*pip install"):
        load_reward(out / export.REWARD_FILE, "compute_score")


def test_openrlhf_lora_targets_are_the_models_module_names(tiny_model_dir):
    """--ds.lora.target_modules is nargs="*": PEFT gets a list of names, never a pattern."""
    names, note = export.lora_module_names("all-linear", str(tiny_model_dir))
    assert note is None and {"q_proj", "down_proj"} <= set(names) and "lm_head" not in names
    assert export.lora_module_names(r".*\.(q_proj|v_proj)", str(tiny_model_dir))[0] == [
        "q_proj",
        "v_proj",
    ]
    with pytest.raises(UserError, match="select no linear layer"):
        export.lora_module_names(["nope_proj"], str(tiny_model_dir))


def test_a_procedural_export_refuses_to_load_without_reasoning_gym(projects, tmp_path, monkeypatch):
    """The procedural task's correctness is its generators' own scorer: in an engine's reward
    workers without reasoning-gym every row scored 0 (the verl and OpenRLHF checks caught a
    weighted 1.0 for a right answer); the file now fails when the engine loads it, naming the
    requirement (the kit's procedural extra's pin)."""
    out = export_to(projects("procedural"), "verl", tmp_path / "verl")
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "reasoning_gym" else real(name, *a),
    )
    wanted = export.TASK_REWARD_DEPENDENCIES["procedural_correctness"][1]
    with pytest.raises(UserError, match=f"cannot score without {wanted}.*pip install"):
        load_reward(out / export.REWARD_FILE, "compute_score")
