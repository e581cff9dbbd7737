"""Ask the trained model, your way: `grpo eject infer` copies this file into your package and
declares it in pyproject.toml (`[tool.grpo.scripts] infer = "<package>.infer"`); from then on
`grpo infer` (make infer) and `grpo smoke` call `infer(argv)` below, the one function the kit
calls (grpo_kit.project.InferScript). Without it they run the kit's own, the same steps
(grpo_kit.answering.infer).

    grpo infer --model outputs/<run>/merged --prompt "What is 7 * 6?"
    grpo infer --model outputs/<run> --prompts-file q.jsonl --output a.jsonl

Yours to edit; it uses only the kit's public API (`grpo docs api`). `--model` takes a merged
folder, a training output folder (the LoRA adapter on its base model) or a Hub id; the system prompt
and chat template arguments are the recipe's, so the model sees the format it was trained on.
Decoding defaults to the model card's sampling (`--greedy`, `--temperature`, `--top-p`, `--top-k`,
`--seed` change it). An agent task's model runs its tools for real, in the loop TRL trains with;
`--interactive` chats turn by turn.
"""

from __future__ import annotations

import sys

from grpo_kit import answering, backends
from grpo_kit.generation import chat, generate, load_model_for_inference, load_tokenizer_for
from grpo_kit.runner import run


def infer(argv=None) -> list:
    args = answering.parse_args(argv)  # --model, the prompts, decoding; defaults from the recipe
    tokenizer = load_tokenizer_for(args.model)
    backend = backends.load(args.recipe.project.backend)
    fast = None if args.agent else backend.fast_generator(args.model, args.recipe)  # Unsloth+vLLM
    # transformers' AutoModel (a merged folder), or the base model with PEFT's adapter on it.
    model = None if fast else load_model_for_inference(args.model, args.dtype, args.device)
    if args.interactive:
        return answering.interactive(model, tokenizer, args)
    if args.seed is not None:
        from transformers import set_seed

        set_seed(args.seed)
    prompts = answering.prompts_of(args)
    completions = []
    for batch in answering.batches(prompts, args.batch_size):
        if args.agent:  # tool calls parsed, run and answered until the final answer
            completions += answering.agent_answers(model, tokenizer, batch, args)
            continue
        conversations = [chat(prompt, args.system_prompt) for prompt in batch]
        if fast:
            completions += fast(conversations, tokenizer, args)
            continue
        # tokenizer.apply_chat_template(..., add_generation_prompt=True), then model.generate.
        completions += generate(
            model, tokenizer, conversations, args.max_new_tokens, args.decoding,
            args.chat_template_kwargs,
        )  # fmt: skip
    answering.show(prompts, completions, args.output)
    return completions


def main(argv=None) -> int:
    return run(infer, argv)


if __name__ == "__main__":
    sys.exit(main())
