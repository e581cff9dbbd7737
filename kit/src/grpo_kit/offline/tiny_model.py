"""A tiny random model and tokenizer, built locally so every command can run offline.

`grpo tiny-model OUT_DIR` writes a ~200k-parameter model of the same architecture family as the
project's real model (so LoRA target modules match, and a vision-language checkpoint keeps its
towers) and a byte-level BPE tokenizer trained on the sample data. The tokenizer carries the real
model's chat template, read from the installed TRL package (`trl/chat_templates/`, TRL's exact
copies of the templates checkpoints ship) or, for a model TRL ships none of, from `chat_templates/`
here (the checkpoint's own), and the special tokens that template writes, so offline runs render
prompts exactly as the real model would: prefilled `<think>`, folded system prompts, dated headers.
GRPO uses the checkpoint's own template (TRL swaps in its `_training` variant when it trains tool
calls and the own one is not prefix-preserving), so that is the one copied. For an agent task, smoke
runs and tests build it with the recipe (`build_tiny_model(recipe=...)`): the tokenizer then also
learns the text of its rollouts (system prompt, tool schemas, calls) and keeps the tool-call tags
whole, so prompts stay short; this command builds the plain one. Point `model_name_or_path` at
OUT_DIR to run train, merge or infer without the Hugging Face Hub.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..project import Project


@dataclass(frozen=True)
class TemplateTokens:
    """The special tokens a chat template writes: kept whole by the tokenizer and dropped by
    `skip_special_tokens` (as TRL decodes completions), and which of them end a turn (eos: where
    generation stops), pad and begin the text (bos, where the template writes bos_token)."""

    special: tuple[str, ...]
    eos: str
    pad: str | None  # None: the real tokenizer has no pad token (the project pads with eos)
    bos: str | None = None
    # Markup the real tokenizer keeps whole without being special (decoding keeps it): Qwen's
    # tool-call and thinking tags. Added for agent tasks, whose tool calls are written in it.
    added: tuple[str, ...] = ()
    # Turn ends the checkpoint's generation_config stops on besides eos (Phi-4-mini's eos is
    # <|endoftext|> while its turns end with <|end|>): TRL stops generation on both.
    stops: tuple[str, ...] = ()

    @property
    def all(self) -> list[str]:
        named = [t for t in (self.eos, self.pad, self.bos) if t]
        return list(dict.fromkeys([*named, *self.special]))


_CHATML = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
_QWEN_TAGS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>",
              "</think>")  # fmt: skip
_QWEN = TemplateTokens(_CHATML, "<|im_end|>", "<|endoftext|>", added=_QWEN_TAGS)
_QWEN_VL = ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>")
_LLAMA3 = TemplateTokens(
    ("<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
     "<|eom_id|>", "<|python_tag|>"),
    "<|eot_id|>", None, "<|begin_of_text|>",
)  # fmt: skip
# Gemma 3: image placeholders of the multimodal checkpoint (4B) included.
_GEMMA3_IMAGE = ("<start_of_image>", "<end_of_image>", "<image_soft_token>")
# Gemma 4: image / audio placeholders and their begin/end markers (the config's token ids).
_GEMMA4_MEDIA = ("<|image|>", "<|audio|>", "<|video|>", "<|image>", "<image|>", "<|audio>",
                 "<audio|>")  # fmt: skip
# By the template's file stem ("": the stand-in ChatML template of a custom model).
TOKENS: dict[str, TemplateTokens] = {
    "": _QWEN,
    # Phi-4-mini: config bos/eos/pad <|endoftext|> (199999); turns end with <|end|> (200020),
    # which its generation_config lists first among the eos ids.
    "phi4_mini": TemplateTokens(
        ("<|endoftext|>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>", "<|tool|>",
         "<|/tool|>"),
        "<|endoftext|>", "<|endoftext|>", "<|endoftext|>", stops=("<|end|>",),
    ),
    # SmolLM3: Llama 3 vocabulary with ChatML turns; eos <|im_end|>, pad the fine-tuning pad id.
    "smollm3": TemplateTokens(
        ("<|begin_of_text|>", "<|im_start|>", "<|im_end|>", "<|finetune_right_pad_id|>"),
        "<|im_end|>", "<|finetune_right_pad_id|>", "<|begin_of_text|>",
    ),
    "qwen2_5": _QWEN,
    "qwen3": _QWEN,
    "qwen3_5_think": TemplateTokens(
        _CHATML + _QWEN_VL, "<|im_end|>", "<|endoftext|>", added=_QWEN_TAGS
    ),
    "qwen3_5_nothink": TemplateTokens(
        _CHATML + _QWEN_VL, "<|im_end|>", "<|endoftext|>", added=_QWEN_TAGS
    ),
    "llama3_1": _LLAMA3,
    "llama3_2": _LLAMA3,
    "gemma3": TemplateTokens(
        ("<bos>", "<eos>", "<pad>", "<start_of_turn>", "<end_of_turn>", *_GEMMA3_IMAGE),
        "<end_of_turn>", "<pad>", "<bos>",
    ),
    "gemma4_v5": TemplateTokens(
        ("<bos>", "<eos>", "<pad>", "<|turn>", "<turn|>", "<|think|>", "<|channel>", "<channel|>",
         "<|tool>", "<tool|>", "<|tool_call>", "<tool_call|>", "<|tool_response>",
         "<tool_response|>", '<|"|>', *_GEMMA4_MEDIA),
        "<turn|>", "<pad>", "<bos>",
    ),
    "lfm2_2_5_v2": TemplateTokens(
        ("<|startoftext|>", "<|im_start|>", "<|im_end|>", "<|pad|>", "<|tool_call_start|>",
         "<|tool_call_end|>", "<image>"),
        "<|im_end|>", "<|pad|>", "<|startoftext|>",
    ),
    "nemotron_3_nano": _QWEN,
    # SmolLM2: ChatML turns; bos <|im_start|>, eos and pad <|im_end|> (the GGUF's ids 1, 2, 2).
    "smollm2": TemplateTokens(("<|endoftext|>", "<|im_start|>", "<|im_end|>"), "<|im_end|>",
                              "<|im_end|>", "<|im_start|>"),
}  # fmt: skip
MULTIMODAL = ("gemma3", "qwen3_5", "gemma4")
ARCHITECTURES = (
    "qwen2", "qwen3", "llama", "phi3", "gemma3_text", "gemma3", "qwen3_5", "gemma4", "smollm3",
    "lfm2", "nemotron_h",
)  # fmt: skip
# Words every task's prompts and ideal completions use, so they tokenize compactly.
SEED_TEXT = (
    "<think> </think> <answer> </answer> ```python ``` ```json ``` \\boxed{} \\frac{}{} "
    "0 1 2 3 4 5 6 7 8 9 + - * / = ( ) [ ] { } , . : ; ' \" true false null yes no "
    "def return assert import the answer is step by step"
)
# An agent task's tokenizer also learns its rollouts' text (system prompt, tool schemas, calls):
# a larger vocabulary keeps those prompts short, so the tiny model trains and samples fast.
AGENT_VOCAB = 4096
TEACH_STEPS = 300  # a taught rollout's call is then sampled whole (tests/test_agent_learning)
TEACH_CONTEXT = 128
# In the offline runs' tiny model folder: the data file its tokenizer learned (rebuilt on a change).
TOKENIZER_DATA = "tokenizer_data.txt"
SHARE_COPIES = 10  # copies of each row taught when only a share of the rollouts calls a tool
# The chat templates TRL ships none of (the checkpoint's own), and the stand-in of a custom model.
VENDORED_TEMPLATES = Path(__file__).with_name("chat_templates")
STAND_IN_TEMPLATE = VENDORED_TEMPLATES / "stand_in.jinja"


def chat_template_text(name: str) -> str:
    """The chat template `name` as TRL ships it, or the checkpoint's own copy in
    `chat_templates/` where TRL ships none ("": the stand-in ChatML template)."""
    if not name:
        return STAND_IN_TEMPLATE.read_text(encoding="utf-8")
    vendored = VENDORED_TEMPLATES / f"{name}.jinja"
    if vendored.is_file():
        return vendored.read_text(encoding="utf-8")
    from importlib import resources

    path = resources.files("trl") / "chat_templates" / f"{name}.jinja"
    if not path.is_file():
        raise FileNotFoundError(
            f"the installed TRL has no chat template {name}.jinja; install the project's pinned "
            "TRL (`make install`)"
        )
    return path.read_text(encoding="utf-8")


def _corpus(sample_file: Path, extra: Sequence[str] = ()) -> Iterator[str]:
    yield SEED_TEXT
    yield from extra
    if sample_file.is_file() and sample_file.suffix.lower() != ".jsonl":  # your .csv, .parquet
        from ..rows import load_rows

        for row in load_rows(str(sample_file)).to_list():
            yield from _strings(row)
    elif sample_file.is_file():
        for line in sample_file.read_text(encoding="utf-8").splitlines():
            if line.strip():
                yield from _strings(json.loads(line))


def _strings(value) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def build_tokenizer(
    sample_file: Path, template: str, vocab_size: int = 1024, extra: Sequence[str] = ()
):
    """Byte-level BPE (any text encodes) trained in memory on the sample data (and `extra`
    texts); left padding; the real model's chat template and the special tokens it writes."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokens = TOKENS[template]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=tokens.all,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(_corpus(sample_file, extra), trainer)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token=tokens.eos,
        pad_token=tokens.pad,
        bos_token=tokens.bos,
        padding_side="left",
    )
    if extra:  # an agent task: its tool-call markup stays whole, as in the real tokenizer
        wrapped.add_tokens(list(tokens.added))
    wrapped.chat_template = chat_template_text(template)
    return wrapped


