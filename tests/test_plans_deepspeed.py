"""DeepSpeed's buffers: written into the ZeRO configs and counted (issue 27, finding 5).

accelerate builds DeepSpeed's config from its YAML alone without any bucket size, so DeepSpeed's
defaults applied: reduce_bucket_size 5e8 elements (deepspeed 0.18.6 runtime/zero/config.py), a
~0.9 GiB bf16 buffer per bucket that the memory model did not count. The project's
configs/accelerate/zero{2,3}.yaml now point accelerate at zero{2,3}.json, whose buckets are
"auto": transformers 5.24 sizes them from the model's hidden size (`trainer_config_finalize`),
and memory.deepspeed_buffer_bytes counts exactly that.
"""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import ROOT

from grpo_template import catalog, memory, tasks, tiers, tuning

ACCELERATE = ROOT / "{{cookiecutter.project_slug}}" / "configs" / "accelerate"
STAGES = {"zero2": 2, "zero3": 3}
DEEPSPEED_DEFAULT_BUCKET = 500_000_000  # deepspeed 0.18.6 DeepSpeedZeroConfig.reduce_bucket_size


def _json(strategy: str) -> dict:
    return json.loads((ACCELERATE / f"{strategy}.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("strategy", STAGES)
def test_the_zero_files_set_what_the_memory_model_counts(strategy):
    import yaml

    accelerate = yaml.safe_load((ACCELERATE / f"{strategy}.yaml").read_text(encoding="utf-8"))
    deepspeed = accelerate["deepspeed_config"]
    assert deepspeed["deepspeed_config_file"] == tuning.deepspeed_config(strategy)
    assert tuning.deepspeed_config(strategy) in tuning.DEEPSPEED_CONFIGS
    # accelerate refuses these beside a DeepSpeed file (DeepSpeedPlugin._deepspeed_config_checks)
    assert not {"zero_stage", "offload_optimizer_device", "offload_param_device"} & set(deepspeed)
    assert "mixed_precision" not in accelerate
    zero = _json(strategy)["zero_optimization"]
    assert zero["stage"] == STAGES[strategy]
    assert zero["overlap_comm"] is memory.DEEPSPEED_OVERLAP_COMM[strategy]
    assert zero["contiguous_gradients"] is True
    for key in memory.DEEPSPEED_AUTO_BUCKETS:
        if key.startswith("stage3_") and strategy != "zero3":
            assert key not in zero
        else:
            assert zero[key] == "auto", key
    assert _json(strategy)["bf16"] == {"enabled": "auto"}  # the recipe's bf16 decides


@pytest.mark.parametrize("strategy", STAGES)
def test_accelerate_reads_the_stage_from_the_deepspeed_file(strategy, tmp_path, monkeypatch):
    """accelerate's launch preparation, then its DeepSpeedPlugin in the environment it
    prepares, as each training process builds it."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils import DeepSpeedPlugin, prepare_deepspeed_cmd_env

    monkeypatch.chdir(tmp_path)
    shutil.copytree(ACCELERATE, tmp_path / "configs" / "accelerate")
    argv = ["--config_file", f"configs/accelerate/{strategy}.yaml", "--num_processes", "4",
            "--num_machines", "1", "-m", "pkg.train"]  # fmt: skip
    args, defaults, from_config = _validate_launch_command(launch_command_parser().parse_args(argv))
    assert not from_config  # no mixed_precision in the YAML: DeepSpeed would refuse the pair
    args.deepspeed_fields_from_accelerate_config = ",".join(defaults.deepspeed_config)
    _, env = prepare_deepspeed_cmd_env(args)
    for key, value in env.items():
        if key.startswith("ACCELERATE_"):
            monkeypatch.setenv(key, value)
    plugin = DeepSpeedPlugin()
    assert plugin.zero_stage == STAGES[strategy]
    plugin.set_mixed_precision("bf16")  # what the Trainer does with the recipe's bf16
    assert plugin.deepspeed_config["bf16"] == {"enabled": True}
    assert plugin.deepspeed_config["zero_optimization"]["reduce_bucket_size"] == "auto"


def test_without_the_file_deepspeeds_default_buckets_would_apply(monkeypatch):
    """What the YAML alone gave: no bucket size in accelerate's config, so DeepSpeed's 5e8."""
    from accelerate.utils import DeepSpeedPlugin

    monkeypatch.setenv("ACCELERATE_DEEPSPEED_ZERO_STAGE", "2")
    monkeypatch.delenv("ACCELERATE_DEEPSPEED_CONFIG_FILE", raising=False)
    plugin = DeepSpeedPlugin()
    assert "reduce_bucket_size" not in plugin.deepspeed_config["zero_optimization"]
    default_bytes = DEEPSPEED_DEFAULT_BUCKET * 2
    qwen3_8b = catalog.CATALOG["Qwen/Qwen3-8B"]
    assert default_bytes / memory.GIB == pytest.approx(0.93, abs=0.01)
    assert qwen3_8b.hidden**2 * 2 < default_bytes / 25  # "auto": 32 MiB instead of 0.93 GiB


def _finalized(strategy: str, model) -> dict:
    """transformers' own `auto` filling for `model`: HfTrainerDeepSpeedConfig's rule on
    accelerate's config class (without deepspeed installed transformers' base class is empty;
    the rule itself is plain Python)."""
    from types import SimpleNamespace

    from accelerate.utils.deepspeed import HfDeepSpeedConfig
    from transformers.integrations.deepspeed import HfTrainerDeepSpeedConfig

    class Config(HfTrainerDeepSpeedConfig, HfDeepSpeedConfig):
        pass

    config = Config.__new__(Config)
    HfDeepSpeedConfig.__init__(config, _json(strategy))
    config._dtype, config.mismatches = None, []
    args = SimpleNamespace(get_warmup_steps=lambda steps: 0)
    config.trainer_config_finalize(args, model, num_training_steps=10)
    return config.config["zero_optimization"]


@pytest.mark.parametrize("strategy", STAGES)
def test_the_counted_buffers_are_the_sizes_transformers_fills_in(strategy):
    from transformers import AutoConfig, AutoModelForCausalLM

    spec = catalog.CATALOG["Qwen/Qwen2.5-0.5B-Instruct"]  # hidden 896
    config = AutoConfig.for_model(
        "qwen2", hidden_size=spec.hidden, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=spec.heads, num_key_value_heads=spec.kv_heads, vocab_size=64,
    )  # fmt: skip
    zero = _finalized(strategy, AutoModelForCausalLM.from_config(config))
    assert zero["reduce_bucket_size"] == 896 * 896
    shape = memory.TrainingShape(
        mode="full", dtype="bfloat16", optim="adamw_torch_fused", per_device_batch=8,
        generation_batch=8, prompt_tokens=256, completion_tokens=512,
        gradient_checkpointing=True, distributed=strategy, weight_shards=4 if
        strategy == "zero3" else 1, state_shards=4,
    )  # fmt: skip
    counted = memory.deepspeed_buffer_bytes(spec, shape)
    reduce = zero["reduce_bucket_size"] * 2  # bf16 elements
    if strategy == "zero2":  # one bucket per backward (overlap_comm off)
        assert counted == reduce
    else:  # reduce bucket + prefetch bucket + the embedding gathered whole
        assert zero["stage3_prefetch_bucket_size"] == int(0.9 * 896 * 896)
        embedding = spec.vocab * spec.hidden * 2
        expected = reduce + zero["stage3_prefetch_bucket_size"] * 2 + embedding
        assert counted == pytest.approx(expected, abs=2)
    assert memory.estimate(spec, shape).deepspeed_buffers == counted


def test_zero_plans_count_their_buffers_and_say_so():
    task = tasks.TASKS[tasks.DEFAULT_TASK]
    node = tiers.TIERS["multi-gpu"].scaled(8, 1)
    plan = tuning.plan(catalog.CATALOG["Qwen/Qwen3-8B"], node, task)
    assert plan.distributed == "zero2"
    assert plan.memory.deepspeed_buffers == 4096 * 4096 * 2
    assert "DeepSpeed buffers" in plan.memory.summary()
    ddp = tuning.plan(catalog.CATALOG["Qwen/Qwen3-0.6B"], node, task)
    assert ddp.distributed == "ddp" and ddp.memory.deepspeed_buffers == 0
