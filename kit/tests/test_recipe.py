"""The recipe is checked against the installed TRL (a field TRL removed or renamed fails here) and
its layers apply in the documented order: the task's defaults < the recipe file < configs/local.yaml
< a command's extra layer < --smoke/--trial < reading only < the command line. Each test runs in
a project of its own (made here, with the recipe it needs). Also the project itself:
`project.load` and its errors."""

import importlib.util
import os
from pathlib import Path

import pytest
import yaml
from conftest import CPU_RECIPE, RECIPE, TASKS, TOOLS_RECIPE, make_project
from grpo_kit import recipe as recipes
from grpo_kit.errors import UserError
from grpo_kit.project import load
from grpo_kit.recipe import LOCAL_RECIPE, Layer, parse_recipe

# A recipe as grpo-template writes it for a GPU tier (Qwen3.5-2B, 24GB, math, transformers):
# bf16, vLLM colocated, every GRPOConfig field the template sets.
# As grpo-template writes it: the task's data mapping, system prompt, rewards and weights are
# task.py's (recipe.TASK_OWNED, DATA_FIELDS), never restated here.
GPU_RECIPE = r"""
max_prompt_tokens: 384
health_zero_std_max: 0.8
health_kl_max: 0.5
health_entropy_min: 0.05
health_clipped_max: 0.3
health_flat_logs: 20
health_stop_on_fatal: false
adaptive_reward_weights: false
reward_model: null
model_name_or_path: Qwen/Qwen3.5-2B
dtype: bfloat16
use_peft: true
lora_r: 32
lora_alpha: 64
lora_dropout: 0.0
lora_target_modules: [".*language_model.*\\.(q_proj|k_proj|v_proj|o_proj|up_proj|down_proj)"]
output_dir: outputs/qwen3.5-2b-math-grpo
learning_rate: 1.0e-05
lr_scheduler_type: cosine
warmup_steps: 10
max_steps: 500
per_device_train_batch_size: 8
gradient_accumulation_steps: 1
num_generations: 8
max_completion_length: 512
chat_template_kwargs: {enable_thinking: false}
use_vllm: true
vllm_mode: colocate
vllm_gpu_memory_utilization: 0.35
vllm_max_model_length: 896
beta: 0.0
loss_type: dapo
importance_sampling_level: token
scale_rewards: group
multi_objective_aggregation: sum_then_normalize
epsilon: 0.2
epsilon_high: 0.28
mask_truncated_completions: false
top_entropy_quantile: 1.0
vllm_importance_sampling_correction: true
vllm_importance_sampling_mode: token_truncate
vllm_importance_sampling_clip_max: 2.0
bf16: true
activation_checkpointing: true
optim: adamw_torch_fused
logging_steps: 5
save_steps: 50
save_total_limit: 3
report_to: none
log_completions: true
num_completions_to_print: 2
seed: 42
"""
GPU_TIER = 'name = "24GB"\nmemory_gib = 22.0\ngpus_per_node = 1\nestimated_peak_gib = 14.7'
# The Unsloth backend's version of it: Unsloth's own fields, its vLLM instead of TRL's.
UNSLOTH_RECIPE = (
    GPU_RECIPE.replace("activation_checkpointing: true", "gradient_checkpointing: true")
    .replace("optim: adamw_torch_fused", "optim: adamw_8bit")
    .replace("use_vllm: true\nvllm_mode: colocate\nvllm_gpu_memory_utilization: 0.35\n", "")
    .replace("vllm_max_model_length: 896\n", "")
    + "max_seq_length: 896\nfast_inference: true\nmax_lora_rank: 32\n"
)
# The task's own fields a generated recipe writes (the task's arguments, task.py).
TASK_KEYS = {
    "math": "",
    "code": "sandbox_workers: 2\nsandbox_timeout: 5.0\nsandbox_memory_mb: 512\n"
    "sandbox_isolation: auto\nsolution_column: code\nsetup_column: test_setup_code\n",
    "json": "schema_column: schema\n",
    "classification": "labels: [World, Sports, Business, Sci/Tech]\n",
    "custom": "",
    "procedural": "",
    "judge": "judge_base_url: http://localhost:8000/v1\njudge_model: Qwen/Qwen2.5-7B-Instruct\n"
    "judge_api_key_env: ''\n",
    "tools": TOOLS_RECIPE + "sandbox_workers: 2\ncorpus: data/sample_corpus.jsonl\n"
    "search_results: 3\ntool_output_chars: 600\nenvironment_column: environment\n"
    "default_environment: python\ntool_call_cost: 0.1\nfree_tool_calls: 2\n",
}
STALE = ("max_prompt_length", "warmup_ratio", "vllm_device", "max_new_tokens")
# Fields Unsloth's CPU fallback rewrites when the config is built (bf16/fp16 by what the CPU
# supports, 8-bit optimizers to fused AdamW).
UNSLOTH_CPU_REWRITES = {"bf16", "fp16", "tf32", "optim", "use_cpu", "dataloader_pin_memory"}
NO_UNSLOTH = pytest.mark.skipif(
    importlib.util.find_spec("unsloth") is None, reason="unsloth is not installed (backend unsloth)"
)