def _token_id(tokenizer, token: str) -> int:
    return tokenizer.convert_tokens_to_ids(token)


def _config(arch: str, tokenizer):
    from transformers import AutoConfig

    pad = tokenizer.pad_token_id
    common = {
        "vocab_size": len(tokenizer),
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 2048,
        "tie_word_embeddings": True,
        "pad_token_id": pad if pad is not None else tokenizer.eos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "bos_token_id": tokenizer.bos_token_id,
        # Wider than the usual 0.02 so greedy decoding of the random model prints varied words
        # rather than one repeated whitespace token.
        "initializer_range": 0.1,
    }
    if arch in ("qwen3", "llama", "smollm3"):
        common["head_dim"] = 16
    if arch == "gemma3_text":
        common.update(head_dim=16, sliding_window=128)
    if arch == "lfm2":  # one short-convolution block, one attention block
        common.update(layer_types=["conv", "full_attention"], block_auto_adjust_ff_dim=False)
    if arch == "nemotron_h":  # Mamba-2, mixture of experts, attention, MLP blocks
        common.update(
            num_hidden_layers=4,
            layers_block_type=["mamba", "moe", "attention", "mlp"],
            head_dim=16,
            mamba_num_heads=4,
            mamba_head_dim=16,
            ssm_state_size=16,
            n_groups=2,
            n_routed_experts=4,
            num_experts_per_tok=2,
            moe_intermediate_size=32,
            moe_shared_expert_intermediate_size=32,
        )
    if arch in ("gemma3", "qwen3_5", "gemma4"):
        return _multimodal_config(arch, common, tokenizer)
    return AutoConfig.for_model(arch, **common)


