"""The Unsloth backend: import order, GPU-only settings refused on a CPU, and a merged model
that plain transformers reloads and generates with. (On a GPU, `make gpu-check` runs the real
path: UnslothGRPOTrainer, fast_inference, 4-bit.) Runs where Unsloth is installed (the
template's suite gives it a virtual environment of its own); a project with backend "unsloth"."""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("unsloth")

from conftest import chdir, load, make_project, sample_recipe  # noqa: E402
from grpo_kit import backends  # noqa: E402
from grpo_kit.errors import ModelError  # noqa: E402
from grpo_kit.offline import tiny_model  # noqa: E402
from grpo_kit.recipe import parse_recipe  # noqa: E402
from grpo_kit.starters.math.task import TASK as MATH  # noqa: E402
from test_model_family import FAMILIES, family_recipe  # noqa: E402

RECIPE = "configs/grpo.yaml"


def cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.fixture(scope="module")
def unsloth_root(tmp_path_factory):
    """A math project trained with the Unsloth backend."""
    return make_project(tmp_path_factory.mktemp("unsloth"), backend="unsloth")


@pytest.fixture
def in_unsloth_project(unsloth_root, monkeypatch):
    monkeypatch.chdir(unsloth_root)
    return load(unsloth_root)


@pytest.fixture(scope="module")
def unsloth():
    """The backend's module (importing it imports unsloth first)."""
    return backends.load("unsloth")


def recipe_of(project, *argv: str, read_only: bool = False):
    with chdir(project.root):
        return parse_recipe(["--config", RECIPE, *argv], read_only=read_only, project=project)


def test_unsloth_is_imported_before_trl_transformers_and_peft(in_unsloth_project, unsloth):
    assert in_unsloth_project.backend == "unsloth"
    assert "unsloth" in sys.modules
    assert backends.arguments("unsloth") is backends.UnslothArguments
    assert backends.UnslothArguments.__dataclass_fields__.keys() >= {
        "max_seq_length",
        "fast_inference",
        "gpu_memory_utilization",
        "max_lora_rank",
    }
    # The recipe of an Unsloth project holds the backend's fields.
    assert isinstance(recipe_of(in_unsloth_project, "--smoke").backend, backends.UnslothArguments)


@pytest.mark.parametrize(
    ("override", "named"),
    [("--fast_inference", "fast_inference: true"), ("--load_in_4bit", "load_in_4bit: true")],
)
def test_gpu_only_settings_are_refused_on_a_cpu(override, named, in_unsloth_project, unsloth):
    if cuda():
        pytest.skip("this machine has a GPU")
    recipe = recipe_of(in_unsloth_project, "--smoke", override, "true")
    with pytest.raises(ModelError, match=f"{named}.*need a CUDA GPU"):
        unsloth.check_gpu_packages(recipe)


def test_several_training_processes_are_refused(in_unsloth_project, unsloth, monkeypatch):
    recipe = recipe_of(in_unsloth_project, "--smoke")
    monkeypatch.setenv("WORLD_SIZE", "2")  # after parsing: accelerate's state is process-wide
    with pytest.raises(ModelError, match="one process.*backend=transformers"):
        unsloth.check_gpu_packages(recipe)


def test_full_finetuning_is_refused(in_unsloth_project, unsloth):
    recipe = recipe_of(in_unsloth_project, "--smoke", "--use_peft", "false")
    with pytest.raises(ModelError, match="use_peft: true"):
        unsloth.trainer_model(recipe)


RELOAD = """
import json, sys
from transformers import AutoModelForCausalLM, AutoTokenizer
path = sys.argv[1]
tokenizer = AutoTokenizer.from_pretrained(path)
model = AutoModelForCausalLM.from_pretrained(path)
ids = tokenizer("What is 2 + 2?", return_tensors="pt")
out = model.generate(**ids, max_new_tokens=5, min_new_tokens=5, do_sample=False,
                     pad_token_id=tokenizer.pad_token_id)
keys = [k for k in model.state_dict() if "lora" in k]
print(json.dumps({"new_tokens": out.shape[1] - ids["input_ids"].shape[1], "lora_keys": len(keys),
                  "unsloth_loaded": "unsloth" in sys.modules}))
"""