def project_here(root: Path, monkeypatch, task="math", **options) -> Path:
    """A project made in `root` (see conftest.make_project); the test runs in it."""
    make_project(root, task, **options)
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def cpu_project(tmp_path, monkeypatch) -> Path:
    """A math project with the small CPU recipe (a folder of its own: tests write local.yaml)."""
    return project_here(tmp_path / "project", monkeypatch)


@pytest.fixture
def gpu_project(tmp_path, monkeypatch) -> Path:
    """A math project generated for a GPU tier: its recipe is bf16 and uses vLLM."""
    return project_here(tmp_path / "project", monkeypatch, recipe=GPU_RECIPE, tier=GPU_TIER)


def recipe_values() -> dict:
    """What the recipe files say (configs/local.yaml on top, if you have one): the test compares
    it with what the parser made of them."""
    values = yaml.safe_load(Path(RECIPE).read_text())
    if LOCAL_RECIPE.is_file():
        values.update(yaml.safe_load(LOCAL_RECIPE.read_text()) or {})
    return values


def unsloth_cpu_mode(project) -> bool:
    import torch

    return project.backend == "unsloth" and not torch.cuda.is_available()


def parse(*overrides):
    # read_only (use_cpu) lets a GPU recipe (bf16/fp16) parse on this machine.
    return parse_recipe(["--config", RECIPE, *overrides], read_only=True)


RECIPES = [  # (task, backend, recipe, tier)
    *(pytest.param(t, "transformers", CPU_RECIPE + TASK_KEYS[t], 'name = "cpu"', id=f"{t}-cpu")
      for t in TASKS),
    pytest.param("math", "transformers", GPU_RECIPE, GPU_TIER, id="math-24GB"),
    pytest.param("math", "unsloth", UNSLOTH_RECIPE, GPU_TIER, id="math-24GB-unsloth",
                 marks=NO_UNSLOTH),
]  # fmt: skip


@pytest.mark.parametrize(("task", "backend", "text", "tier"), RECIPES)
def test_recipe_loads_into_installed_grpo_config_and_model_config(
    task, backend, text, tier, tmp_path, monkeypatch
):
    from trl import GRPOConfig, ModelConfig

    project_here(tmp_path / "project", monkeypatch, task, backend=backend, recipe=text, tier=tier)
    recipe = parse()
    script_args, task_args, backend_args, training_args, model_args, project, _ = recipe
    assert isinstance(training_args, GRPOConfig)
    assert isinstance(model_args, ModelConfig)
    assert project.task.name == task and project.backend == backend
    assert isinstance(task_args, project.task.arguments)
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
        if key == "lora_target_modules":  # a one-element list and its string are the same
            got, value = ([v] if isinstance(v, str) else v for v in (got, value))
        if key == "report_to":
            got = got[0] if got else "none"
        if key in UNSLOTH_CPU_REWRITES and unsloth_cpu_mode(project):
            continue  # present, but Unsloth's CPU mode picks precision and optimizer itself
        assert got == value or str(got) == str(value), f"{key}: recipe {value!r}, parsed {got!r}"
    # What the recipe leaves out comes from the task (its data mapping, prompt and rewards).
    for key, value in project.task.recipe_defaults().items():
        if key not in values:
            assert parsed[key] == value, f"{key}: the task's default {value!r}, got {parsed[key]!r}"


