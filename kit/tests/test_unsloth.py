"""The Unsloth backend: import order, GPU-only settings refused on a CPU, and a merged model
that plain transformers reloads and generates with. (On a GPU, `make gpu-check` runs the real
path: UnslothGRPOTrainer, fast_inference, 4-bit.)"""

import json
import os
import subprocess
import sys

import pytest

from {{ cookiecutter.package_name }} import modeling
from {{ cookiecutter.package_name }}.config import parse_recipe
from {{ cookiecutter.package_name }}.tools import smoke


def cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def test_unsloth_is_imported_before_trl_transformers_and_peft():
    assert "unsloth" in sys.modules
    assert modeling.BackendArguments.__dataclass_fields__.keys() >= {
        "max_seq_length",
        "fast_inference",
        "gpu_memory_utilization",
        "max_lora_rank",
    }


@pytest.mark.parametrize(
    ("override", "named"),
    [("--fast_inference", "fast_inference: true"), ("--load_in_4bit", "load_in_4bit: true")],
)
def test_gpu_only_settings_are_refused_on_a_cpu(override, named):
    if cuda():
        pytest.skip("this machine has a GPU")
    recipe = parse_recipe(["--config", "configs/grpo.yaml", "--smoke", override, "true"])
    with pytest.raises(modeling.ModelError, match=f"{named}.*need a CUDA GPU"):
        modeling.check_gpu_packages(recipe)


def test_several_training_processes_are_refused(monkeypatch):
    recipe = parse_recipe(["--config", "configs/grpo.yaml", "--smoke"])
    monkeypatch.setenv("WORLD_SIZE", "2")  # after parsing: accelerate's state is process-wide
    with pytest.raises(modeling.ModelError, match="one process.*backend=transformers"):
        modeling.check_gpu_packages(recipe)


def test_full_finetuning_is_refused():
    recipe = parse_recipe(["--config", "configs/grpo.yaml", "--smoke", "--use_peft", "false"])
    with pytest.raises(modeling.ModelError, match="use_peft: true"):
        modeling.trainer_model(recipe)


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


def test_merged_model_reloads_with_plain_transformers(tiny_model_dir, tmp_path):
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


def test_inference_falls_back_to_plain_generation_without_a_gpu(tmp_path):
    if cuda():
        pytest.skip("this machine has a GPU")
    (tmp_path / "adapter_config.json").write_text("{}", encoding="utf-8")
    recipe = parse_recipe(["--config", "configs/grpo.yaml", "--fast_inference", "true"],
                          read_only=True)  # fmt: skip
    assert recipe.backend.fast_inference
    assert modeling.fast_generator(tmp_path, recipe) is None
