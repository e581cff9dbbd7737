"""Sampling k completions per prompt: the one home of "sample as training samples" for the signal
preflight (`preflight.py`), `grpo filter` and `grpo evaluate`.

`training_settings(recipe)` is transformers' `generate` arguments as GRPO samples: TRL's
GRPOConfig fields (temperature, top_p, top_k, min_p, repetition_penalty, max_completion_length)
with the recipe's `generation_kwargs` over them, as TRL passes them to generation.
`decoding_settings(decoding, n)` is the same for an evaluation's `Decoding`. A `Sampler` takes
conversations and k and returns k `Completion`s per conversation; `transformers_sampler`,
`vllm_sampler` and `agent_sampler` (an agent task's whole rollouts, tools really run) build one
from a loaded model and those settings.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .generation import Decoding, prompt_texts

logger = logging.getLogger(__name__)

__all__ = [
    "PREFLIGHT_PROMPTS",
    "Completion",
    "Sampler",
    "agent_sampler",
    "decoding_of",
    "decoding_settings",
    "describe",
    "texts",
    "training_settings",
    "transformers_sampler",
    "vllm_sampler",
]

PREFLIGHT_PROMPTS = 8  # prompts the signal preflight samples by default (x num_generations each)
# generate arguments that the samplers map themselves (the rest go to generate / SamplingParams)
_OWN = ("do_sample", "temperature", "top_p", "top_k", "min_p", "repetition_penalty")


@dataclass(frozen=True)
class Completion:
    """One sampled completion: its text (or an agent's messages), its token count and whether
    it was cut off at max_completion_length (no end-of-turn token)."""

    text: str | list[dict]
    tokens: list[int] | None = None  # the generated token ids (None: unknown, an agent rollout)
    clipped: bool | None = None


# (conversations, k) -> k completions per conversation
Sampler = Callable[[list[list[dict]], int], list[list[Completion]]]


def texts(group: Sequence[Completion | str | list]) -> list:
    """The texts (or an agent's messages) of sampled completions; plain texts pass as they are
    (a test's scripted sampler)."""
    return [c.text if isinstance(c, Completion) else c for c in group]


def training_settings(
    recipe, *, temperature: float | None = None, max_new_tokens: int | None = None
) -> dict:
    """transformers' generate arguments for sampling as GRPO samples (TRL's GRPOConfig fields,
    then the recipe's generation_kwargs over them); `temperature` and `max_new_tokens`, when
    given (a command's own options), win over both."""
    training = recipe.training
    settings = {
        "do_sample": True,
        "temperature": training.temperature,
        "top_p": training.top_p,
        "top_k": training.top_k or 0,
        "min_p": training.min_p,
        "repetition_penalty": training.repetition_penalty,
        "max_new_tokens": training.max_completion_length,
    }
    extra = training.generation_kwargs if isinstance(training.generation_kwargs, dict) else {}
    settings.update(extra)
    if temperature is not None:
        settings["temperature"] = temperature
    if max_new_tokens is not None:
        settings["max_new_tokens"] = max_new_tokens
    return settings


def decoding_settings(decoding: Decoding, max_new_tokens: int) -> dict:
    """transformers' generate arguments for a `Decoding` (evaluate's greedy or card sampling)."""
    return {**decoding.generate_kwargs(), "max_new_tokens": max_new_tokens}


def decoding_of(settings: dict) -> Decoding:
    """The `Decoding` of generate arguments (what an agent's tool loop samples with)."""
    if not settings.get("do_sample", True) or not settings.get("temperature"):
        return Decoding()
    top_p = settings.get("top_p")
    return Decoding(
        settings["temperature"], 1.0 if top_p is None else top_p, settings.get("top_k") or 0
    )


def describe(settings: dict) -> str:
    """How training samples, in words (the preflight's table says it)."""
    top_k = settings.get("top_k") or "off"
    return (
        f"sampled as training samples (temperature {settings['temperature']:g}, top_p "
        f"{settings['top_p']:g}, top_k {top_k})"
    )


def _batches(items: list, size: int | None, progress: str | None) -> list | object:
    batches = [items[i : i + size] for i in range(0, len(items), size)] if size else [items]
    if progress is None:
        return batches
    from rich.progress import track

    return track(batches, description=progress, transient=True)


def transformers_sampler(
    model,
    tokenizer,
    settings: dict,
    chat_template_kwargs: dict | None = None,
    *,
    batch_size: int | None = None,
    progress: str | None = None,
) -> Sampler:
    """k completions per prompt with transformers' generate (`num_return_sequences=k`), each cut
    at its first end-of-turn token, with its token ids and whether it was cut off;
    `batch_size` prompts per generate call (None: all), a progress bar named `progress`."""
    import torch

    stops = model.generation_config.eos_token_id
    stops = {stops} if isinstance(stops, int) else set(stops or [])
    stops.add(tokenizer.eos_token_id)
    pad = tokenizer.pad_token_id

    def sample(conversations: list[list[dict]], k: int) -> list[list[Completion]]:
        groups: list[list[Completion]] = []
        for batch in _batches(conversations, batch_size, progress):
            rendered = prompt_texts(tokenizer, batch, chat_template_kwargs)
            inputs = tokenizer(
                rendered, return_tensors="pt", padding=True, add_special_tokens=False
            )
            inputs = inputs.to(model.device)
            with torch.inference_mode():
                output = model.generate(
                    **inputs, num_return_sequences=k, pad_token_id=pad, **settings
                )
            found = []
            for ids in output[:, inputs["input_ids"].shape[1] :].tolist():
                ended = next((i for i, token in enumerate(ids) if token in stops), None)
                kept = ids if ended is None else ids[: ended + 1]
                text = tokenizer.decode(kept, skip_special_tokens=True)
                found.append(Completion(text, kept, ended is None))
            groups += [found[i : i + k] for i in range(0, len(found), k)]
        return groups

    return sample


def agent_sampler(
    model,
    tokenizer,
    settings: dict,
    rows: Sequence[dict],
    environments: dict,
    max_iterations: int | None,
    chat_template_kwargs: dict | None = None,
    *,
    batch_size: int | None = None,
    progress: str | None = None,
) -> Sampler:
    """An agent task: k whole rollouts per prompt through the loop TRL trains with
    (environments/episodes.py), each on a fresh instance of its row's environment (tools really
    run); `rows` are the prepared rows the prompts come from, `environments` the task's
    factories by name. Lengths and cut-offs are not counted."""
    from .environments.episodes import run_episodes

    decoding = decoding_of(settings)
    row_of = {json.dumps(row["prompt"]): row for row in rows}

    def sample(conversations: list[list[dict]], k: int) -> list[list[Completion]]:
        groups: list[list[Completion]] = []
        for batch in _batches(conversations, batch_size, progress):
            chosen = [row_of[json.dumps(c)] for c in batch for _ in range(k)]
            rollouts = run_episodes(
                model, tokenizer, [row["prompt"] for row in chosen],
                [environments[row["environment"]]() for row in chosen], chosen, decoding,
                settings["max_new_tokens"], max_iterations, chat_template_kwargs,
            )  # fmt: skip
            found = [Completion(rollout) for rollout in rollouts]
            groups += [found[i : i + k] for i in range(0, len(found), k)]
        return groups

    return sample


def vllm_sampler(llm, tokenizer, settings: dict, chat_template_kwargs: dict | None = None):
    """k completions per prompt with vLLM (`n=k`; vLLM shows its own progress bar); the
    generation_kwargs beyond transformers' sampling fields go to SamplingParams, as TRL passes
    them with vLLM."""
    from vllm import SamplingParams

    extra = {k: v for k, v in settings.items() if k not in (*_OWN, "max_new_tokens")}
    known = getattr(SamplingParams, "__struct_fields__", None)  # a msgspec Struct's fields
    if known is not None and set(extra) - set(known):
        logger.warning(
            "generation_kwargs %s are not vLLM SamplingParams fields: sampled without them",
            sorted(set(extra) - set(known)),
        )
        extra = {k: v for k, v in extra.items() if k in known}
    top_k = settings.get("top_k") or 0

    def sample(conversations: list[list[dict]], k: int) -> list[list[Completion]]:
        params = SamplingParams(
            n=k,
            temperature=settings["temperature"],
            top_p=settings["top_p"],
            top_k=top_k if top_k > 0 else -1,  # vLLM: -1 is "off"
            min_p=settings.get("min_p") or 0.0,
            repetition_penalty=settings.get("repetition_penalty") or 1.0,
            max_tokens=settings["max_new_tokens"],
            **extra,
        )
        outputs = llm.generate(prompt_texts(tokenizer, conversations, chat_template_kwargs), params)
        return [
            [Completion(c.text, list(c.token_ids), c.finish_reason == "length") for c in o.outputs]
            for o in outputs
        ]

    return sample