def test_no_field_that_current_trl_rejects():
    """Neither the recipes here nor the kit's own layers (each task's defaults, the smoke and
    trial overrides) hold a field current TRL removed."""
    import importlib

    files = [yaml.safe_load(text) for text in (GPU_RECIPE, UNSLOTH_RECIPE, CPU_RECIPE)]
    layers = [*files, recipes.SMOKE_OVERRIDES, recipes.TRIAL_OVERRIDES]
    for task in TASKS:
        found = importlib.import_module(f"grpo_kit.starters.{task}.task").TASK
        layers += [found.recipe_defaults(), dict(found.smoke)]
    for values in layers:
        for stale in STALE:
            assert stale not in values


def test_a_removed_field_fails_the_parse_and_names_its_file(gpu_project, tmp_path):
    stale = tmp_path / "stale.yaml"
    stale.write_text(Path(RECIPE).read_text() + "\nmax_prompt_length: 512\n")
    with pytest.raises(UserError, match=f"{stale}: unknown field.*max_prompt_length") as err:
        parse_recipe(["--config", str(stale)], read_only=True)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("offline", [(), ("--smoke",), ("--trial",)])
def test_batch_arithmetic_is_valid(gpu_project, offline):
    training_args = parse_recipe(["--config", RECIPE, *offline], read_only=True).training
    generation_batch = training_args.generation_batch_size
    assert generation_batch % training_args.num_generations == 0
    assert generation_batch % training_args.per_device_train_batch_size == 0


def test_rewards_and_weights_line_up(gpu_project):
    recipe = parse()
    names, weights = recipe.script.reward_funcs, recipe.training.reward_weights
    assert len(weights) == len(names)
    table = load().task.reward_table
    for name in names:
        assert name in table or "." in name


@pytest.mark.parametrize("task", TASKS)
def test_each_tasks_default_rewards_and_weights_line_up(task, tmp_path, monkeypatch):
    """A recipe without reward_funcs trains the task's rewards with their weights."""
    project_here(tmp_path / "project", monkeypatch, task)
    recipe = parse()
    names, weights = recipe.script.reward_funcs, recipe.training.reward_weights
    assert names and len(weights) == len(names)
    assert set(names) <= set(recipe.project.task.reward_table)


def test_command_line_overrides_the_recipe(gpu_project):
    recipe = parse("--learning_rate", "3e-5", "--max_prompt_tokens", "99")
    assert recipe.training.learning_rate == pytest.approx(3e-5)
    assert recipe.script.max_prompt_tokens == 99


def test_an_unknown_option_on_the_command_line_is_one_clear_error(cpu_project):
    with pytest.raises(UserError, match="the command line: unknown option.*--max_stepz") as err:
        parse("--max_stepz", "3")
    assert "\n" not in str(err.value)


def test_missing_recipe_is_one_clear_error(cpu_project):
    with pytest.raises(UserError, match="recipe not found") as err:
        parse_recipe(["--config", "configs/nope.yaml"])
    assert "\n" not in str(err.value) and "--config" in str(err.value)


def test_the_default_recipe_is_configs_grpo_yaml(cpu_project):
    (cpu_project / RECIPE).write_text(CPU_RECIPE.replace("max_steps: 2", "max_steps: 13"))
    assert parse_recipe([], read_only=True).training.max_steps == 13


def test_smoke_overrides_make_any_recipe_cpu_and_tiny(gpu_project):
    script_args, _, _, training_args, model_args, *_ = parse_recipe(["--config", RECIPE, "--smoke"])
    assert training_args.use_cpu and not training_args.bf16 and not training_args.fp16
    assert not model_args.load_in_4bit and not training_args.use_vllm
    assert model_args.model_name_or_path == "outputs/tiny-model"
    assert model_args.model_name_or_path == str(recipes.TINY_MODEL_DIR)
    assert training_args.output_dir == str(recipes.SMOKE_OUTPUT_DIR)
    assert training_args.max_steps == 2
    assert script_args.smoke
    assert script_args.reward_funcs == [r.name for r in load().task.rewards]


