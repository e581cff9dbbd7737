"""Merge the trained LoRA adapter into its base model and prove the merge worked, your way: `grpo
eject merge` copies this file into your package and declares it in pyproject.toml (`[tool.grpo.
scripts] merge = "<package>.merge"`); from then on `grpo merge` (make merge), `grpo smoke` and
`stages` call `merge(argv)` below, the one function the kit calls (grpo_kit.project.MergeScript).
Without it they run the kit's own, the same steps (grpo_kit.merging.merge).

    grpo merge [RUN_DIR] [--output DIR] [--config configs/grpo.yaml]

Yours to edit; it uses only the kit's public API (`grpo docs api`). It writes a standalone
model and tokenizer (default RUN_DIR/merged) that plain transformers (or vLLM) loads, then reloads
that folder and checks that its greedy outputs on a few prompts equal the adapter model's: a merged
model that silently behaves like the base model is a known failure. The folder only appears once the
check passed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from grpo_kit import backends, merging
from grpo_kit.runner import run


def merge(argv=None) -> Path:
    args = merging.parse_args(argv)  # RUN_DIR, --output, --dtype...; defaults from the recipe
    backend = backends.load(args.recipe.project.backend)
    # The base model with the adapter on it (PEFT's PeftModel; Unsloth's FastLanguageModel).
    model, tokenizer = backend.load_for_merge(str(args.run_dir), args.dtype, args.device)
    check = merging.MergeCheck.of(model, tokenizer, args)  # the adapter's own outputs
    with merging.staged(args.output) as folder:
        # PEFT: model.merge_and_unload(), then save_pretrained (Unsloth: save_pretrained_merged).
        backend.save_merged(model, tokenizer, str(folder))
        check.verify(folder, tokenizer)  # reloaded from disk: same outputs, or nothing is kept
    print(f"merged model written to {args.output}")
    return args.output


def main(argv=None) -> int:
    return run(merge, argv)


if __name__ == "__main__":
    sys.exit(main())
