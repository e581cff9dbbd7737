"""The model catalog against the reference facts, and its LoRA targets against real modules."""

import json

import pytest
from conftest import SHARED

from grpo_template import catalog
from grpo_template.memory import lora_parameters

FACTS = SHARED / "reference" / "model-facts.json"
FIELDS = {
    "layers": "num_hidden_layers",
    "hidden": "hidden_size",
    "intermediate": "intermediate_size",
    "heads": "num_attention_heads",
    "kv_heads": "num_key_value_heads",
    "head_dim": "head_dim",
    "vocab": "vocab_size",
    "context": "max_position_embeddings",
    "tied_embeddings": "tie_word_embeddings",
}


def value(entry):
    return entry["value"] if isinstance(entry, dict) and "value" in entry else entry


@pytest.mark.skipif(not FACTS.is_file(), reason="shared/reference/model-facts.json not present")
@pytest.mark.parametrize("hub_id", list(catalog.CATALOG))
def test_catalog_matches_reference_facts(hub_id):
    facts = json.loads(FACTS.read_text(encoding="utf-8"))[hub_id]
    spec = catalog.CATALOG[hub_id]
    for ours, theirs in FIELDS.items():
        assert getattr(spec, ours) == value(facts[theirs]), (hub_id, ours)
    computed = value(facts["computed_params_from_config"])
    non_embedding = computed.get("non_embedding", computed.get("text_non_embedding"))
    assert spec.non_embedding_params == non_embedding
    if "total" in computed:
        assert spec.params == computed["total"]
    assert spec.gated == (value(facts["gated"]) == "yes")


@pytest.mark.parametrize("spec", list(catalog.CATALOG.values()), ids=lambda s: s.hub_id)
def test_parameter_counts_follow_from_the_shapes(spec):
    """Non-embedding parameters recomputed from the shape agree within 3% (norms and biases)."""
    h, i, layers = spec.hidden, spec.intermediate, spec.layers
    attention = h * spec.heads * spec.head_dim * 2 + h * spec.kv_heads * spec.head_dim * 2
    per_layer = attention + 3 * h * i
    estimate = per_layer * layers
    if spec.architecture.endswith("ConditionalGeneration"):
        pytest.skip("the vision tower is outside this formula")
    assert abs(estimate - spec.non_embedding_params) / spec.non_embedding_params < 0.03


def test_every_catalog_model_is_valid_and_labelled():
    for hub_id, spec in catalog.CATALOG.items():
        assert catalog.valid_hub_id(hub_id)
        assert spec.tiny_arch in ("qwen2", "qwen3", "llama", "phi3", "gemma3_text", "gemma3")
        assert spec.license and spec.sources


@pytest.mark.parametrize("params_b", [0.5, 1.5, 3, 7, 14, 70])
def test_custom_model_shape_reproduces_its_size(params_b):
    spec = catalog.custom_model("org/model", params_b)
    h, i = spec.hidden, spec.intermediate
    per_layer = (
        2 * h * spec.heads * spec.head_dim + 2 * h * spec.kv_heads * spec.head_dim + 3 * h * i
    )
    total = per_layer * spec.layers + spec.vocab * h
    assert abs(total - spec.params) / spec.params < 0.35
    assert spec.lora_targets == "all-linear" and spec.estimated


def test_hub_id_validation():
    assert catalog.valid_hub_id("Qwen/Qwen2.5-1.5B-Instruct")
    for bad in ("", "noslash", "a/b/c", "../etc", "org/..", "org/name-", "org/na me", "org/{{x}}"):
        assert not catalog.valid_hub_id(bad), bad


@pytest.mark.parametrize("arch", sorted({s.tiny_arch for s in catalog.CATALOG.values()}))
def test_lora_targets_exist_in_each_architecture(arch):
    """Build the tiny model of each architecture and check PEFT finds the catalog's targets."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    spec = next(s for s in catalog.CATALOG.values() if s.tiny_arch == arch)
    config = tiny_config(arch)
    model = AutoModelForCausalLM.from_config(config)
    targets = spec.lora_targets
    peft_model = get_peft_model(model, LoraConfig(r=2, target_modules=targets))
    adapted = {n for n, m in peft_model.named_modules() if hasattr(m, "lora_A")}
    assert adapted, arch
    if arch == "gemma3":  # the regex must leave the vision tower alone
        assert all("vision_tower" not in n for n in adapted)
    assert all(isinstance(m, torch.nn.Module) for m in peft_model.modules())


def tiny_config(arch):
    from transformers import AutoConfig

    text = dict(
        vocab_size=64,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=64,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=None,
    )
    if arch in ("qwen3", "llama", "gemma3_text"):
        text["head_dim"] = 8
    if arch == "gemma3":
        vision = dict(
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            image_size=28,
            patch_size=14,
        )
        return AutoConfig.for_model(
            "gemma3",
            text_config={**text, "head_dim": 8},
            vision_config=vision,
            mm_tokens_per_image=4,
        )
    return AutoConfig.for_model(arch, **text)


def test_lora_parameter_count_matches_peft():
    """The memory model's LoRA count equals PEFT's for a Qwen2-shaped model."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    config = tiny_config("qwen2")
    model = get_peft_model(
        AutoModelForCausalLM.from_config(config),
        LoraConfig(r=4, target_modules=list(catalog.ALL_LINEAR)),
    )
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    spec = catalog.custom_model("x/y", 1)
    shaped = type(spec)(
        **{
            **spec.__dict__,
            "hidden": 16,
            "intermediate": 32,
            "heads": 2,
            "kv_heads": 1,
            "head_dim": 8,
            "layers": 1,
        }
    )
    assert lora_parameters(shaped, 4) == trainable
