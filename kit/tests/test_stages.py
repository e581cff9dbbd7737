"""Multi-stage training: each stage is the recipe with its overrides, starting from the last."""

import json
from pathlib import Path

import pytest
import yaml
from conftest import TASKS, load, make_project, sample_recipe, training_rows_of
from grpo_kit.commands import filter as difficulty
from grpo_kit.commands import stages
from grpo_kit.heldout import held_out_indices


def two_stages(project) -> str:
    """The two-stage recipe grpo-template writes (configs/stages.yaml): the task's format
    rewards first, then the whole recipe."""
    formats = [r.name for r in project.task.rewards if r.kind == "format"]
    return yaml.safe_dump({
        "recipe": "configs/grpo.yaml",
        "stages": [
            {"name": "format", "reward_funcs": formats, "reward_weights": [1.0] * len(formats),
             "max_steps": 1},
            {"name": "correctness", "max_steps": 1},
        ],
    })  # fmt: skip


CASES = [pytest.param(task, "adapter", id=f"{task}-adapter") for task in TASKS]
CASES.append(pytest.param("math", "full", id="math-full"))


@pytest.mark.parametrize(("task", "tuning"), CASES)
def test_the_two_stage_recipe_runs_both_stages(task, tuning, tmp_path, monkeypatch):
    """A LoRA stage hands on its merged model, a full fine-tune its own folder; per task."""
    from grpo_kit.offline.tiny_model import project_tiny_model

    project_root = make_project(tmp_path / "project", task)
    monkeypatch.chdir(project_root)
    project = load(project_root)
    (project_root / "configs" / "stages.yaml").write_text(two_stages(project), encoding="utf-8")
    tiny_model_dir = project_tiny_model(
        tmp_path / "tiny", project, recipe=sample_recipe(project_root)
    )
    spec = yaml.safe_load((project_root / "configs" / "stages.yaml").read_text())
    assert [s["name"] for s in spec["stages"]] == ["format", "correctness"]
    root = ["--output_dir", str(tmp_path / "stages")]  # never the user's outputs/
    root += ["--use_peft", "false"] if tuning == "full" else []
    folders = stages.stages(["configs/stages.yaml", "--smoke", *root, "--model_name_or_path",
                             str(tiny_model_dir), "--max_steps", "1"])  # fmt: skip
    assert all(folder.parent == tmp_path / "stages" for folder in folders)
    first, second = folders
    for folder in folders:
        record = json.loads((folder / "run_record.json").read_text())
        assert record["status"] == "finished" and record["global_step"] == 1
    first_recipe = json.loads((first / "run_record.json").read_text())["recipe"]
    second_recipe = json.loads((second / "run_record.json").read_text())["recipe"]
    assert first_recipe["reward_funcs"] == spec["stages"][0]["reward_funcs"]
    assert second_recipe["reward_funcs"] == [r.name for r in project.task.rewards]
    # An adapter stage hands on its merged model; a full fine-tune hands on its own folder.
    assert (first / "adapter_config.json").is_file() == (tuning == "adapter")
    if tuning == "adapter":
        assert second_recipe["model_name_or_path"] == str(first / "merged")
        assert (first / "merged" / "config.json").is_file()
    else:
        assert second_recipe["model_name_or_path"] == str(first)
    # A rerun skips the finished stages.
    again = stages.stages(["configs/stages.yaml", "--smoke", *root, "--max_steps", "1"])
    assert again == folders


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("stages: []", "non-empty list"),
        ("stages: [{max_steps: 5}]", "needs a 'name'"),
        ("stages: [{name: a}, {name: b, output_dir: x}]", "chain them themselves"),
        ("recipe: nope.yaml\nstages: [{name: a}]", "does not exist"),
        ("stages: [{name: a, refilter: {k: 1}}]", "stage 1: refilter: k must be at least 2"),
        ("stages: [{name: a, refilter: {min: 0.9, max: 0.1}}]", "refilter: the band needs"),
        ("stages: [{name: a, refilter: {kk: 3}}]", "refilter: unknown key.*kk"),
        ("stages: [{name: a}, {name: b, refilter: 5}]", "stage 2: refilter is true or a mapping"),
        ("stages: [{name: a, refilter: {k: many}}]", "numbers expected"),
        ("stages: [{name: a, warmup: 3}]", "stage 1: warmup is true or a mapping"),
        ("stages: [{name: a, warmup: {lr: 1}}]", "warmup: unknown key.*lr"),
        ("stages: [{name: a, warmup: {epochs: 0}}]", "warmup: examples, epochs, learning_rate"),
        ("stages: [{name: a, warmup: {batch_size: 0}}]", "and batch_size are numbers above 0"),
        ("stages: [{name: a, warmup: {min_entropy: -1}}]", "min_entropy a number >= 0"),
        ("stages: [{name: a, warmup: true, refilter: true}]", "drop its refilter"),
    ],
)
def test_bad_stage_files_are_one_clear_error(tmp_path, text, message):
    path = tmp_path / "stages.yaml"
    path.write_text(text)
    with pytest.raises(stages.UserError, match=message):
        stages.load_stages(path)