def _multimodal_config(arch: str, common: dict, tokenizer):
    """A vision-language checkpoint: the text tower plus (here minimal) vision/audio towers, so
    the tiny model loads as the same class as the real one and LoRA must avoid the towers."""
    from transformers import AutoConfig

    top = (
        "pad_token_id",
        "bos_token_id",
        "eos_token_id",
        "initializer_range",
        "tie_word_embeddings",
    )
    text = {k: v for k, v in common.items() if k not in top or k.endswith("token_id")}
    ids = {"pad_token_id": common["pad_token_id"], "eos_token_id": common["eos_token_id"]}
    if arch == "gemma3":  # Gemma 3 4B
        text.update(head_dim=16, sliding_window=128)
        vision = {
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "image_size": 28,
            "patch_size": 14,
        }
        return AutoConfig.for_model(
            "gemma3",
            initializer_range=0.1,
            text_config=text,
            vision_config=vision,
            mm_tokens_per_image=4,
            image_token_index=_token_id(tokenizer, "<image_soft_token>"),
            boi_token_index=_token_id(tokenizer, "<start_of_image>"),
            eoi_token_index=_token_id(tokenizer, "<end_of_image>"),
            tie_word_embeddings=True,
            **ids,
        )
    if arch == "qwen3_5":  # Qwen3.5: Gated DeltaNet and full-attention layers, a ViT tower
        text.update(
            head_dim=16,
            layer_types=["linear_attention", "full_attention"],
            linear_num_key_heads=2,
            linear_num_value_heads=4,
            linear_key_head_dim=16,
            linear_value_head_dim=16,
        )
        vision = {
            "depth": 1,
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_heads": 2,
            "out_hidden_size": common["hidden_size"],
            "num_position_embeddings": 16,
        }
        return AutoConfig.for_model(
            "qwen3_5",
            initializer_range=0.1,
            text_config=text,
            vision_config=vision,
            image_token_id=_token_id(tokenizer, "<|image_pad|>"),
            video_token_id=_token_id(tokenizer, "<|video_pad|>"),
            vision_start_token_id=_token_id(tokenizer, "<|vision_start|>"),
            vision_end_token_id=_token_id(tokenizer, "<|vision_end|>"),
            tie_word_embeddings=True,
        )
    # Gemma 4 E2B/E4B: sliding and full layers (the last two reusing the first two's K/V; the
    # last layer is a full one), per-layer embeddings, soft-capped logits, vision and audio.
    text.update(
        num_hidden_layers=4,
        layer_types=["sliding_attention", "full_attention"] * 2,
        head_dim=16,
        sliding_window=128,
        num_kv_shared_layers=2,
        hidden_size_per_layer_input=8,
        vocab_size_per_layer_input=len(tokenizer),
        final_logit_softcapping=30.0,
    )
    vision = {
        "hidden_size": 16,
        "intermediate_size": 32,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "head_dim": 8,
        "position_embedding_size": 64,
        "patch_size": 4,
        "pooling_kernel_size": 2,
    }
    audio = {
        "hidden_size": 16,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "subsampling_conv_channels": [4, 4],
        "output_proj_dims": 16,
        "conv_kernel_size": 3,
    }
    return AutoConfig.for_model(
        "gemma4",
        initializer_range=0.1,
        text_config=text,
        vision_config=vision,
        audio_config=audio,
        image_token_id=_token_id(tokenizer, "<|image|>"),
        video_token_id=_token_id(tokenizer, "<|video|>"),
        audio_token_id=_token_id(tokenizer, "<|audio|>"),
        boi_token_id=_token_id(tokenizer, "<|image>"),
        eoi_token_id=_token_id(tokenizer, "<image|>"),
        boa_token_id=_token_id(tokenizer, "<|audio>"),
        eoa_token_index=_token_id(tokenizer, "<audio|>"),
        tie_word_embeddings=True,
    )


