"""Tuning over every (model, tier, task, backend): fits with valid batch arithmetic, or refuses."""

import pytest
from matrix import VALID, combinations, is_valid, name

from grpo_template import catalog, tasks, tiers, tuning
from grpo_template.answers import Answers

MATH = tasks.TASKS["math"]


def answers_of(combo) -> Answers:
    return Answers.from_context(combo)


@pytest.mark.parametrize("combo", VALID, ids=name)
def test_every_valid_plan_fits_and_has_valid_batch_arithmetic(combo):
    plan = answers_of(combo).plan
    assert plan.memory.peak <= plan.tier.memory_bytes * tuning.HEADROOM
    assert plan.num_generations >= 2
    assert plan.generation_batch_size % plan.num_generations == 0
    per_step = plan.per_device_train_batch_size * plan.processes
    assert plan.generation_batch_size % per_step == 0
    assert plan.max_completion_length + plan.max_prompt_tokens <= plan.model.context


def test_every_combination_is_decided():
    for combo in combinations():
        if not is_valid(combo):
            with pytest.raises(tuning.DoesNotFit):
                _ = answers_of(combo).plan


def test_every_tier_offers_some_model_and_every_model_some_tier():
    for tier in tiers.TIERS.values():
        assert any(tuning._fits(m, tier, MATH, "transformers") for m in catalog.CATALOG.values())
    for model in catalog.CATALOG.values():
        assert any(tuning._fits(model, t, MATH, "transformers") for t in tiers.TIERS.values())


def test_a_bigger_tier_never_refuses_what_a_smaller_accepts():
    gpu_tiers = sorted((t for t in tiers.TIERS.values() if t.is_gpu), key=lambda t: t.memory_gib)
    for model in catalog.CATALOG.values():
        fits = [tuning._fits(model, t, MATH, "transformers") for t in gpu_tiers]
        assert fits == sorted(fits), model.hub_id


def test_precision_follows_the_hardware():
    t4 = tuning.plan(catalog.CATALOG["Qwen/Qwen2.5-1.5B-Instruct"], tiers.TIERS["16GB"], MATH)
    assert t4.dtype == "float16" and t4.mode != "full"
    cpu = tuning.plan(catalog.CATALOG["Qwen/Qwen2.5-0.5B-Instruct"], tiers.TIERS["cpu"], MATH)
    assert cpu.dtype == "float32" and not cpu.gradient_checkpointing
    big = tuning.plan(catalog.CATALOG["Qwen/Qwen2.5-0.5B-Instruct"], tiers.TIERS["80GB"], MATH)
    assert big.dtype == "bfloat16" and big.mode == "full"


def test_lora_learning_rate_is_higher_than_full():
    assert tuning.LEARNING_RATE["lora"] > tuning.LEARNING_RATE["full"]


def test_thinking_models_get_longer_completions():
    tier = tiers.TIERS["24GB"]
    thinking = tuning.plan(catalog.CATALOG["Qwen/Qwen3-1.7B"], tier, MATH)
    plain = tuning.plan(catalog.CATALOG["Qwen/Qwen2.5-1.5B-Instruct"], tier, MATH)
    assert thinking.max_completion_length > plain.max_completion_length


def test_big_models_fall_back_to_qlora_before_refusing():
    plan = tuning.plan(catalog.CATALOG["Qwen/Qwen3-8B"], tiers.TIERS["16GB"], MATH)
    assert plan.mode == "qlora"


def test_refusal_names_the_estimate_and_alternatives():
    with pytest.raises(tuning.DoesNotFit) as err:
        tuning.plan(catalog.CATALOG["Qwen/Qwen2.5-7B-Instruct"], tiers.TIERS["cpu"], MATH)
    message = str(err.value)
    assert "GiB" in message and "24GB" in message and "Qwen" in message