def test_a_gpu_recipe_parses_read_only_on_any_machine(gpu_project):
    """Commands that only read the recipe (infer, merge, report) read a GPU tier's on a laptop;
    training it there is one clear error that says what to run instead."""
    import torch

    read = parse()
    assert read.training.use_cpu and read.training.bf16 and read.training.use_vllm
    assert read.project.tier.name == "24GB" and read.project.tier.is_gpu
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the recipe trains here")
    with pytest.raises(UserError, match="tuned for a GPU tier.*make try") as err:
        parse_recipe(["--config", RECIPE])
    assert "\n" not in str(err.value)


def test_local_yaml_applies_on_top_of_the_generated_recipe(gpu_project, tmp_path):
    LOCAL_RECIPE.write_text("max_steps: 7\nsystem_prompt: mine\n")
    recipe = parse("--learning_rate", "3e-5")
    assert recipe.training.max_steps == 7 and recipe.script.system_prompt == "mine"
    assert recipe.training.learning_rate == pytest.approx(3e-5)  # the command line still wins
    assert parse("--config=configs/grpo.yaml").training.max_steps == 7  # the = form too
    assert parse_recipe([], read_only=True).training.max_steps == 7  # and the default recipe
    other = tmp_path / "other.yaml"
    other.write_text(Path(RECIPE).read_text())
    assert parse_recipe(["--config", str(other)], read_only=True).training.max_steps != 7
    assert parse_recipe([f"--config={other}"], read_only=True).training.max_steps != 7


def test_layers_apply_in_the_documented_order(gpu_project):
    """recipe < local.yaml < an extra layer (stage) < --smoke < command line, all in memory."""
    LOCAL_RECIPE.write_text("max_steps: 7\nlearning_rate: 1.0e-4\nseed: 3\nlogging_steps: 9\n")
    before = sorted(p for p in gpu_project.rglob("*"))
    stage = Layer("a stage", {"learning_rate": 2.0e-4, "seed": 5, "logging_steps": 8})
    recipe = parse_recipe(["--config", RECIPE, "--smoke", "--seed", "11"], extra=stage)
    training = recipe.training
    assert training.max_steps == 2  # --smoke over local.yaml
    assert training.learning_rate == pytest.approx(2.0e-4)  # the stage over local.yaml
    assert training.logging_steps == 1  # --smoke over the stage
    assert training.seed == 11  # the command line over everything
    assert sorted(p for p in gpu_project.rglob("*")) == before  # no temporary recipe files


def test_the_task_gives_the_lowest_layer(tmp_path, monkeypatch):
    """A recipe that names no data, prompt or rewards trains the task's; the file overrides."""
    project_here(tmp_path / "project", monkeypatch, "classification")
    recipe = parse()
    task = recipe.project.task
    assert recipe.script.dataset_name == task.data.dataset_name
    assert recipe.script.prompt_column == task.data.prompt_column
    assert recipe.script.system_prompt == task.system_prompt
    assert recipe.script.reward_funcs == [r.name for r in task.rewards]
    assert recipe.training.reward_weights == [float(r.weight) for r in task.rewards]
    (tmp_path / "project" / RECIPE).write_text(CPU_RECIPE + "prompt_column: sentence\n")
    assert parse().script.prompt_column == "sentence"


@pytest.mark.parametrize("task", TASKS)
def test_smoke_reads_the_sample_data_with_its_own_columns(task, tmp_path, monkeypatch):
    """While the recipe names the task's default data (the Hub dataset the generated recipe
    writes), a column mapping in local.yaml does not break the offline smoke run: it reads the
    shipped sample with the sample's own columns."""
    root = project_here(tmp_path / "project", monkeypatch, task)
    project = load(root)
    columns = {f: "mine" for f in vars(parse().task) if f.endswith("_column")}
    mapping = {"prompt_column": "q", "answer_column": "a", **columns}
    LOCAL_RECIPE.write_text(yaml.safe_dump(mapping))
    mine = parse()
    assert (mine.script.dataset_name, mine.script.prompt_column) == (
        project.task.data.dataset_name,
        "q",
    )
    assert all(getattr(mine.task, field) == "mine" for field in columns)
    smoke = parse_recipe(["--config", RECIPE, "--smoke"])
    assert smoke.script.dataset_name == offline_default(project)
    assert smoke.script.prompt_column == project.task.data.prompt_column
    assert smoke.script.answer_column == project.task.data.answer_column
    sample = {**recipes.sample_data_values(project), "dataset_name": offline_default(project)}
    parts = {**vars(smoke.script), **vars(smoke.task)}
    assert {key: parts[key] for key in sample} == sample