def _mute_whitespace_tokens(model, tokenizer) -> None:
    """Zero the (tied) embeddings of whitespace-only tokens: their logit is then 0 while random
    tokens' maximum is positive, so greedy decoding prints words, not a run of newlines."""
    import torch

    blank = [i for i in range(len(tokenizer)) if not tokenizer.decode([i]).strip()]
    blank = [i for i in blank if i not in tokenizer.all_special_ids]
    with torch.no_grad():
        model.get_input_embeddings().weight[blank] = 0.0


def teaching_texts(
    tokenizer, recipe, call_share: float = 1.0, environment: str | None = None
) -> list[tuple[str, list[tuple[int, int]]]]:
    """An agent task's rollouts (TASK.example_rollout) on the recipe's data (its rows of
    `environment` only, if given), as (text, the character spans the model writes): for a share
    `call_share` of them, the environment's example call, its real result, then the answer; for
    the others, the answer at once. Rendered with the row's tools in the chat template TRL will
    use; the spans are the assistant turns, as TRL's tool mask leaves them."""
    from .. import data
    from ..environments.episodes import assistant_turn, chat_kwargs

    task = recipe.project.task
    rows = data.load_training_rows(recipe.script, recipe.task, task)
    rows = data.to_conversations(rows, recipe.script, recipe.task, task)
    if environment is not None:
        rows = rows.filter(lambda row: row["environment"] == environment)
    tools_of = data.row_tools(recipe.task, task)
    kwargs = chat_kwargs(tokenizer, recipe.training.chat_template_kwargs)

    # Every row is taught SHARE_COPIES times, round(call_share x SHARE_COPIES) of them with the
    # call: the model then calls with about that probability whatever the prompt.
    copies = 1 if call_share in (0.0, 1.0) else SHARE_COPIES
    calling = round(call_share * copies)
    texts = []
    for row in rows:
        tools = tools_of(row)
        for copy in range(copies):
            messages = list(row["prompt"])
            spans = []
            for message in task.example_rollout(row, recipe.task, copy < calling):
                if message["role"] == "assistant":
                    before, text = assistant_turn(tokenizer, messages, message, tools, kwargs)
                    spans.append((len(before), len(before) + len(text)))
                messages.append(message)
            full = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False, **kwargs)
            texts.append((full, spans))
    return texts