def test_warmup_options_are_the_warmup_commands_arguments():
    path = Path("configs/stages.yaml")
    assert stages.warmup_options(path, 1, True) == []
    assert stages.warmup_options(path, 1, None) is None
    given = {"examples": 8, "learning_rate": 0.001, "completions": "data/mine.jsonl",
             "batch_size": 2, "min_entropy": 0}  # fmt: skip
    arguments = stages.warmup_options(path, 1, given)
    assert arguments == [
        "--examples", "8", "--learning-rate", "0.001", "--completions", "data/mine.jsonl",
        "--batch-size", "2", "--min-entropy", "0",
    ]  # fmt: skip
    from grpo_kit.commands import warmup

    parsed, _ = warmup.parse_args(arguments)  # the command takes them
    assert (parsed.batch_size, parsed.min_entropy, parsed.examples) == (2, 0.0, 8)


def test_a_warmup_stage_hands_its_merged_model_to_the_next_stage(tmp_path, monkeypatch):
    """issue 26: `warmup` makes a stage the format warm-up (grpo warmup, SFT on the task's
    ideal completions); the GRPO stage after it starts from the warm-up's merged model, and a
    rerun skips the finished warm-up."""
    from grpo_kit.offline.tiny_model import project_tiny_model

    root = make_project(tmp_path / "project", "math")
    monkeypatch.chdir(root)
    project = load(root)
    tiny = project_tiny_model(tmp_path / "tiny", project, recipe=sample_recipe(root))
    (root / "configs" / "stages.yaml").write_text(yaml.safe_dump({
        "recipe": "configs/grpo.yaml",
        "stages": [
            {"name": "warmup", "warmup": {"examples": 4, "epochs": 1}},
            {"name": "grpo", "learning_rate": 1e-4},
        ],
    }))  # fmt: skip
    argv = ["configs/stages.yaml", "--smoke", "--output_dir", str(tmp_path / "stages"),
            "--model_name_or_path", str(tiny), "--max_steps", "1"]  # fmt: skip
    warm, grpo = stages.stages(argv)
    record = json.loads((warm / "run_record.json").read_text())
    assert record["status"] == "finished" and record["warmup"]["examples"] == 4
    assert (warm / "merged" / "config.json").is_file()
    trained = json.loads((grpo / "run_record.json").read_text())
    assert trained["status"] == "finished" and trained["global_step"] == 1
    assert trained["recipe"]["model_name_or_path"] == str(warm / "merged")
    assert trained["recipe"]["learning_rate"] == 1e-4  # the stage's own keys
    assert stages.stages(argv) == [warm, grpo]


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_refilter_options_default_to_the_filters_own():
    path = Path("configs/stages.yaml")
    assert stages.refilter_options(path, 2, True) == difficulty.DEFAULTS
    assert stages.refilter_options(path, 2, {"k": 4}) == {**difficulty.DEFAULTS, "k": 4}
    assert stages.refilter_options(path, 2, None) is None
    assert stages.refilter_options(path, 2, False) is None


