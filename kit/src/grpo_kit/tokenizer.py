"""The model's tokenizer, ready for GRPO, and the one-line error for a model that will not load.

Shared by both backends: Unsloth loads the same tokenizer with the model, so the tokenizer and
its checks need not differ. transformers is imported inside the
function, so the Unsloth backend's `import unsloth` still comes first.
"""

from __future__ import annotations

from .errors import ModelError, hub_hint


def ready_for_generation(tokenizer):
    """A pad token (the EOS token when the model has none) and left padding: batched generation
    (GRPO's, evaluation's, inference's) continues each prompt from its right end."""
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    return tokenizer


def open_tokenizer(model_args, trust_remote_code: bool = False):
    """The model's tokenizer as it is (its name and revision from a ModelConfig), or one
    ModelError with the Hub hint."""
    from transformers import AutoTokenizer

    name = model_args.model_name_or_path
    try:
        return AutoTokenizer.from_pretrained(
            name, revision=model_args.model_revision, trust_remote_code=trust_remote_code
        )
    except (OSError, ValueError) as err:
        raise ModelError(hub_hint(name, err)) from err


def load_tokenizer(model_args, trust_remote_code: bool = False):
    """The model's tokenizer, ready for GRPO: a pad token, left padding and a chat template."""
    name = model_args.model_name_or_path
    tokenizer = open_tokenizer(model_args, trust_remote_code)
    ready_for_generation(tokenizer)
    if not tokenizer.chat_template:
        raise ModelError(
            f"'{name}' has no chat template; the prompts are chat messages. Use an instruct/chat "
            "model, or give the tokenizer a chat_template"
        )
    return tokenizer
