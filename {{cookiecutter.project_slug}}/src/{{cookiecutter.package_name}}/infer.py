"""Chat with the trained model: one prompt, or a JSONL file of prompts.

    python -m {{ cookiecutter.package_name }}.infer
        --model outputs/<run>/merged --prompt "What is 7 * 6?"
    python -m {{ cookiecutter.package_name }}.infer
        --model outputs/<run> --prompts-file q.jsonl --output a.jsonl

`--model` takes a merged folder, a training output folder (LoRA adapter on its base model) or a Hub
id. The system prompt defaults to the recipe's, so the model sees the format it was trained on.
With the Unsloth backend, a recipe with `fast_inference: true` on a GPU with vLLM generates through
Unsloth's `fast_generate` with the saved adapter; otherwise generation is plain transformers.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from . import modeling  # first: the Unsloth backend patches transformers on import
from .config import add_recipe_options, recipe_from
from .errors import UserError, run
from .inference import chat, generate, load_model_for_inference, load_tokenizer_for, prompt_texts
from .tasks import message_text


def parse_args(argv: Sequence[str] | None):
    parser = argparse.ArgumentParser(
        prog="python -m {{ cookiecutter.package_name }}.infer",
        description="Generate answers with a trained (merged or adapter) model.",
        epilog="Other options (--config PATH, --smoke, recipe fields) choose the recipe whose "
        "output_dir, system_prompt and prompt_column give the defaults.",
    )
    parser.add_argument(
        "--model", type=Path, default=None, help="model folder (default: output_dir/merged)"
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--prompt", help="one prompt (the user message)")
    source.add_argument(
        "--prompts-file",
        type=Path,
        help='JSONL file; each line {"prompt": ...} (or the recipe\'s prompt_column)',
    )
    parser.add_argument("--output", type=Path, help="write {prompt, completion} JSONL here")
    parser.add_argument("--limit", type=int, default=None, help="use only the first N prompts")
    parser.add_argument(
        "--system-prompt", default=None, help="system message (default: the recipe's)"
    )
    parser.add_argument("--max-new-tokens", type=int, default=256, help="default 256")
    parser.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default)")
    parser.add_argument("--batch-size", type=int, default=8, help="prompts per generate call")
    parser.add_argument(
        "--dtype", default="auto", choices=["auto", "bfloat16", "float16", "float32"]
    )
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    add_recipe_options(parser)
    args, overrides = parser.parse_known_args(argv)
    args.recipe = recipe_from(args, overrides, read_only=True)
    if args.model is None:
        args.model = Path(args.recipe.training.output_dir) / "merged"
        if not args.model.exists():
            raise UserError(
                f"{args.model}: no merged model yet; run `make merge` first, or pass --model "
                "(a merged folder, a training output_dir with an adapter, or a Hub id)"
            )
    if args.system_prompt is None:
        args.system_prompt = args.recipe.script.system_prompt
    args.chat_template_kwargs = args.recipe.training.chat_template_kwargs
    args.prompt_column = args.recipe.script.prompt_column
    return args


def read_prompts(path: Path, prompt_column: str) -> list[str]:
    if not path.is_file():
        raise UserError(f"{path}: file not found")
    prompts = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise UserError(f"{path} line {number}: invalid JSON ({err.msg})") from err
        if isinstance(row, str):
            prompts.append(row)
            continue
        value = row.get("prompt", row.get(prompt_column)) if isinstance(row, dict) else None
        text = message_text(value) if isinstance(value, str | list) else None
        if not text:
            raise UserError(f"{path} line {number}: no 'prompt' (or '{prompt_column}') text")
        prompts.append(text)
    if not prompts:
        raise UserError(f"{path}: no prompts")
    return prompts


def infer(argv: Sequence[str] | None = None) -> list[str]:
    from rich.progress import track

    args = parse_args(argv)
    prompts = [args.prompt] if args.prompt else read_prompts(args.prompts_file, args.prompt_column)
    prompts = prompts[: args.limit] if args.limit else prompts
    tokenizer = load_tokenizer_for(args.model)
    fast = modeling.fast_generator(args.model, args.recipe)
    model = None if fast else load_model_for_inference(args.model, args.dtype, args.device)
    batches = [prompts[i : i + args.batch_size] for i in range(0, len(prompts), args.batch_size)]
    completions: list[str] = []
    steps = track(batches, description="Generating") if len(batches) > 1 else batches
    for batch in steps:
        conversations = [chat(p, args.system_prompt) for p in batch]
        if fast:
            texts = prompt_texts(tokenizer, conversations, args.chat_template_kwargs)
            completions += fast(texts, args.max_new_tokens, args.temperature)
            continue
        completions += generate(
            model, tokenizer, conversations, args.max_new_tokens, args.temperature,
            args.chat_template_kwargs,
        )  # fmt: skip
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        with args.output.open("w", encoding="utf-8") as handle:
            for prompt, completion in zip(prompts, completions, strict=True):
                handle.write(json.dumps({"prompt": prompt, "completion": completion}) + "\n")
        print(f"wrote {len(completions)} completions to {args.output}")
    else:
        for prompt, completion in zip(prompts, completions, strict=True):
            print(f"### prompt\n{prompt}\n### completion\n{completion}\n")
    return completions


def main(argv: Sequence[str] | None = None) -> int:
    return run(infer, argv)


if __name__ == "__main__":
    sys.exit(main())