def offline_default(project) -> str:
    """What offline runs read while the recipe names the task's default data: the shipped
    sample, or the problems a procedural task generates (offline, no sample needed)."""
    data = project.task.data
    return data.dataset_name if project.task.generate is not None else data.sample


@pytest.mark.parametrize("task", TASKS)
def test_smoke_reads_your_data_once_the_recipe_names_your_own(task, tmp_path, monkeypatch):
    """issue 29: with your own data in local.yaml (its columns, labels), smoke, reward-debug and
    the other offline commands read it, not the sample checked against your settings."""
    root = project_here(tmp_path / "project", monkeypatch, task)
    project = load(root)
    columns = {f: "mine" for f in vars(parse().task) if f.endswith("_column")}
    mapping = {"dataset_name": "data/mine.csv", "prompt_column": "q", "answer_column": "a"}
    LOCAL_RECIPE.write_text(yaml.safe_dump({**mapping, **columns}))
    for offline in (["--smoke"], ["--trial"]):
        recipe = parse_recipe(["--config", RECIPE, *offline])
        assert recipe.script.dataset_name == "data/mine.csv", offline
        assert (recipe.script.prompt_column, recipe.script.answer_column) == ("q", "a")
        assert all(getattr(recipe.task, field) == "mine" for field in columns)
    assert recipe.model.model_name_or_path == str(recipes.TINY_MODEL_DIR)
    read = parse_recipe(["--config", RECIPE], read_only=True, offline_data=True)
    assert read.script.dataset_name == "data/mine.csv"
    # Back on the task's default data: the sample again, for the offline data readers too.
    LOCAL_RECIPE.write_text(yaml.safe_dump(columns))
    read = parse_recipe(["--config", RECIPE], read_only=True, offline_data=True)
    assert read.script.dataset_name == offline_default(project)
    assert all(getattr(read.task, field) != "mine" for field in columns)


def test_the_default_data_is_the_tasks_dataset_or_its_sample(tmp_path, monkeypatch):
    root = project_here(tmp_path / "project", monkeypatch, "math")
    project = load(root)
    data = project.task.data
    assert recipes.names_default_data(
        project, {"dataset_name": data.dataset_name, "dataset_config": data.dataset_config}
    )
    assert recipes.names_default_data(project, {"dataset_name": data.sample})
    assert recipes.names_default_data(project, {"dataset_name": f"./{data.sample}"})
    assert not recipes.names_default_data(project, {"dataset_name": "data/mine.jsonl"})
    assert not recipes.names_default_data(project, {"dataset_name": "someone/else"})
    other_config = {"dataset_name": data.dataset_name, "dataset_config": "socratic"}
    assert not recipes.names_default_data(project, other_config)


def test_trial_runs_your_own_data_on_the_cpu_and_tiny_model(gpu_project):
    """`make try`: the smoke overrides, but the data mapping stays yours."""
    LOCAL_RECIPE.write_text("dataset_name: my/data\nprompt_column: q\nanswer_column: a\n")
    trial = parse_recipe(["--config", RECIPE, "--trial"])
    assert (trial.script.dataset_name, trial.script.prompt_column) == ("my/data", "q")
    assert trial.training.use_cpu and not trial.training.use_vllm and not trial.training.bf16
    assert trial.model.model_name_or_path == str(recipes.TINY_MODEL_DIR)
    assert trial.training.output_dir == str(recipes.TRIAL_OUTPUT_DIR)
    assert trial.training.max_steps == recipes.TRIAL_OVERRIDES["max_steps"]
    with pytest.raises(UserError, match="exclude each other"):
        parse_recipe(["--config", RECIPE, "--trial", "--smoke"])


