"""The memory model: sane, monotone, and close to published figures."""

import dataclasses

import pytest

from grpo_template import catalog, memory
from grpo_template.memory import GIB, TrainingShape, estimate

QWEN_1_5B = catalog.CATALOG["Qwen/Qwen2.5-1.5B-Instruct"]
QWEN_7B = catalog.CATALOG["Qwen/Qwen2.5-7B-Instruct"]
BASE = TrainingShape(
    mode="lora",
    dtype="bfloat16",
    optim="adamw_torch_fused",
    per_device_batch=8,
    generation_batch=8,
    prompt_tokens=256,
    completion_tokens=512,
    gradient_checkpointing=True,
    lora_r=32,
)


def peak(model=QWEN_1_5B, **changes):
    return estimate(model, dataclasses.replace(BASE, **changes)).peak


def test_weights_are_parameters_times_bytes():
    e = estimate(QWEN_7B, BASE)
    assert e.weights == QWEN_7B.params * 2
    assert (
        estimate(QWEN_7B, dataclasses.replace(BASE, dtype="float32")).weights == QWEN_7B.params * 4
    )


@pytest.mark.parametrize(
    ("field", "small", "large"),
    [
        ("per_device_batch", 2, 8),
        ("generation_batch", 8, 64),
        ("completion_tokens", 256, 2048),
        ("prompt_tokens", 128, 1024),
        ("lora_r", 8, 128),
    ],
)
def test_more_work_needs_more_memory(field, small, large):
    assert peak(**{field: small}) < peak(**{field: large})


def test_bigger_models_need_more_memory():
    specs = sorted(catalog.CATALOG.values(), key=lambda s: s.params)
    assert estimate(specs[0], BASE).peak < estimate(specs[-1], BASE).peak


def test_modes_order_full_above_lora_above_qlora():
    full = peak(QWEN_7B, mode="full", lora_r=0)
    lora = peak(QWEN_7B, mode="lora")
    qlora = peak(QWEN_7B, mode="qlora")
    assert full > lora > qlora


def test_checkpointing_and_8bit_optimizers_save_memory():
    assert peak(gradient_checkpointing=True) < peak(gradient_checkpointing=False)
    assert peak(mode="full", lora_r=0, optim="adamw_8bit") < peak(mode="full", lora_r=0)


def test_reference_model_only_for_full_finetuning_with_kl():
    assert estimate(QWEN_1_5B, dataclasses.replace(BASE, beta=0.04)).reference == 0
    full = dataclasses.replace(BASE, mode="full", lora_r=0, beta=0.04)
    assert estimate(QWEN_1_5B, full).reference == QWEN_1_5B.params * 2


def test_vllm_share_replaces_the_generation_kv_cache():
    e = estimate(QWEN_1_5B, dataclasses.replace(BASE, vllm_reserved_bytes=20 * GIB))
    assert e.vllm == 20 * GIB and e.generation == 0


def test_sharding_divides_states():
    one = estimate(QWEN_7B, dataclasses.replace(BASE, mode="full", lora_r=0))
    four = estimate(
        QWEN_7B, dataclasses.replace(BASE, mode="full", lora_r=0, weight_shards=4, state_shards=4)
    )
    assert four.weights == pytest.approx(one.weights / 4)
    assert four.optimizer == pytest.approx(one.optimizer / 4)


def test_qlora_weights_are_about_a_quarter_of_bf16():
    q = estimate(QWEN_7B, dataclasses.replace(BASE, mode="qlora")).weights
    assert 0.25 < q / (QWEN_7B.params * 2) < 0.45


def test_kv_cache_formula():
    # Qwen2.5-1.5B: 28 layers x 2 KV heads x 128 dims x 2 (K and V) x 2 bytes = 28,672 B/token
    assert memory.kv_cache_bytes(QWEN_1_5B, 1, 1) == 28 * 2 * 128 * 2 * 2
