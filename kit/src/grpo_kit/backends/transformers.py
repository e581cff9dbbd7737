"""Model and LoRA for the Transformers + TRL + PEFT backend.

The model itself is loaded by `GRPOTrainer` from its name (as `trl grpo` does), so TRL picks the
device map for the distributed setup and can rebuild a reference model from the same path. The
functions here are the backend's interface (the train and merge scripts and `doctor` call them
through `backends.load`); the Unsloth backend provides the same ones.
"""

from __future__ import annotations

import importlib.util
import logging

from ..errors import ModelError

logger = logging.getLogger(__name__)


def check_gpu_packages(recipe) -> None:
    """GPU-only settings and packages the recipe needs, checked before anything slow happens."""
    import torch

    training, model_args = recipe.training, recipe.model
    quantized = model_args.load_in_4bit or model_args.load_in_8bit
    if quantized and not torch.cuda.is_available():
        raise ModelError(
            "load_in_4bit/load_in_8bit need a CUDA GPU (bitsandbytes); set load_in_4bit: false "
            "in configs/grpo.yaml, or run with --smoke"
        )
    if training.use_vllm and importlib.util.find_spec("vllm") is None:
        raise ModelError(
            "use_vllm is true but vLLM is not installed: pip install -e '.[gpu]' "
            "(or --use_vllm false for slower transformers generation)"
        )
    if (quantized or "8bit" in str(training.optim)) and importlib.util.find_spec(
        "bitsandbytes"
    ) is None:
        raise ModelError(
            "the recipe uses 4-bit weights or an 8-bit optimizer, which need bitsandbytes: "
            "pip install -e '.[gpu]'"
        )


def trainer_model(recipe) -> dict:
    """GRPOTrainer's model arguments: the model name (TRL loads it with the recipe's dtype and
    quantization, as `trl grpo` does) and the LoRA config (None: full fine-tuning)."""
    from trl import get_peft_config, get_quantization_config

    model_args, training = recipe.model, recipe.training
    kwargs = {
        "revision": model_args.model_revision,
        "trust_remote_code": training.trust_remote_code,
        "attn_implementation": model_args.attn_implementation,
        "dtype": model_args.dtype,
    }
    kwargs.update(training.model_init_kwargs or {})
    training.model_init_kwargs = kwargs
    return {
        "model": model_args.model_name_or_path,
        "peft_config": get_peft_config(model_args),
        "quantization_config": get_quantization_config(model_args),
    }


def check_trainer(trainer) -> None:
    """Nothing to check for stock TRL."""


def load_for_merge(run_dir: str, dtype: str, device: str | None = None):
    """(model, tokenizer) of a training output: base + LoRA adapter, or the full model."""
    from pathlib import Path

    from ..generation import load_model_for_inference, load_tokenizer_for

    path = Path(run_dir)
    return load_model_for_inference(path, dtype, device), load_tokenizer_for(path)


def save_merged(model, tokenizer, out_dir: str) -> None:
    """Merge the adapter into the base weights (PEFT) and save a standalone model."""
    if hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)


def fast_generator(model_dir, recipe):
    """This backend generates with transformers (`generation.generate`); for vLLM-speed
    inference serve the merged folder with `vllm serve`. None means plain generation (see the
    Unsloth backend's for the other answer)."""
    return None