@pytest.mark.parametrize("checkpointing", [True, False])
def test_the_distributed_smoke_run_keeps_the_recipes_checkpointing_and_ddp(
    gpu_project, checkpointing
):
    """issue 27: `make smoke-distributed` (--smoke-distributed) runs the recipe's own
    checkpointing and DDP settings, which decide whether DDP's reducer finishes (--smoke turns
    checkpointing off and hid the failure of full fine-tuning with a vision tower); only the
    model's size, the data and the run's length shrink, as in --smoke."""
    flag = str(checkpointing).lower()
    LOCAL_RECIPE.write_text(
        f"activation_checkpointing: {flag}\nddp_find_unused_parameters: {flag}\n"
    )
    smoke = parse_recipe(["--config", RECIPE, "--smoke"])
    distributed = parse_recipe(["--config", RECIPE, "--smoke-distributed"])
    training = distributed.training
    assert training.activation_checkpointing is checkpointing
    assert training.gradient_checkpointing is checkpointing
    assert training.ddp_find_unused_parameters is checkpointing
    assert not smoke.training.activation_checkpointing  # what --smoke does (and keeps doing)
    assert training.output_dir == str(recipes.SMOKE_DISTRIBUTED_OUTPUT_DIR)
    assert training.output_dir == "outputs/smoke-distributed"
    # Everything else as --smoke: tiny model, CPU, full precision, no vLLM, 2 steps.
    assert distributed.script.smoke
    assert distributed.model.model_name_or_path == str(recipes.TINY_MODEL_DIR)
    assert training.use_cpu and not training.bf16 and not training.use_vllm
    assert (training.max_steps, training.num_generations) == (2, 4)
    assert distributed.script.dataset_name == smoke.script.dataset_name


def test_the_distributed_smoke_layer_is_the_smoke_layer_less_what_it_keeps(gpu_project):
    """One place for each fact: the layer is SMOKE_OVERRIDES (and the task's smoke keys) minus
    DISTRIBUTED_SMOKE_KEEPS, with its own output folder."""
    import dataclasses

    project = load()
    parser = recipes.recipe_parser(project)
    fields = {f.name for t in parser.dataclass_types for f in dataclasses.fields(t)}
    below = recipe_values()
    smoke = recipes.smoke_values(project, fields, below)
    distributed = recipes.smoke_distributed_values(project, fields, below)
    assert {"activation_checkpointing", "gradient_checkpointing"} <= set(smoke)
    assert not set(distributed) & set(recipes.DISTRIBUTED_SMOKE_KEEPS)
    expected = {k: v for k, v in smoke.items() if k not in recipes.DISTRIBUTED_SMOKE_KEEPS}
    assert distributed == {**expected, "output_dir": "outputs/smoke-distributed"}
    assert recipes.OFFLINE_LAYERS["smoke-distributed"] is recipes.smoke_distributed_values


@pytest.mark.parametrize(
    "flags",
    [
        ("--smoke", "--smoke-distributed"),
        ("--smoke-distributed", "--trial"),
        ("--smoke", "--trial", "--smoke-distributed"),
    ],
)
def test_the_offline_flags_exclude_each_other(cpu_project, flags):
    with pytest.raises(UserError, match="exclude each other") as err:
        parse_recipe(["--config", RECIPE, *flags])
    message = str(err.value)
    assert "\n" not in message and "--smoke-distributed (make smoke-distributed)" in message
    assert all(flag in message for flag in flags)


def test_an_unknown_field_names_the_layer_that_holds_it(cpu_project):
    LOCAL_RECIPE.write_text("max_stepz: 7\n")
    with pytest.raises(UserError, match="local.yaml: unknown field.*max_stepz") as err:
        parse()
    assert "\n" not in str(err.value)
    LOCAL_RECIPE.unlink()
    (cpu_project / RECIPE).write_text(CPU_RECIPE + "lora_rank: 8\n")
    with pytest.raises(UserError, match=f"{RECIPE}: unknown field.*lora_rank"):
        parse()
    (cpu_project / RECIPE).write_text(CPU_RECIPE)
    with pytest.raises(UserError, match=r"stage 2 \(b\): unknown field.*max_stepz"):
        parse_recipe(["--config", RECIPE], extra=Layer("stage 2 (b)", {"max_stepz": 1}))


def test_a_broken_local_yaml_is_one_clear_error(cpu_project):
    LOCAL_RECIPE.write_text("- not a mapping\n")
    with pytest.raises(UserError, match="local.yaml: a recipe is a mapping"):
        parse()
    LOCAL_RECIPE.write_text("max_steps: [1\n")
    with pytest.raises(UserError, match="local.yaml: not valid YAML"):
        parse()