def teach(
    model,
    tokenizer,
    texts: list[tuple[str, list[tuple[int, int]]]],
    steps: int = TEACH_STEPS,
    seed: int = 0,
    context: int = TEACH_CONTEXT,
) -> None:
    """Teach the tiny model the assistant turns of `texts` (`teaching_texts`): plain next-token
    training on the tokens inside the spans, seen through the `context` tokens before the first
    (the question and the generation prompt; the system prompt and tool list before them are the
    same in every row), 8 texts a step. A random model never writes a well-formed tool call, so
    without this an offline run could not exercise TRL's tool loop."""
    import random

    import torch

    examples = []
    for text, spans in texts:
        encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        ids, offsets = encoded["input_ids"], encoded["offset_mapping"]
        labels = [
            token if any(a <= start < b for a, b in spans) else -100
            for token, (start, _) in zip(ids, offsets, strict=True)
        ]
        first = next(i for i, label in enumerate(labels) if label != -100)
        keep = max(0, first - context)
        examples.append((ids[keep:], labels[keep:]))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    rng = random.Random(seed)
    torch.manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(steps):
        batch = rng.sample(examples, min(8, len(examples)))
        width = max(len(ids) for ids, _ in batch)
        input_ids = torch.tensor([ids + [pad] * (width - len(ids)) for ids, _ in batch])
        labels = torch.tensor([lab + [-100] * (width - len(lab)) for _, lab in batch])
        mask = torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids, _ in batch])
        logits = model(input_ids=input_ids, attention_mask=mask).logits[:, :-1]
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1), ignore_index=-100
        )
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()


def build_tiny_model(
    out_dir: Path,
    arch: str,
    template: str,
    sample_file: Path,
    *,
    seed: int = 0,
    recipe=None,
    call_share: float | None = None,
    environment: str | None = None,
) -> Path:
    """Write the tiny model and tokenizer to `out_dir` (created; overwritten if present): `arch`
    (see ARCHITECTURES), the chat template `template`, a tokenizer trained on `sample_file`.
    Given the `recipe` (recipe.Recipe), an agent task's tokenizer also learns the text of its
    rollouts on the recipe's data (shorter prompts), and with `call_share` the model is taught
    them (`teach`: that share of the rollouts calls a tool; only rows of `environment`)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    if arch not in ARCHITECTURES:
        raise ValueError(f"unknown tiny architecture '{arch}'; choose one of {ARCHITECTURES}")
    tokenizer = build_tokenizer(sample_file, template)
    texts = []
    agent = recipe is not None and recipe.project.task.example_rollout is not None
    if agent:  # also the rollouts' text
        share = 1.0 if call_share is None else call_share
        texts = teaching_texts(tokenizer, recipe, share, environment)
        fulls = [text for text, _ in texts]
        tokenizer = build_tokenizer(sample_file, template, AGENT_VOCAB, extra=fulls)
    torch.manual_seed(seed)
    # A vision-language checkpoint is saved as its ConditionalGeneration class, as the real one
    # is (for Qwen3.5 AutoModelForCausalLM would build the text-only Qwen3_5ForCausalLM).
    auto = AutoModelForImageTextToText if arch in MULTIMODAL else AutoModelForCausalLM
    model = auto.from_config(_config(arch, tokenizer))
    _mute_whitespace_tokens(model, tokenizer)
    if texts and call_share is not None:
        teach(model, tokenizer, texts, seed=seed)
    stops = [_token_id(tokenizer, token) for token in TOKENS[template].stops]
    model.generation_config.eos_token_id = (
        [*stops, tokenizer.eos_token_id] if stops else (tokenizer.eos_token_id)
    )
    model.generation_config.pad_token_id = model.config.get_text_config().pad_token_id
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


def project_tiny_model(out_dir: Path, project: Project, recipe=None, **options) -> Path:
    """The tiny stand-in of the project's model: its architecture and chat template, a tokenizer
    trained on the data the recipe reads (`recipe.tokenizer_data`: your local data file, else
    the task's sample; the sample without a recipe) (options: see `build_tiny_model`)."""
    from ..recipe import tokenizer_data

    sample = project.root / project.task.data.sample
    sample = tokenizer_data(recipe) if recipe is not None else sample
    return build_tiny_model(
        out_dir, project.tiny_arch, project.chat_template, sample, recipe=recipe, **options
    )


def ensure_tiny_model(recipe) -> None:
    """Build the tiny model in outputs/tiny-model on first use, when an offline run (`--smoke`,
    `--trial`) asks for it there."""
    import logging
    import os
    import shutil

    from filelock import FileLock

    from ..recipe import TINY_MODEL_DIR, tokenizer_data

    path = Path(recipe.model.model_name_or_path)
    default_dir = recipe.project.root / TINY_MODEL_DIR
    if path.resolve() != default_dir.resolve():
        return
    # Rebuilt when the data changes (the sample, then your own): its tokenizer learns that data.
    data = str(tokenizer_data(recipe).resolve())
    sample = str((recipe.project.root / recipe.project.task.data.sample).resolve())
    if _tiny_model_current(default_dir, data, sample):
        return
    # Several processes (the ranks of `make smoke-distributed`, parallel tests) may ask at once:
    # one builds, under a lock, into a private folder renamed into place, so no process ever
    # loads a half-written model; the others find it built when they get the lock.
    default_dir.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(default_dir) + ".lock"):
        if _tiny_model_current(default_dir, data, sample):
            return
        logging.getLogger(__name__).info(
            "offline run: building the tiny model in %s (tokenizer trained on %s)",
            default_dir,
            data,
        )
        building = default_dir.with_name(f"{default_dir.name}.building-{os.getpid()}")
        shutil.rmtree(building, ignore_errors=True)
        project_tiny_model(building, recipe.project, recipe=recipe)
        (building / TOKENIZER_DATA).write_text(data, encoding="utf-8")
        shutil.rmtree(default_dir, ignore_errors=True)
        building.rename(default_dir)


