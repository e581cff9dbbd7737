"""4-bit weights and vLLM (issue 27, finding 2), over the whole catalog x tier x backend matrix.

* Transformers backend (TRL 1.16's vLLM path): TRL syncs a PEFT model into vLLM by merging the
  adapter into the base weights; merged 4-bit weights are still packed bitsandbytes tensors that
  vLLM's weight loader rejects (huggingface/trl#4973, open; the merge is also lossy,
  huggingface/trl#3466), and a colocated engine would load bitsandbytes, which vLLM >= 0.28 no
  longer ships. So no plan combines QLoRA with vLLM: 16-bit LoRA keeps vLLM, or QLoRA generates
  with transformers, and the recipe says why.
* Unsloth backend (its own path): fast_inference loads the pre-quantized 4-bit checkpoint into
  vLLM and shares it with training, the adapter served by vLLM's LoRA support (no merge), so
  4-bit with vLLM stays planned there, with `vllm-bnb-plugin` in the `[gpu]` extra.
"""

from __future__ import annotations

import pytest
from matrix import VALID, combinations, name

from grpo_template import catalog, recipe, stack, tasks, tiers, tuning
from grpo_template.answers import Answers


def _plans():
    return [(combo, Answers.from_context(combo).plan) for combo in VALID]


PLANS = _plans()


@pytest.mark.parametrize("combo", VALID, ids=name)
def test_no_plan_gives_vllm_four_bit_weights_unless_the_stack_supports_it(combo):
    plan = Answers.from_context(combo).plan
    four_bit_vllm = plan.mode == "qlora" and (plan.use_vllm or plan.fast_inference)
    if plan.backend == "transformers":
        # TRL 1.16 cannot sync QLoRA weights into vLLM (huggingface/trl#4973)
        assert not four_bit_vllm, "QLoRA with TRL's vLLM path"
    else:
        # Unsloth shares its 4-bit weights with vLLM; the plugin loads them on vLLM >= 0.28
        assert not plan.use_vllm
        assert four_bit_vllm == (plan.mode == "qlora" and plan.fast_inference)
    deps = stack.gpu_dependencies(plan)
    assert (stack.VLLM_BNB_PLUGIN in deps) == four_bit_vllm
    if four_bit_vllm:
        assert stack.VLLM in deps and stack.BITSANDBYTES in deps


@pytest.mark.parametrize(
    ("hub_id", "tier"), [("Qwen/Qwen3-8B", "16GB"), ("meta-llama/Llama-3.1-8B-Instruct", "24GB")]
)
def test_four_bit_vllm_is_still_planned_on_unsloths_path(hub_id, tier):
    """The 7-8B models Unsloth trains in 4 bits on 16/24 GB keep fast_inference (and the plugin),
    on the default task (the matrix's task for a model x tier moves as tasks are added)."""
    combo = next(c for c in combinations() if (c["model"], c["gpu_tier"], c["backend"])
                 == (hub_id, tier, "unsloth"))  # fmt: skip
    plan = Answers.from_context({**combo, "task_type": tasks.DEFAULT_TASK}).plan
    assert plan.backend == "unsloth" and plan.mode == "qlora" and plan.fast_inference


# The plans issue 27 named: 24 GB Qwen3-4B, gemma-3-4b, Phi-4-mini; 48 GB Qwen3-8B, Llama-3.1-8B.
NAMED = [
    ("Qwen/Qwen3-4B", "24GB"),
    ("google/gemma-3-4b-it", "24GB"),
    ("microsoft/Phi-4-mini-instruct", "24GB"),
    ("Qwen/Qwen3-8B", "48GB"),
    ("meta-llama/Llama-3.1-8B-Instruct", "48GB"),
]


@pytest.mark.parametrize(("hub_id", "tier"), NAMED)
def test_the_named_plans_give_up_either_vllm_or_four_bits_and_say_why(hub_id, tier):
    plan = tuning.plan(catalog.CATALOG[hub_id], tiers.TIERS[tier], tasks.TASKS[tasks.DEFAULT_TASK])
    assert not (plan.mode == "qlora" and plan.use_vllm)
    values = recipe.values(plan, "none")
    text = recipe.render(plan, "none", "header")
    if plan.mode == "qlora":
        assert values["use_vllm"] is False
        assert tuning.QLORA_VLLM_BROKEN in text  # in the use_vllm comment and the note
        assert any(tuning.QLORA_VLLM_BROKEN in note for note in plan.notes)
    else:
        assert not values.get("load_in_4bit", False)


def test_a_qlora_recipe_says_4_bit_never_goes_with_vllm():
    combo = next(
        c for c, p in PLANS if p.mode == "qlora" and p.backend == "transformers" and p.tier.is_gpu
    )
    answers = Answers.from_context(combo)
    text = recipe.render(answers.plan, answers.tracker, "header", answers.algorithm)
    line = next(x for x in text.splitlines() if x.startswith("load_in_4bit:"))
    assert tuning.QLORA_VLLM_BROKEN in line


def test_the_plugins_version_rule():
    """vllm-bnb-plugin 0.0.3 (PyPI metadata: Requires-Dist vllm, bitsandbytes>=0.48.1) is a
    0.0.x package: pinned exactly; the bitsandbytes range starts at its floor."""
    from packaging.requirements import Requirement

    plugin = Requirement(stack.VLLM_BNB_PLUGIN)
    assert plugin.name == "vllm-bnb-plugin" and str(plugin.specifier) == "==0.0.3"
    bnb = Requirement(stack.BITSANDBYTES)
    assert not bnb.specifier.contains("0.48.0") and bnb.specifier.contains("0.48.1")