def test_an_empty_local_yaml_changes_nothing(cpu_project):
    LOCAL_RECIPE.write_text("# nothing yet\n")
    assert parse().training.max_steps == yaml.safe_load(CPU_RECIPE)["max_steps"]


def test_env_sets_environment_variables_for_the_run(cpu_project, monkeypatch):
    """TRL's `env:` mapping is not a field: its variables are set for the run."""
    monkeypatch.setenv("GRPO_TEST_RECIPE_ENV", "before")  # restored after the test
    LOCAL_RECIPE.write_text("env:\n  GRPO_TEST_RECIPE_ENV: 1\nmax_steps: 5\n")
    assert parse().training.max_steps == 5
    assert os.environ["GRPO_TEST_RECIPE_ENV"] == "1"


# Sampling that biases vLLM's importance-sampling correction (issue 28): vLLM returns the
# log-probs of the truncated/reshaped distribution, the trainer recomputes them over the full
# vocabulary at `temperature` (huggingface/trl#6789).
BIASED = [
    ("top_p: 0.95\n", [("top_p", 0.95)]),
    ("top_k: 20\n", [("top_k", 20)]),
    ("min_p: 0.05\n", [("min_p", 0.05)]),
    ("repetition_penalty: 1.1\n", [("repetition_penalty", 1.1)]),
    ("generation_kwargs: {temperature: 0.7}\n", [("generation_kwargs.temperature", 0.7)]),
    ("generation_kwargs: {top_p: 0.9}\n", [("generation_kwargs.top_p", 0.9)]),
    ("top_p: 0.9\ntop_k: 50\n", [("top_p", 0.9), ("top_k", 50)]),
]
NEUTRAL = [
    "",  # TRL's defaults
    "top_p: 1.0\ntop_k: 0\nmin_p: null\nrepetition_penalty: 1.0\n",
    "temperature: 0.7\n",  # the trainer divides by it too
    "generation_kwargs: {temperature: 1.0}\n",  # the trainer's temperature
    "top_k: -1\nmin_p: 0.0\n",  # vLLM's spellings of "off"
]


@pytest.mark.parametrize(("local", "found"), BIASED)
def test_sampling_that_biases_the_is_correction_is_found(gpu_project, local, found):
    LOCAL_RECIPE.write_text(local)
    assert recipes.sampling_bias(parse().training) == found
    # Without vLLM, or without its log-probs in the loss, nothing is biased.
    assert recipes.sampling_bias(parse("--use_vllm", "false").training) == []
    off = parse("--vllm_importance_sampling_correction", "false").training
    assert recipes.sampling_bias(off) == []
    assert recipes.sampling_bias(off, vllm=True) == []
    assert recipes.sampling_bias(parse_recipe(["--config", RECIPE, "--smoke"]).training) == []
    # The Unsloth backend's fast_inference generates with vLLM without use_vllm.
    assert recipes.sampling_bias(parse("--use_vllm", "false").training, vllm=True) == found


@pytest.mark.parametrize("local", NEUTRAL)
def test_sampling_that_keeps_the_distribution_is_not_flagged(gpu_project, local):
    LOCAL_RECIPE.write_text(local)
    assert recipes.sampling_bias(parse().training) == []


def test_a_training_recipe_warns_with_the_fix_naming_the_file(cpu_project, caplog):
    """The warning names the layer that sets the value (your local.yaml, the command line) and
    the two fixes; reading a recipe (report, infer) stays quiet."""
    (cpu_project / RECIPE).write_text(CPU_RECIPE + "use_vllm: true\n")
    LOCAL_RECIPE.write_text("top_p: 0.9\n")
    with caplog.at_level("WARNING", logger="grpo_kit.recipe"):
        parse_recipe(["--config", RECIPE, "--top_k", "40"])
    (message,) = [r.getMessage() for r in caplog.records if "importance-sampling" in r.message]
    assert "top_p=0.9 (configs/local.yaml)" in message and "top_k=40 (the command line)" in message
    assert (
        "top_p: 1.0, top_k: 0" in message
        and "vllm_importance_sampling_correction: false" in message
    )
    assert "\n" not in message
    caplog.clear()
    with caplog.at_level("WARNING", logger="grpo_kit.recipe"):
        parse_recipe(["--config", RECIPE], read_only=True)
        LOCAL_RECIPE.write_text("top_p: 1.0\n")
        parse_recipe(["--config", RECIPE])
    assert not [r for r in caplog.records if "importance-sampling" in r.message]


