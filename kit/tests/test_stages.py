"""Multi-stage training: each stage is the recipe with its overrides, starting from the last."""

import json

import pytest
import yaml
from conftest import TASKS, load, make_project, sample_recipe
from grpo_kit.commands import stages


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
    ],
)
def test_bad_stage_files_are_one_clear_error(tmp_path, text, message):
    path = tmp_path / "stages.yaml"
    path.write_text(text)
    with pytest.raises(stages.UserError, match=message):
        stages.load_stages(path)
