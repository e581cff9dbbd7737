"""Merging a trained LoRA adapter into its base model, and the proof that the merge worked: the
kit's `merge` (what `grpo merge` runs) and the steps it composes (a project's own merge script,
after `grpo eject merge`, composes the same ones).

The merged folder is reloaded from disk and its greedy outputs on a few prompts must equal the
adapter model's: a known failure elsewhere is a merged model that silently behaves like the base
model. The folder only appears once the check passed (it is written beside, as
`<output>.partial`, and renamed); on a mismatch the command fails (exit code 2), leaving nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .errors import UserError
from .generation import (
    Decoding,
    base_model_of,
    chat,
    check_model_dir,
    default_device,
    generate,
    is_adapter,
    load_model_for_inference,
)
from .recipe import add_recipe_options, recipe_from

__all__ = ["MergeCheck", "MergeCheckFailed", "merge", "parse_args", "staged"]

logger = logging.getLogger(__name__)

CHECK_PROMPTS = (
    "What is 12 + 30?",
    "Name three primary colours.",
    "Write one sentence about the sea.",
)


class MergeCheckFailed(UserError):
    """The merged model does not reproduce the adapter model's outputs."""


def parse_args(argv: Sequence[str] | None, prog: str = "grpo merge") -> argparse.Namespace:
    """The merge command's options; the recipe (`args.recipe`) gives the run folder and the
    system prompt the check prompts are asked with."""
    parser = argparse.ArgumentParser(
        prog=prog,
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
        choices=["auto", "bfloat16", "float16", "float32"],
        help="dtype to load, merge and check in (default: the recipe's dtype, the one training "
        "ran in; auto: the base model's own)",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an existing output folder"
    )
    parser.add_argument("--no-check", action="store_true", help="skip the output comparison")
    parser.add_argument(
        "--max-new-tokens", type=int, default=16, help="tokens compared per check prompt"
    )
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    add_recipe_options(parser)
    args, overrides = parser.parse_known_args(argv)
    args.recipe = recipe_from(args, overrides, read_only=True)
    args.run_dir = args.run_dir or Path(args.recipe.training.output_dir)
    # The adapter was trained in the recipe's dtype: loaded in another (Unsloth's "auto" is
    # bfloat16 on a CPU that has it, after a float32 CPU run), its outputs are not the trained
    # model's, and the merge check compares two roundings of near-tied logits.
    args.dtype = args.dtype or args.recipe.model.dtype or "auto"
    args.output = args.output or args.run_dir / "merged"
    args.device = args.device or default_device()
    check_model_dir(args.run_dir)
    if args.output.exists() and not args.overwrite:
        raise UserError(f"{args.output} already exists; pass --overwrite to replace it")
    if is_adapter(args.run_dir):
        logger.info("merging the adapter in %s into %s", args.run_dir, base_model_of(args.run_dir))
    return args


@dataclass
class MergeCheck:
    """What the merged model must reproduce: the adapter model's greedy outputs on the check
    prompts (and the base model's, to tell a lost adapter from other differences)."""

    prompts: list[list[dict]]
    expected: list[str] | None
    base: list[str] | None
    max_new_tokens: int
    chat_template_kwargs: dict | None
    dtype: str
    device: str

    @classmethod
    def of(cls, model, tokenizer, args: argparse.Namespace) -> MergeCheck:
        """The outputs of the loaded adapter model (nothing to check with --no-check)."""
        system_prompt = args.recipe.script.system_prompt
        kwargs = args.recipe.training.chat_template_kwargs
        prompts = [chat(p, system_prompt) for p in CHECK_PROMPTS]
        expected = base = None
        if not args.no_check:
            greedy, n = Decoding(), args.max_new_tokens  # the check compares exact outputs
            expected = generate(model, tokenizer, prompts, n, greedy, kwargs)
            if is_adapter(args.run_dir):
                with model.disable_adapter():
                    base = generate(model, tokenizer, prompts, n, greedy, kwargs)
        n = args.max_new_tokens
        return cls(prompts, expected, base, n, kwargs, args.dtype, args.device)

    def verify(self, folder: Path, tokenizer) -> None:
        """Reload the saved folder from disk and compare its greedy outputs with the adapter's."""
        if self.expected is None:
            return
        reloaded = load_model_for_inference(folder, self.dtype, self.device)
        got = generate(
            reloaded, tokenizer, self.prompts, self.max_new_tokens, Decoding(),
            self.chat_template_kwargs,
        )  # fmt: skip
        mismatches = [i for i, (a, b) in enumerate(zip(self.expected, got, strict=True)) if a != b]
        if mismatches:
            i = mismatches[0]
            base = self.base
            like_base = base is not None and got == base and base != self.expected
            reason = (
                "it behaves like the base model (adapter lost)" if like_base else "outputs differ"
            )
            raise MergeCheckFailed(
                f"merge check failed on {len(mismatches)}/{len(self.prompts)} prompts: {reason}. "
                f"Prompt {CHECK_PROMPTS[i]!r}: adapter {self.expected[i]!r} vs merged {got[i]!r}"
            )
        if self.base is not None and self.base == self.expected:
            logger.warning(
                "the adapter does not change greedy outputs on the check prompts (undertrained?); "
                "the check cannot tell the merged model from the base model"
            )
        print(
            f"merge check passed: merged outputs equal the adapter's on {len(self.prompts)} prompts"
        )


@contextlib.contextmanager
def staged(output: Path) -> Iterator[Path]:
    """A folder to write the merged model into that becomes `output` only when the block ends
    without an error (a failed check leaves nothing behind)."""
    staging = output.with_name(output.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        yield staging
        if output.exists():
            shutil.rmtree(output)
        staging.rename(output)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def merge(argv: Sequence[str] | None = None) -> Path:
    """Merge the run's adapter into its base model, check the merged folder reproduces the
    adapter model's outputs, and return it (what `grpo merge` runs unless the project declares
    a merge script; `grpo eject merge` writes one that starts as this function)."""
    from . import backends

    args = parse_args(argv)  # RUN_DIR, --output, --dtype...; defaults from the recipe
    backend = backends.load(args.recipe.project.backend)
    # The base model with the adapter on it (PEFT's PeftModel; Unsloth's FastLanguageModel).
    model, tokenizer = backend.load_for_merge(str(args.run_dir), args.dtype, args.device)
    check = MergeCheck.of(model, tokenizer, args)  # the adapter's own outputs
    with staged(args.output) as folder:
        # PEFT: model.merge_and_unload(), then save_pretrained (Unsloth: save_pretrained_merged).
        backend.save_merged(model, tokenizer, str(folder))
        check.verify(folder, tokenizer)  # reloaded from disk: same outputs, or nothing is kept
    print(f"merged model written to {args.output}")
    return args.output


def command(argv: Sequence[str] | None = None) -> int:
    """`grpo merge`: the project's declared merge script's `merge`, else the kit's, with
    one-line errors."""
    from .project import load
    from .runner import run

    return run(lambda args: load().function("merge", merge)(args), argv)
