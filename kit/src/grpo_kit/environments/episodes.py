"""Agent rollouts outside training (evaluate, infer): the loop TRL's GRPOTrainer runs.

Each turn renders the conversation so far with the environment's tools in the chat template TRL
trains with (its prefix-preserving `_training` variant when the model's own template is not),
generates, parses the turn with TRL's `parse_response` (the same parser and response template as
training), runs the turn's tool calls with `execute_turn` (TRL's order, async tools together,
its exact error results), and goes on until a turn makes no call, `max_iterations`
tool-calling turns were made, or the exchange (turns and tool results, counted in tokens)
reaches `max_new_tokens`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from . import execute_turn, tool_dict, tool_methods


def tools_chat_template(tokenizer) -> str | None:
    """The chat template TRL trains tool calls with for this tokenizer: None (its own) when that
    is prefix-preserving, else TRL's training variant (what `GRPOTrainer` swaps in)."""
    from trl.chat_template_utils import (
        get_training_chat_template,
        is_chat_template_prefix_preserving,
    )

    if is_chat_template_prefix_preserving(tokenizer):
        return None
    return get_training_chat_template(tokenizer)


def chat_kwargs(tokenizer, chat_template_kwargs: dict | None = None) -> dict:
    """`apply_chat_template` arguments for an agent's conversation: the recipe's
    chat_template_kwargs, and the chat template TRL trains tool calls with (`tools_chat_template`)
    where it is not the tokenizer's own."""
    template = tools_chat_template(tokenizer)
    return {**(chat_template_kwargs or {}), **({"chat_template": template} if template else {})}


def assistant_turn(tokenizer, messages: list[dict], turn: dict, tools, kwargs) -> tuple[str, str]:
    """(the conversation rendered up to the generation prompt, the text the model writes for
    `turn` after it), in the template `kwargs` name (`chat_kwargs`), which extends its prompts."""
    before = tokenizer.apply_chat_template(
        messages, tools=tools, add_generation_prompt=True, tokenize=False, **kwargs
    )
    after = tokenizer.apply_chat_template([*messages, turn], tools=tools, tokenize=False, **kwargs)
    return before, after[len(before) :]


def ready_for_tools(tokenizer):
    """The tokenizer with the response template TRL parses tool calls with (set where missing)."""
    from trl.chat_template_utils import add_response_schema

    if getattr(tokenizer, "response_template", None) is None:
        add_response_schema(tokenizer)
    return tokenizer


def run_episodes(
    model,
    tokenizer,
    prompts: Sequence[list[dict]],
    environments: Sequence[object],
    rows: Sequence[dict],
    decoding,
    max_new_tokens: int,
    max_iterations: int | None,
    chat_template_kwargs: dict | None = None,
    on_message: Callable[[int, dict], None] | None = None,
) -> list[list[dict]]:
    """One rollout per prompt, on its own environment instance (reset with its row first): the
    list of assistant and tool messages after the prompt, as TRL hands them to the rewards.
    `on_message(index, message)` sees each message as it comes (interactive chat)."""
    import torch
    from trl.chat_template_utils import parse_response

    ready_for_tools(tokenizer)
    kwargs = chat_kwargs(tokenizer, chat_template_kwargs)
    for environment, row in zip(environments, rows, strict=True):
        environment.reset(**row)
    tools = [tool_methods(e) for e in environments]
    calls = [tool_dict(e) for e in environments]
    rollouts: list[list[dict]] = [[] for _ in prompts]
    used = [0] * len(prompts)
    active = list(range(len(prompts)))
    turn = 0
    eos = {tokenizer.eos_token_id, tokenizer.pad_token_id} - {None}
    while active:
        texts = [
            tokenizer.apply_chat_template(
                list(prompts[i]) + rollouts[i],
                tools=tools[i],
                add_generation_prompt=True,
                tokenize=False,
                **kwargs,
            )
            for i in active
        ]
        inputs = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        inputs = inputs.to(model.device)
        budget = max(1, max(max_new_tokens - used[i] for i in active))
        with torch.inference_mode():
            output = model.generate(
                **inputs,
                max_new_tokens=budget,
                pad_token_id=tokenizer.pad_token_id,
                **decoding.generate_kwargs(),
            )
        width = inputs["input_ids"].shape[1]
        still = []
        for row, i in enumerate(active):
            ids = output[row, width:].tolist()[: max(1, max_new_tokens - used[i])]
            ends = [k for k, token in enumerate(ids) if token in eos]
            ids = ids[: ends[0] + 1] if ends else ids
            mask = inputs["attention_mask"][row].tolist()
            prefix = [t for t, m in zip(inputs["input_ids"][row].tolist(), mask, strict=True) if m]
            message = parse_response(tokenizer, ids, prefix=prefix, tools=tools[i])
            used[i] += len(ids)
            rollouts[i].append(message)
            if on_message:
                on_message(i, message)
            wants_tools = bool(message.get("tool_calls"))
            capped = max_iterations is not None and turn >= max_iterations
            if not wants_tools or capped or used[i] >= max_new_tokens:
                continue
            for result in execute_turn(calls[i], message["tool_calls"]):
                used[i] += len(
                    tokenizer(str(result["content"]), add_special_tokens=False)["input_ids"]
                )
                rollouts[i].append(result)
                if on_message:
                    on_message(i, result)
            if used[i] < max_new_tokens:
                still.append(i)
        active = still
        turn += 1
    return rollouts
