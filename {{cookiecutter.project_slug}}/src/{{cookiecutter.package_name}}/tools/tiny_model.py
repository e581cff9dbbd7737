"""A tiny random model and tokenizer, built locally so every command can run offline.

`python -m {{ cookiecutter.package_name }}.tools.tiny_model OUT_DIR`
writes a ~200k-parameter model of the same architecture family as the project's real model (so
LoRA target modules match) and a byte-level BPE tokenizer trained on the sample data, with a
ChatML chat template. Point `model_name_or_path` at OUT_DIR to run train, merge or infer without
the Hugging Face Hub.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Sequence
from pathlib import Path

from ..project import SAMPLE_DATA, TINY_ARCH

# The last three are only used by the multimodal gemma3 tower (image placeholders).
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|image|>", "<|boi|>", "<|eoi|>"]
ARCHITECTURES = ("qwen2", "qwen3", "llama", "phi3", "gemma3_text", "gemma3")
# Words every task's prompts and ideal completions use, so they tokenize compactly.
SEED_TEXT = (
    "<think> </think> <answer> </answer> ```python ``` ```json ``` \\boxed{} \\frac{}{} "
    "0 1 2 3 4 5 6 7 8 9 + - * / = ( ) [ ] { } , . : ; ' \" true false null yes no "
    "def return assert import the answer is step by step"
)


def _corpus(sample_file: Path) -> Iterator[str]:
    yield SEED_TEXT
    if sample_file.is_file():
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


def build_tokenizer(sample_file: Path = Path(SAMPLE_DATA), vocab_size: int = 1024):
    """Byte-level BPE (any text encodes) trained in memory; left padding, ChatML template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(_corpus(sample_file), trainer)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        padding_side="left",
    )
    template = Path(__file__).with_name("tiny_chat_template.jinja").read_text(encoding="utf-8")
    wrapped.chat_template = template
    return wrapped


def _config(arch: str, tokenizer):
    from transformers import AutoConfig

    common = {
        "vocab_size": len(tokenizer),
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 2048,
        "tie_word_embeddings": True,
        "pad_token_id": tokenizer.pad_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "bos_token_id": None,
        # Wider than the usual 0.02 so greedy decoding of the random model prints varied words
        # rather than one repeated whitespace token.
        "initializer_range": 0.1,
    }
    if arch in ("qwen3", "llama"):
        common["head_dim"] = 16
    if arch == "gemma3_text":
        common.update(head_dim=16, sliding_window=128)
    if arch == "gemma3":
        # Gemma 3 4B is multimodal: a text tower plus a (here minimal) vision tower.
        text = {
            k: v
            for k, v in common.items()
            if k not in ("pad_token_id", "bos_token_id", "initializer_range")
        }
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
            image_token_index=tokenizer.convert_tokens_to_ids("<|image|>"),
            boi_token_index=tokenizer.convert_tokens_to_ids("<|boi|>"),
            eoi_token_index=tokenizer.convert_tokens_to_ids("<|eoi|>"),
            tie_word_embeddings=True,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
    return AutoConfig.for_model(arch, **common)


def _mute_whitespace_tokens(model, tokenizer) -> None:
    """Zero the (tied) embeddings of whitespace-only tokens: their logit is then 0 while random
    tokens' maximum is positive, so greedy decoding prints words, not a run of newlines."""
    import torch

    blank = [i for i in range(len(tokenizer)) if not tokenizer.decode([i]).strip()]
    blank = [i for i in blank if i not in tokenizer.all_special_ids]
    with torch.no_grad():
        model.get_input_embeddings().weight[blank] = 0.0


def build_tiny_model(out_dir: Path, arch: str = TINY_ARCH, seed: int = 0) -> Path:
    """Write the tiny model and tokenizer to `out_dir` (created; overwritten if present)."""
    import torch
    from transformers import AutoModelForCausalLM

    if arch not in ARCHITECTURES:
        raise ValueError(f"unknown tiny architecture '{arch}'; choose one of {ARCHITECTURES}")
    tokenizer = build_tokenizer()
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(_config(arch, tokenizer))
    _mute_whitespace_tokens(model, tokenizer)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


def ensure_tiny_model(path: Path, default_dir: Path) -> None:
    """Build the tiny model in `default_dir` on first use, when a smoke run asks for it there."""
    import logging

    if path.resolve() != default_dir.resolve() or (default_dir / "config.json").is_file():
        return
    logging.getLogger(__name__).info("smoke: building the tiny offline model in %s", default_dir)
    build_tiny_model(default_dir)


def build_tiny_reward_model(out_dir: Path, seed: int = 0) -> Path:
    """A tiny random sequence-classification reward model (one score per text) with the same
    tokenizer, for offline runs of a recipe with `reward_model`."""
    import torch
    from transformers import AutoModelForSequenceClassification

    tokenizer = build_tokenizer()
    config = _config("qwen2", tokenizer)
    config.num_labels = 1
    torch.manual_seed(seed)
    model = AutoModelForSequenceClassification.from_config(config)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m {{ cookiecutter.package_name }}.tools.tiny_model",
        description="Write a tiny random model + tokenizer for offline runs.",
    )
    parser.add_argument("out_dir", type=Path, help="folder to write (e.g. outputs/tiny-model)")
    parser.add_argument(
        "--arch",
        default=TINY_ARCH,
        choices=ARCHITECTURES,
        help=f"architecture (default {TINY_ARCH})",
    )
    parser.add_argument("--seed", type=int, default=0, help="weight initialisation seed")
    parser.add_argument(
        "--reward-model",
        action="store_true",
        help="write a tiny sequence-classification reward model instead",
    )
    args = parser.parse_args(argv)
    if args.reward_model:
        path = build_tiny_reward_model(args.out_dir, args.seed)
        print(f"tiny reward model written to {path}")
        return
    path = build_tiny_model(args.out_dir, args.arch, args.seed)
    print(f"tiny {args.arch} model written to {path}")


if __name__ == "__main__":
    main()