def test_commands_read_the_recipe_through_their_own_options(cpu_project):
    """`add_recipe_options` and `recipe_from`: a command's --config, --smoke/--trial, and its
    other unknown options as field overrides."""
    import argparse

    parser = argparse.ArgumentParser()
    recipes.add_recipe_options(parser)
    args, rest = parser.parse_known_args(["--smoke", "--max_steps", "3"])
    recipe = recipes.recipe_from(args, rest, read_only=True)
    assert recipe.script.smoke and recipe.training.max_steps == 3  # the override over --smoke
    args, rest = parser.parse_known_args(["--trial", "--config", RECIPE])
    assert recipes.recipe_from(args, rest, read_only=True).training.output_dir == str(
        recipes.TRIAL_OUTPUT_DIR
    )
    with pytest.raises(SystemExit):
        parser.parse_known_args(["--smoke", "--trial"])  # argparse: not allowed together


def test_the_recipe_is_parsed_for_the_project_given(cpu_project, tmp_path):
    """`project=`: another project's task arguments, from this folder's recipe."""
    other = load(make_project(tmp_path / "other", "code"))
    recipe = parse_recipe(["--config", RECIPE], read_only=True, project=other)
    assert recipe.project is other and hasattr(recipe.task, "sandbox_timeout")
    assert load().task.name == "math"


# --- the project: pyproject.toml [tool.grpo] ---------------------------------------------------


def one_line_error(root: Path, match: str) -> str:
    with pytest.raises(UserError, match=match) as err:
        load(root).task  # noqa: B018 (the task is imported on first use)
    message = str(err.value)
    assert "\n" not in message
    return message


def test_a_project_is_read_from_its_pyproject(tmp_path):
    extra = "gated = true\nrecommended_sampling = { temperature = 0.7 }"
    root = make_project(tmp_path, "json", backend="transformers", tier=GPU_TIER, extra=extra)
    project = load(root)
    assert project.root == root and project.package == "grpo_kit.starters.json"
    assert project.task.name == "json" and project.backend == "transformers"
    assert project.gated and project.recommended_sampling == {"temperature": 0.7}
    assert (project.tier.name, project.tier.memory_gib, project.tier.gpus_per_node) == (
        "24GB",
        22.0,
        1,
    )
    assert project.scripts == {} and project.script("train") is None  # the kit's own flow


def test_no_pyproject_says_where_to_run(tmp_path):
    message = one_line_error(tmp_path, "no pyproject.toml in")
    assert "run grpo from your project's folder" in message


def test_a_pyproject_without_tool_grpo_says_what_to_add(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    message = one_line_error(tmp_path, r"has no \[tool.grpo\] table")
    assert 'package = "<your package>"' in message


def test_a_broken_pyproject_is_one_clear_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.grpo\n")
    one_line_error(tmp_path, "pyproject.toml: not valid TOML")


def test_unknown_keys_are_named(tmp_path):
    make_project(tmp_path, extra='colour = "blue"', tier='name = "cpu"\ngpuz = 2')
    message = one_line_error(tmp_path, r"unknown key\(s\) colour, tier.gpuz")
    assert "remove or rename them" in message and "backend" in message


def test_a_bad_backend_names_the_choices(tmp_path):
    make_project(tmp_path, backend="jax")
    message = one_line_error(tmp_path, "backend = 'jax'")
    assert "use one of transformers, unsloth" in message


def test_a_package_that_does_not_import_says_how_to_install_it(tmp_path):
    text = make_project(tmp_path).joinpath("pyproject.toml").read_text()
    (tmp_path / "pyproject.toml").write_text(
        text.replace("grpo_kit.starters.math", "no_such_grpo_project")
    )
    message = one_line_error(tmp_path, "cannot import the project's package 'no_such_grpo_project'")
    assert "make install" in message
