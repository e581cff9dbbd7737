"""Loading a trained model (merged folder, LoRA adapter or full model) and chat generation.

Shared by `merge` (which compares adapter and merged outputs) and `infer`.
"""

from __future__ import annotations

import json
from pathlib import Path

from .errors import UserError
from .tokenizer import ready_for_generation


def is_adapter(path: Path) -> bool:
    return (path / "adapter_config.json").is_file()


def base_model_of(adapter_dir: Path) -> str:
    config = json.loads((adapter_dir / "adapter_config.json").read_text(encoding="utf-8"))
    base = config.get("base_model_name_or_path")
    if not base:
        raise UserError(f"{adapter_dir}/adapter_config.json names no base_model_name_or_path")
    return base


def check_model_dir(path: Path) -> None:
    if not path.is_dir():
        raise UserError(f"{path}: no such folder (train first, or pass the run's output_dir)")
    if not is_adapter(path) and not (path / "config.json").is_file():
        raise UserError(f"{path}: holds neither a LoRA adapter nor a model (no config.json)")


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def load_tokenizer_for(path: Path):
    from transformers import AutoTokenizer

    if not path.exists() or (path / "tokenizer_config.json").is_file():  # a Hub id
        source = str(path)
    else:
        source = base_model_of(path)
    return ready_for_generation(AutoTokenizer.from_pretrained(source))


def model_class(name_or_path: str):
    """The class TRL trains a checkpoint as: the first of its `config.architectures` (TRL's
    `create_model_from_path`). A LoRA adapter is named after that class's modules, so it must be
    loaded onto the same class: AutoModelForCausalLM gives Qwen3.5's vision-language checkpoint
    the text-only Qwen3_5ForCausalLM, whose module names the adapter does not match."""
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM

    architectures = AutoConfig.from_pretrained(name_or_path).architectures or []
    found = getattr(transformers, architectures[0], None) if architectures else None
    return found or AutoModelForCausalLM


def load_model_for_inference(path: Path, dtype: str = "auto", device: str | None = None):
    """A model ready for generation: a merged/full model folder, or base + LoRA adapter."""
    import torch

    if path.exists():
        check_model_dir(path)
    torch_dtype = "auto" if dtype == "auto" else getattr(torch, dtype)
    device = device or default_device()
    try:
        if is_adapter(path):
            from peft import PeftModel

            base_name = base_model_of(path)
            base = model_class(base_name).from_pretrained(base_name, dtype=torch_dtype)
            model = PeftModel.from_pretrained(base, str(path))
        else:
            model = model_class(str(path)).from_pretrained(str(path), dtype=torch_dtype)
    except OSError as err:
        raise UserError(f"cannot load the model '{path}' (a folder or Hub id): {err}") from err
    return model.to(device).eval()


def chat(prompt: str, system_prompt: str = "") -> list[dict]:
    """One conversation: optional system message, then the user's prompt."""
    messages = [{"role": "user", "content": prompt}]
    if system_prompt:
        messages.insert(0, {"role": "system", "content": system_prompt})
    return messages


def prompt_texts(
    tokenizer, conversations: list[list[dict]], chat_template_kwargs: dict | None = None
) -> list[str]:
    """The conversations rendered by the chat template, ready for the assistant's turn, with the
    recipe's `chat_template_kwargs` (e.g. enable_thinking), as TRL renders training prompts."""
    kwargs = chat_template_kwargs or {}
    return [
        tokenizer.apply_chat_template(c, add_generation_prompt=True, tokenize=False, **kwargs)
        for c in conversations
    ]


def generate(
    model,
    tokenizer,
    conversations: list[list[dict]],
    max_new_tokens: int = 256,
    temperature: float = 0.0,
    chat_template_kwargs: dict | None = None,
) -> list[str]:
    """Completions for a batch of conversations; greedy when temperature is 0."""
    import torch

    texts = prompt_texts(tokenizer, conversations, chat_template_kwargs)
    inputs = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    inputs = inputs.to(model.device)
    sampling = (
        {"do_sample": True, "temperature": temperature} if temperature > 0 else {"do_sample": False}
    )
    with torch.inference_mode():
        output = model.generate(
            **inputs, max_new_tokens=max_new_tokens, pad_token_id=tokenizer.pad_token_id, **sampling
        )
    new_tokens = output[:, inputs["input_ids"].shape[1] :]
    return tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