def _tiny_model_current(folder: Path, data: str, sample: str) -> bool:
    """Whether `folder` holds a finished tiny model whose tokenizer learnt `data`."""
    stamp = folder / TOKENIZER_DATA
    built_from = stamp.read_text(encoding="utf-8") if stamp.is_file() else sample
    return (folder / "config.json").is_file() and built_from == data


def build_tiny_reward_model(out_dir: Path, project: Project, seed: int = 0) -> Path:
    """A tiny random sequence-classification reward model (one score per text), for offline
    runs of a recipe with `reward_model`: the architecture and chat template of the reward-model
    recipe's base, so its LoRA targets and rendered texts are the real ones."""
    import torch
    from transformers import AutoModelForSequenceClassification

    sample = project.root / project.task.data.sample
    tokenizer = build_tokenizer(sample, project.reward_chat_template)
    config = _config(project.reward_tiny_arch, tokenizer)
    config.num_labels = 1
    torch.manual_seed(seed)
    model = AutoModelForSequenceClassification.from_config(config)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


def write(argv: Sequence[str] | None = None) -> None:
    from ..project import load

    parser = argparse.ArgumentParser(
        prog="grpo tiny-model",
        description="Write a tiny random model + tokenizer for offline runs: the architecture "
        "and chat template of the project's model, a tokenizer trained on its sample data.",
    )
    parser.add_argument("out_dir", type=Path, help="folder to write (e.g. outputs/tiny-model)")
    parser.add_argument(
        "--arch", default=None, choices=ARCHITECTURES, help="architecture (default: the project's)"
    )
    parser.add_argument("--seed", type=int, default=0, help="weight initialisation seed")
    parser.add_argument(
        "--reward-model",
        action="store_true",
        help="write a tiny sequence-classification reward model instead",
    )
    args = parser.parse_args(argv)
    project = load()
    if args.reward_model:
        path = build_tiny_reward_model(args.out_dir, project, args.seed)
        print(f"tiny reward model written to {path}")
        return
    arch = args.arch or project.tiny_arch
    sample = project.root / project.task.data.sample
    path = build_tiny_model(args.out_dir, arch, project.chat_template, sample, seed=args.seed)
    print(f"tiny {arch} model written to {path}")


def main(argv: Sequence[str] | None = None) -> int:
    from ..runner import run

    return run(write, argv)
