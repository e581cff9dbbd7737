"""The model catalog: the Hub models the template offers, with the facts tuning needs.

Every number comes from `shared/reference/model-facts.md` (config.json copies, model cards and
exact parameter counts); the source tags of each entry are kept in `sources`. Parameter counts are
totals as loaded (embeddings included; for Gemma 3 4B the vision tower too). `tests/test_catalog.py`
cross-checks the numbers against the reference file when it is present.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

ALL_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
# Gemma 3 4B is multimodal: restrict LoRA to the language model, not the SigLIP vision tower.
GEMMA3_LANGUAGE_ONLY = (
    r".*language_model.*\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)"
)
PHI3_TARGETS = ("qkv_proj", "o_proj", "gate_up_proj", "down_proj")


@dataclass(frozen=True)
class ModelSpec:
    """One catalog model. Sizes are for the language model; `params` is everything loaded."""

    hub_id: str
    family: str  # chat-template family
    architecture: str  # transformers class the checkpoint loads as
    tiny_arch: str  # model_type of the offline tiny model used for smoke runs
    params: int
    non_embedding_params: int
    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    context: int
    tied_embeddings: bool
    lora_targets: tuple[str, ...] | str  # module names, or one regex
    gated: bool
    license: str
    system_role: bool  # False: the template folds the system message into the first user turn
    thinking: bool  # hybrid thinking model (writes <think>...</think> before answering)
    unsloth_4bit: str | None
    sources: tuple[str, ...] = field(default=())
    estimated: bool = False  # True for a custom model: sizes derived from the parameter count

    @property
    def params_b(self) -> float:
        return self.params / 1e9

    @property
    def embedding_params(self) -> int:
        return self.params - self.non_embedding_params


def _spec(**kwargs) -> ModelSpec:
    return ModelSpec(**kwargs)


_QWEN_LICENSE = "apache-2.0"
_LLAMA_LICENSE = "Llama 3.x Community License (accept on the Hub)"
_GEMMA_LICENSE = "Gemma Terms of Use (accept on the Hub)"

CATALOG: dict[str, ModelSpec] = {
    m.hub_id: m
    for m in [
        _spec(
            hub_id="Qwen/Qwen2.5-0.5B-Instruct",
            family="qwen2.5",
            architecture="Qwen2ForCausalLM",
            tiny_arch="qwen2",
            params=494_032_768,
            non_embedding_params=357_898_112,
            layers=24,
            hidden=896,
            intermediate=4864,
            heads=14,
            kv_heads=2,
            head_dim=64,
            vocab=151_936,
            context=32_768,
            tied_embeddings=True,
            lora_targets=ALL_LINEAR,
            gated=False,
            license=_QWEN_LICENSE,
            system_role=True,
            thinking=False,
            unsloth_4bit="unsloth/Qwen2.5-0.5B-Instruct-unsloth-bnb-4bit",
            sources=("Q05GH", "Q05HF", "Q25CARD"),
        ),
        _spec(
            hub_id="Qwen/Qwen2.5-1.5B-Instruct",
            family="qwen2.5",
            architecture="Qwen2ForCausalLM",
            tiny_arch="qwen2",
            params=1_543_714_304,
            non_embedding_params=1_310_340_608,
            layers=28,
            hidden=1536,
            intermediate=8960,
            heads=12,
            kv_heads=2,
            head_dim=128,
            vocab=151_936,
            context=32_768,
            tied_embeddings=True,
            lora_targets=ALL_LINEAR,
            gated=False,
            license=_QWEN_LICENSE,
            system_role=True,
            thinking=False,
            unsloth_4bit="unsloth/Qwen2.5-1.5B-Instruct-unsloth-bnb-4bit",
            sources=("Q15GH", "Q15HF", "Q25CARD"),
        ),
        _spec(
            hub_id="Qwen/Qwen2.5-3B-Instruct",
            family="qwen2.5",
            architecture="Qwen2ForCausalLM",
            tiny_arch="qwen2",
            params=3_085_938_688,
            non_embedding_params=2_774_773_760,
            layers=36,
            hidden=2048,
            intermediate=11008,
            heads=16,
            kv_heads=2,
            head_dim=128,
            vocab=151_936,
            context=32_768,
            tied_embeddings=True,
            lora_targets=ALL_LINEAR,
            gated=False,
            license="qwen-research (non-commercial research licence)",
            system_role=True,
            thinking=False,
            unsloth_4bit="unsloth/Qwen2.5-3B-Instruct-unsloth-bnb-4bit",
            sources=("MLC", "Q3BHF"),
        ),
        _spec(
            hub_id="Qwen/Qwen2.5-7B-Instruct",
            family="qwen2.5",
            architecture="Qwen2ForCausalLM",
            tiny_arch="qwen2",
            params=7_615_616_512,
            non_embedding_params=6_525_621_760,
            layers=28,
            hidden=3584,
            intermediate=18944,
            heads=28,
            kv_heads=4,
            head_dim=128,
            vocab=152_064,
            context=32_768,
            tied_embeddings=False,
            lora_targets=ALL_LINEAR,
            gated=False,
            license=_QWEN_LICENSE,
            system_role=True,
            thinking=False,
            unsloth_4bit="unsloth/Qwen2.5-7B-Instruct-unsloth-bnb-4bit",
            sources=("Q7HF", "Q7CARD"),
        ),
        _spec(
            hub_id="Qwen/Qwen3-0.6B",
            family="qwen3",
            architecture="Qwen3ForCausalLM",
            tiny_arch="qwen3",
            params=596_049_920,
            non_embedding_params=440_467_456,
            layers=28,
            hidden=1024,
            intermediate=3072,
            heads=16,
            kv_heads=8,
            head_dim=128,
            vocab=151_936,
            context=40_960,
            tied_embeddings=True,
            lora_targets=ALL_LINEAR,
            gated=False,
            license=_QWEN_LICENSE,
            system_role=True,
            thinking=True,
            unsloth_4bit="unsloth/Qwen3-0.6B-unsloth-bnb-4bit",
            sources=("MLC", "Q3TR", "Q3CARD"),
        ),
        _spec(
            hub_id="Qwen/Qwen3-1.7B",
            family="qwen3",
            architecture="Qwen3ForCausalLM",
            tiny_arch="qwen3",
            params=1_720_574_976,
            non_embedding_params=1_409_410_048,
            layers=28,
            hidden=2048,
            intermediate=6144,
            heads=16,
            kv_heads=8,
            head_dim=128,
            vocab=151_936,
            context=40_960,
            tied_embeddings=True,
            lora_targets=ALL_LINEAR,
            gated=False,
            license=_QWEN_LICENSE,
            system_role=True,
            thinking=True,
            unsloth_4bit="unsloth/Qwen3-1.7B-unsloth-bnb-4bit",
            sources=("MLC", "Q3TR", "KHQ3"),
        ),
        _spec(
            hub_id="Qwen/Qwen3-4B",
            family="qwen3",
            architecture="Qwen3ForCausalLM",
            tiny_arch="qwen3",
            params=4_022_468_096,
            non_embedding_params=3_633_511_936,
            layers=36,
            hidden=2560,
            intermediate=9728,
            heads=32,
            kv_heads=8,
            head_dim=128,
            vocab=151_936,
            context=40_960,
            tied_embeddings=True,
            lora_targets=ALL_LINEAR,
            gated=False,
            license=_QWEN_LICENSE,
            system_role=True,
            thinking=True,
            unsloth_4bit="unsloth/Qwen3-4B-unsloth-bnb-4bit",
            sources=("PROF", "MLC6E", "Q3TR", "KHQ3"),
        ),
        _spec(
            hub_id="Qwen/Qwen3-8B",
            family="qwen3",
            architecture="Qwen3ForCausalLM",
            tiny_arch="qwen3",
            params=8_190_735_360,
            non_embedding_params=6_946_075_648,
            layers=36,
            hidden=4096,
            intermediate=12288,
            heads=32,
            kv_heads=8,
            head_dim=128,
            vocab=151_936,
            context=40_960,
            tied_embeddings=False,
            lora_targets=ALL_LINEAR,
            gated=False,
            license=_QWEN_LICENSE,
            system_role=True,
            thinking=True,
            unsloth_4bit="unsloth/Qwen3-8B-unsloth-bnb-4bit",
            sources=("PROF", "MLC6E", "Q8HF", "Q3TR", "KHQ3"),
        ),
        _spec(
            hub_id="meta-llama/Llama-3.2-1B-Instruct",
            family="llama3",
            architecture="LlamaForCausalLM",
            tiny_arch="llama",
            params=1_235_814_400,
            non_embedding_params=973_146_112,
            layers=16,
            hidden=2048,
            intermediate=8192,
            heads=32,
            kv_heads=8,
            head_dim=64,
            vocab=128_256,
            context=131_072,
            tied_embeddings=True,
            lora_targets=ALL_LINEAR,
            gated=True,
            license=_LLAMA_LICENSE,
            system_role=True,
            thinking=False,
            unsloth_4bit="unsloth/Llama-3.2-1B-Instruct-unsloth-bnb-4bit",
            sources=("MLC", "LL32CARD"),
        ),
        _spec(
            hub_id="meta-llama/Llama-3.2-3B-Instruct",
            family="llama3",
            architecture="LlamaForCausalLM",
            tiny_arch="llama",
            params=3_212_749_824,
            non_embedding_params=2_818_747_392,
            layers=28,
            hidden=3072,
            intermediate=8192,
            heads=24,
            kv_heads=8,
            head_dim=128,
            vocab=128_256,
            context=131_072,
            tied_embeddings=True,
            lora_targets=ALL_LINEAR,
            gated=True,
            license=_LLAMA_LICENSE,
            system_role=True,
            thinking=False,
            unsloth_4bit="unsloth/Llama-3.2-3B-Instruct-unsloth-bnb-4bit",
            sources=("MLC", "PROF", "LL32CARD"),
        ),
        _spec(
            hub_id="meta-llama/Llama-3.1-8B-Instruct",
            family="llama3",
            architecture="LlamaForCausalLM",
            tiny_arch="llama",
            params=8_030_261_248,
            non_embedding_params=6_979_588_096,
            layers=32,
            hidden=4096,
            intermediate=14336,
            heads=32,
            kv_heads=8,
            head_dim=128,
            vocab=128_256,
            context=131_072,
            tied_embeddings=False,
            lora_targets=ALL_LINEAR,
            gated=True,
            license=_LLAMA_LICENSE,
            system_role=True,
            thinking=False,
            unsloth_4bit="unsloth/Llama-3.1-8B-Instruct-unsloth-bnb-4bit",
            sources=("MLC", "PROF", "LL31CARD"),
        ),
        _spec(
            hub_id="google/gemma-3-1b-it",
            family="gemma3",
            architecture="Gemma3ForCausalLM",
            tiny_arch="gemma3_text",
            params=999_885_952,
            non_embedding_params=697_896_064,
            layers=26,
            hidden=1152,
            intermediate=6912,
            heads=4,
            kv_heads=1,
            head_dim=256,
            vocab=262_144,
            context=32_768,
            tied_embeddings=True,
            lora_targets=ALL_LINEAR,
            gated=True,
            license=_GEMMA_LICENSE,
            system_role=False,
            thinking=False,
            unsloth_4bit="unsloth/gemma-3-1b-it-unsloth-bnb-4bit",
            sources=("MLC", "GDM3", "KHG3"),
        ),
        _spec(
            hub_id="google/gemma-3-4b-it",
            family="gemma3",
            architecture="Gemma3ForConditionalGeneration",
            tiny_arch="gemma3",
            params=4_300_079_472,
            non_embedding_params=3_209_010_688,
            layers=34,
            hidden=2560,
            intermediate=10240,
            heads=8,
            kv_heads=4,
            head_dim=256,
            vocab=262_208,
            context=131_072,
            tied_embeddings=True,
            lora_targets=GEMMA3_LANGUAGE_ONLY,
            gated=True,
            license=_GEMMA_LICENSE,
            system_role=False,
            thinking=False,
            unsloth_4bit="unsloth/gemma-3-4b-it-unsloth-bnb-4bit",
            sources=("G4BHF", "G4BPT", "GDM3", "KHG3", "TFG3"),
        ),
        _spec(
            hub_id="microsoft/Phi-4-mini-instruct",
            family="phi4-mini",
            architecture="Phi3ForCausalLM",
            tiny_arch="phi3",
            params=3_836_021_760,
            non_embedding_params=3_221_425_152,
            layers=32,
            hidden=3072,
            intermediate=8192,
            heads=24,
            kv_heads=8,
            head_dim=128,
            vocab=200_064,
            context=131_072,
            tied_embeddings=True,
            lora_targets=PHI3_TARGETS,
            gated=False,
            license="mit",
            system_role=True,
            thinking=False,
            unsloth_4bit="unsloth/Phi-4-mini-instruct-unsloth-bnb-4bit",
            sources=("MLC", "TFPHI3", "PHIDER"),
        ),
        _spec(
            hub_id="HuggingFaceTB/SmolLM2-1.7B-Instruct",
            family="smollm2",
            architecture="LlamaForCausalLM",
            tiny_arch="llama",
            params=1_711_376_384,
            non_embedding_params=1_610_713_088,
            layers=24,
            hidden=2048,
            intermediate=8192,
            heads=32,
            kv_heads=32,
            head_dim=64,
            vocab=49_152,
            context=8_192,
            tied_embeddings=True,
            lora_targets=ALL_LINEAR,
            gated=False,
            license="apache-2.0",
            system_role=True,
            thinking=False,
            unsloth_4bit=None,
            sources=("SMOLHF", "MLC6E", "SMOLRM"),
        ),
    ]
}

DEFAULT_MODEL = "Qwen/Qwen2.5-1.5B-Instruct"
CUSTOM = "custom"

_HUB_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


def valid_hub_id(hub_id: str) -> bool:
    """`owner/name` with the characters the Hub allows (no `..`, no trailing `.`/`-`)."""
    return bool(_HUB_ID_RE.match(hub_id)) and ".." not in hub_id and not hub_id.endswith((".", "-"))


def custom_model(hub_id: str, params_b: float) -> ModelSpec:
    """A model outside the catalog: sizes estimated from its parameter count.

    The shape follows the dense decoder scaling of the catalog (hidden grows ~ params^0.4, 128-dim
    heads, GQA 4:1, SwiGLU intermediate ~ 3.5 x hidden, 150k vocab). Only memory estimates use it;
    LoRA targets every linear layer (`all-linear`) since module names are unknown.
    """
    params = int(params_b * 1e9)
    vocab = 151_936
    hidden = max(512, int(round(1536 * (params_b / 1.5) ** 0.4 / 128)) * 128)
    intermediate = int(round(hidden * 3.5 / 128)) * 128
    per_layer = 4 * hidden * hidden * 0.625 + 3 * hidden * intermediate
    embedding = vocab * hidden
    layers = max(1, round(max(params - embedding, per_layer) / per_layer))
    heads = max(1, hidden // 128)
    return ModelSpec(
        hub_id=hub_id,
        family="custom",
        architecture="AutoModelForCausalLM",
        tiny_arch="qwen2",
        params=params,
        non_embedding_params=max(0, params - embedding),
        layers=layers,
        hidden=hidden,
        intermediate=intermediate,
        heads=heads,
        kv_heads=max(1, heads // 4),
        head_dim=128,
        vocab=vocab,
        context=32_768,
        tied_embeddings=params_b < 4,
        lora_targets="all-linear",
        gated=False,
        license="see the model card",
        system_role=True,
        thinking=False,
        unsloth_4bit=None,
        estimated=True,
    )


def lookup(model: str, custom_id: str = "", custom_params_b: float = math.nan) -> ModelSpec:
    """The spec for a `model` answer (a catalog id, or `custom` with its id and size)."""
    if model == CUSTOM:
        return custom_model(custom_id, custom_params_b)
    return CATALOG[model]
