"""Tokenizer, model and LoRA settings for the Transformers + TRL + PEFT backend.

The model itself is loaded by `GRPOTrainer` from its name (as `trl grpo` does), so TRL picks the
device map for the distributed setup and can rebuild a reference model from the same path.
"""

from __future__ import annotations

import importlib.util
import logging

from .errors import UserError

logger = logging.getLogger(__name__)


class ModelError(UserError):
    """The model or tokenizer cannot be loaded as configured."""


def hub_hint(name: str, err: Exception) -> str:
    return (
        f"cannot load '{name}': {err}. If it is a Hub id, check the spelling and your network; a "
        "gated model (Llama, Gemma) needs its licence accepted on the Hub and `hf auth login` "
        "(or HF_TOKEN). For an offline run use --smoke or a local folder."
    )


def load_tokenizer(model_args, trust_remote_code: bool = False):
    """The model's tokenizer, ready for GRPO: a pad token, left padding and a chat template."""
    from transformers import AutoTokenizer

    name = model_args.model_name_or_path
    try:
        tokenizer = AutoTokenizer.from_pretrained(
            name, revision=model_args.model_revision, trust_remote_code=trust_remote_code
        )
    except (OSError, ValueError) as err:
        raise ModelError(hub_hint(name, err)) from err
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"  # GRPO generates from the right end of the prompt
    if not tokenizer.chat_template:
        raise ModelError(
            f"'{name}' has no chat template; the prompts are chat messages. Use an instruct/chat "
            "model, or give the tokenizer a chat_template"
        )
    return tokenizer


def model_loading(model_args, training_args):
    """Set how GRPOTrainer loads the model (as `trl grpo` does) and return the quantization
    config: 4-bit/8-bit (QLoRA) only on a CUDA GPU."""
    import torch
    from trl import get_quantization_config

    quantization = get_quantization_config(model_args)
    if quantization is not None and not torch.cuda.is_available():
        raise ModelError(
            "load_in_4bit/load_in_8bit need a CUDA GPU (bitsandbytes); set load_in_4bit: false "
            "in configs/grpo.yaml, or run with --smoke"
        )
    kwargs = {
        "revision": model_args.model_revision,
        "trust_remote_code": training_args.trust_remote_code,
        "attn_implementation": model_args.attn_implementation,
        "dtype": model_args.dtype,
    }
    kwargs.update(training_args.model_init_kwargs or {})
    training_args.model_init_kwargs = kwargs
    return quantization


def check_gpu_packages(training_args, model_args) -> None:
    """GPU-only packages the recipe needs, checked before anything slow happens."""
    if training_args.use_vllm and importlib.util.find_spec("vllm") is None:
        raise ModelError(
            "use_vllm is true but vLLM is not installed: pip install -e '.[gpu]' "
            "(or --use_vllm false for slower transformers generation)"
        )
    needs_bnb = (
        model_args.load_in_4bit or model_args.load_in_8bit or "8bit" in str(training_args.optim)
    )
    if needs_bnb and importlib.util.find_spec("bitsandbytes") is None:
        raise ModelError(
            "the recipe uses 4-bit weights or an 8-bit optimizer, which need bitsandbytes: "
            "pip install -e '.[gpu]'"
        )


def lora_config(model_args):
    """PEFT LoRA config from the recipe (`use_peft`, `lora_*`), or None for full fine-tuning."""
    from trl import get_peft_config

    return get_peft_config(model_args)
