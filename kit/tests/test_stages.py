"""Multi-stage training: each stage is the recipe with its overrides, starting from the last."""

import json
from pathlib import Path

import pytest
import yaml

from {{ cookiecutter.package_name }}.training import stages


def test_the_shipped_two_stage_recipe_runs_both_stages(tiny_model_dir, tmp_path):
    spec = yaml.safe_load(Path("configs/stages.yaml").read_text())
    assert [s["name"] for s in spec["stages"]] == ["format", "correctness"]
    root = ["--output_dir", str(tmp_path / "stages")]  # never the user's outputs/
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
    # An adapter stage hands on its merged model; a full fine-tune hands on its own folder.
    if (first / "adapter_config.json").is_file():
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
