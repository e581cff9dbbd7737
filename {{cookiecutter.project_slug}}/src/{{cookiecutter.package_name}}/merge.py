"""Merge the trained LoRA adapter into its base model and prove the merge worked.

`python -m {{ cookiecutter.package_name }}.merge [RUN_DIR] [--output DIR]`
writes a standalone model and tokenizer (default `RUN_DIR/merged`). It then reloads the merged
folder and checks that its greedy outputs on a few prompts equal the adapter model's: a known
failure elsewhere is a merged model that silently behaves like the base model. The folder only
appears once the check passed; on a mismatch the command fails (exit code 2), leaving nothing.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from . import modeling  # first: the Unsloth backend patches transformers on import
from .config import add_recipe_options, recipe_from
from .errors import UserError, run
from .inference import (
    Decoding,
    base_model_of,
    chat,
    check_model_dir,
    default_device,
    generate,
    is_adapter,
    load_model_for_inference,
)

logger = logging.getLogger(__spec__.name)  # the real name also under `python -m`

CHECK_PROMPTS = (
    "What is 12 + 30?",
    "Name three primary colours.",
    "Write one sentence about the sea.",
)


class MergeCheckFailed(UserError):
    """The merged model does not reproduce the adapter model's outputs."""


def parse_args(argv: Sequence[str] | None):
    parser = argparse.ArgumentParser(
        prog="python -m {{ cookiecutter.package_name }}.merge",
        description="Merge a LoRA adapter into its base model and verify the merged model.",
        epilog="Other options (--config PATH, --smoke, recipe fields) choose the recipe whose "
        "output_dir and system_prompt give the defaults.",
    )
    parser.add_argument(
        "run_dir",
        nargs="?",
        type=Path,
        default=None,
        help="training output folder with the adapter (default: the recipe's output_dir)",
    )
    parser.add_argument("--output", type=Path, help="where to write (default: RUN_DIR/merged)")
    parser.add_argument(
        "--dtype",
        default="auto",
        choices=["auto", "bfloat16", "float16", "float32"],
        help="dtype to merge and save in (default: the base model's own)",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an existing output folder"
    )
    parser.add_argument("--no-check", action="store_true", help="skip the output comparison")
    parser.add_argument(
        "--max-new-tokens",
        type=int,
        default=16,
        help="tokens compared per check prompt (default 16)",
    )
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    add_recipe_options(parser)
    args, overrides = parser.parse_known_args(argv)
    recipe = recipe_from(args, overrides, read_only=True)
    args.run_dir = args.run_dir or Path(recipe.training.output_dir)
    args.output = args.output or args.run_dir / "merged"
    args.system_prompt = recipe.script.system_prompt
    args.chat_template_kwargs = recipe.training.chat_template_kwargs
    return args


def merge(argv: Sequence[str] | None = None) -> Path:
    args = parse_args(argv)
    check_model_dir(args.run_dir)
    if args.output.exists() and not args.overwrite:
        raise UserError(f"{args.output} already exists; pass --overwrite to replace it")
    device = args.device or default_device()
    model, tokenizer = modeling.load_for_merge(str(args.run_dir), args.dtype, device)
    prompts = [chat(p, args.system_prompt) for p in CHECK_PROMPTS]

    expected = base = None
    if not args.no_check:
        kwargs = args.chat_template_kwargs
        greedy = Decoding()  # the check compares exact outputs
        expected = generate(model, tokenizer, prompts, args.max_new_tokens, greedy, kwargs)
        if is_adapter(args.run_dir):
            with model.disable_adapter():
                base = generate(model, tokenizer, prompts, args.max_new_tokens, greedy, kwargs)
    if is_adapter(args.run_dir):
        logger.info("merging the adapter into %s", base_model_of(args.run_dir))

    staging = args.output.with_name(args.output.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        modeling.save_merged(model, tokenizer, str(staging))
        if expected is not None:
            verify(staging, tokenizer, prompts, expected, base, args, device)
        if args.output.exists():
            shutil.rmtree(args.output)
        staging.rename(args.output)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    print(f"merged model written to {args.output}")
    return args.output


def verify(staging: Path, tokenizer, prompts, expected, base, args, device) -> None:
    """Reload the saved folder from disk and compare its greedy outputs with the adapter's."""
    reloaded = load_model_for_inference(staging, args.dtype, device)
    got = generate(
        reloaded, tokenizer, prompts, args.max_new_tokens, Decoding(), args.chat_template_kwargs
    )
    mismatches = [i for i, (a, b) in enumerate(zip(expected, got, strict=True)) if a != b]
    if mismatches:
        i = mismatches[0]
        like_base = base is not None and got == base and base != expected
        reason = "it behaves like the base model (adapter lost)" if like_base else "outputs differ"
        raise MergeCheckFailed(
            f"merge check failed on {len(mismatches)}/{len(prompts)} prompts: {reason}. "
            f"Prompt {CHECK_PROMPTS[i]!r}: adapter {expected[i]!r} vs merged {got[i]!r}"
        )
    if base is not None and base == expected:
        logger.warning(
            "the adapter does not change greedy outputs on the check prompts (undertrained?); "
            "the check cannot tell the merged model from the base model"
        )
    print(f"merge check passed: merged outputs equal the adapter's on {len(prompts)} prompts")


def main(argv: Sequence[str] | None = None) -> int:
    return run(merge, argv)


if __name__ == "__main__":
    sys.exit(main())