@pytest.mark.slow
def test_a_stage_refilters_the_prompts_with_the_previous_stages_model(
    tmp_path, monkeypatch, caplog
):
    """issue 28: `refilter` re-runs the difficulty filter before its stage, with the model the
    stage starts from (the previous stage's merged model), and the stage trains on the prompts
    still in the band; a rerun of the interrupted stage reuses the filtered file."""
    from grpo_kit.offline.tiny_model import project_tiny_model

    root = make_project(tmp_path / "project", "math")
    monkeypatch.chdir(root)
    project = load(root)
    recipe = sample_recipe(root)
    tiny = project_tiny_model(tmp_path / "tiny", project, recipe=recipe)
    rows = training_rows_of(recipe)  # the filter reads the training rows only (issue 40)
    order = [json.dumps(row["prompt"]) for row in rows]
    ideal = {
        o: project.task.ideal_completion(r, recipe.task) for o, r in zip(order, rows, strict=True)
    }
    k = 4
    sampled = []

    def sampler(conversations, n):  # the i-th sample row is solved (i % 5) times out of 4
        assert n == k
        sampled.append(len(conversations))
        solved = [order.index(json.dumps(c)) % (k + 1) for c in conversations]
        return [[ideal[json.dumps(c)] if j < s else "no idea" for j in range(n)]
                for c, s in zip(conversations, solved, strict=True)]  # fmt: skip

    formats = [r.name for r in project.task.rewards if r.kind == "format"]
    (root / "configs" / "stages.yaml").write_text(yaml.safe_dump({
        "recipe": "configs/grpo.yaml",
        "stages": [
            {"name": "format", "reward_funcs": formats, "reward_weights": [1.0] * len(formats)},
            {"name": "correctness", "refilter": {"k": k, "min": 0.25, "max": 0.75}},
        ],
    }))  # fmt: skip
    argv = ["configs/stages.yaml", "--smoke", "--output_dir", str(tmp_path / "stages"),
            "--model_name_or_path", str(tiny), "--max_steps", "1"]  # fmt: skip
    with caplog.at_level("INFO", logger="grpo_kit.commands.stages"):
        first, second = stages.stages(argv, sampler=sampler)
    assert not (first / "filter").exists() and sampled  # only the stage that asks refilters
    assert f"refiltering the prompts with {first / 'merged'}" in caplog.text
    rates = lines(second / "filter" / difficulty.PASS_RATES)
    assert [r["pass_rate"] for r in rates] == [(i % (k + 1)) / k for i in range(len(rates))]
    filtered = second / "filter" / difficulty.FILTERED
    kept = [r["row"] for r in rates if 0.25 <= r["pass_rate"] <= 0.75]
    data = lines(Path(project.task.data.sample))
    held = set(held_out_indices([row[recipe.script.prompt_column] for row in data]))
    data = [row for i, row in enumerate(data) if i not in held]  # the training rows
    assert lines(filtered) == [data[i] for i in kept] and kept
    record = json.loads((second / "run_record.json").read_text())
    assert record["recipe"]["dataset_name"] == str(filtered)
    assert record["recipe"]["model_name_or_path"] == str(first / "merged")
    assert record["status"] == "finished"
    # The second stage interrupted: its rerun trains on the same prompts, sampling nothing.
    (second / "run_record.json").unlink()
    sampled.clear()
    assert stages.stages(argv, sampler=sampler) == [first, second]
    assert not sampled
    assert json.loads((second / "run_record.json").read_text())["recipe"]["dataset_name"] == str(
        filtered
    )