def test_merged_model_reloads_with_plain_transformers(in_unsloth_project, tiny_model_dir, tmp_path):
    from grpo_kit.commands import smoke

    output = tmp_path / "smoke"  # never the user's outputs/smoke
    smoke.pipeline(["--model_name_or_path", str(tiny_model_dir), "--output_dir", str(output)])
    merged = output / "merged"
    env = {**os.environ, "PYTHONPATH": ""}
    result = subprocess.run(
        [sys.executable, "-c", RELOAD, str(merged)], capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report == {"new_tokens": 5, "lora_keys": 0, "unsloth_loaded": False}


def test_inference_falls_back_to_plain_generation_without_a_gpu(
    in_unsloth_project, unsloth, tmp_path
):
    if cuda():
        pytest.skip("this machine has a GPU")
    (tmp_path / "adapter_config.json").write_text("{}", encoding="utf-8")
    recipe = recipe_of(in_unsloth_project, "--fast_inference", "true", read_only=True)
    assert recipe.backend.fast_inference
    assert unsloth.fast_generator(tmp_path, recipe) is None


# Unsloth's 16-bit merge on the CPU: for these tiny random models the merge check has found the
# merged model's greedy outputs differ from the adapter's (it then refuses to write the merge, as
# it should), though not in every run. Seen after the wave that gave tiny models their real chat
# templates; the cause (Unsloth's merge, or the tiny model) is not yet found, so these are known
# failures, not passes.
UNSLOTH_MERGE_DIVERGES = pytest.mark.xfail(
    reason="Unsloth's CPU merge diverges from the adapter on this tiny model (merge check)",
    strict=False,
)
# Architectures whose LoRA targets differ, as the template's catalog writes them (the families
# an Unsloth project can have: Qwen3.5, Gemma 4 and Nemotron 3 are refused for Unsloth): a regex
# over the language model of a multimodal model (a regex wrapped in a list matched nothing
# once), fused attention/MLP projections, plain Llama projections, and a hybrid of short
# convolutions and attention (LFM2.5, on the Unsloth stack's transformers and TRL chat template).
UNSLOTH_FAMILIES = [
    "gemma3-multimodal",
    pytest.param("phi4-mini", marks=UNSLOTH_MERGE_DIVERGES),
    pytest.param("llama3.2", marks=UNSLOTH_MERGE_DIVERGES),
    "lfm2.5",
]


@pytest.mark.slow
@pytest.mark.parametrize("family", UNSLOTH_FAMILIES)
def test_unsloth_smoke_pipeline_for_each_lora_layout(family, tmp_path, capsys):
    """`make smoke` of an Unsloth project of the family, in this process (importing unsloth
    once): FastLanguageModel loads the family's tiny model, LoRA reaches its targets, two steps
    train, the merge passes its check and the merged model answers."""
    spec = FAMILIES[family]
    root = make_project(
        tmp_path / "project", backend="unsloth", tiny_arch=spec.arch,
        chat_template=spec.template, recipe=family_recipe(spec, MATH),
    )  # fmt: skip
    smoke_passes(root, tmp_path / "smoke", capsys)


def smoke_passes(root, output, capsys) -> None:
    """The project's smoke pipeline on its tiny model, in this process: one answer, a merged
    model, and the merge check passed."""
    from grpo_kit.commands import smoke

    with chdir(root):
        recipe = sample_recipe(root)
        model = tiny_model.project_tiny_model(root / "tiny", recipe.project, recipe=recipe)
        answers = smoke.pipeline(["--model_name_or_path", str(model), "--output_dir", str(output)])
    assert len(answers) == 1 and answers[0].strip()
    assert (output / "merged" / "config.json").is_file()
    assert "merge check passed" in capsys.readouterr().out


# The tasks an Unsloth project can have (tools is refused with this backend), on the tiny model
# of the template's Unsloth test projects (Qwen2.5); math is the smoke run above
# (test_merged_model_reloads_with_plain_transformers).
UNSLOTH_TASKS = [pytest.param("code", marks=UNSLOTH_MERGE_DIVERGES), "json", "classification",
                 "custom"]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("task", UNSLOTH_TASKS)
def test_unsloth_smoke_pipeline_for_each_task(task, tmp_path, capsys):
    """`make smoke` of an Unsloth project of the task, in this process (importing unsloth once,
    not once per project): the task's sample rows and rewards, two steps of training, the merge
    and its check, the merged model answering."""
    root = make_project(tmp_path / "project", task, backend="unsloth")
    smoke_passes(root, tmp_path / "smoke", capsys)
