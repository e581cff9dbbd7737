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

__all__ = [
    "check_gpu_packages",
    "check_trainer",
    "fast_generator",
    "load_for_merge",
    "save_merged",
    "trainer_model",
]

logger = logging.getLogger(__name__)


def check_gpu_packages(recipe, recipe_file: str = "configs/grpo.yaml") -> None:
    """GPU-only settings and packages the recipe needs, checked before anything slow happens
    (GRPO's recipe, or the reward model's: `recipe_file` is where the user changes them)."""
    import torch

    training, model_args = recipe.training, recipe.model
    quantized = model_args.load_in_4bit or model_args.load_in_8bit
    if quantized and not torch.cuda.is_available():
        raise ModelError(
            "load_in_4bit/load_in_8bit need a CUDA GPU (bitsandbytes); set load_in_4bit: false "
            f"in {recipe_file}, or run with --smoke"
        )
    if getattr(training, "use_vllm", False) and importlib.util.find_spec("vllm") is None:
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


def set_model_init_kwargs(model_args, training) -> dict:
    """How TRL loads the model from its name (GRPOTrainer, RewardTrainer): the recipe's revision,
    remote code, attention and dtype, with its own model_init_kwargs over them; set on
    `training` (TRL reads them there) and returned."""
    kwargs = {
        "revision": model_args.model_revision,
        "trust_remote_code": training.trust_remote_code,
        "attn_implementation": model_args.attn_implementation,
        "dtype": model_args.dtype,
    }
    kwargs.update(training.model_init_kwargs or {})
    training.model_init_kwargs = kwargs
    return kwargs


def trainer_model(recipe) -> dict:
    """GRPOTrainer's model arguments: the model name (TRL loads it with the recipe's dtype and
    quantization, as `trl grpo` does) and the LoRA config (None: full fine-tuning)."""
    from trl import get_peft_config, get_quantization_config

    model_args, training = recipe.model, recipe.training
    set_model_init_kwargs(model_args, training)
    peft_config = get_peft_config(model_args)
    if peft_config is not None:
        name = model_args.model_name_or_path
        found = model_modules(name, training.trust_remote_code, model_args.model_revision)
        if found is not None:
            peft_config.target_modules = lora_targets(peft_config.target_modules, *found, name)
    return {
        "model": model_args.model_name_or_path,
        "peft_config": peft_config,
        "quantization_config": get_quantization_config(model_args),
    }


# --- LoRA targets for the model actually loaded ---------------------------------------------------

ALL_LINEAR = "all-linear"  # PEFT's shorthand: every linear layer but the output head
# Submodules of a vision-language (or audio) checkpoint that LoRA must not reach.
TOWERS = ("visual", "vision_tower", "vision_model", "audio_tower", "multi_modal_projector",
          "embed_vision", "embed_audio")  # fmt: skip
LANGUAGE_MODEL = "language_model"


def model_modules(name: str, trust_remote_code: bool = False, revision: str | None = None):
    """(class name, {module name: is nn.Linear}) of the model `name` as TRL will load it (the
    class of its `config.architectures`), built on the meta device: no weights are read. None
    when its config cannot be read here (TRL's own load then says why)."""
    from accelerate import init_empty_weights
    from transformers import AutoConfig

    from ..generation import class_for_config

    try:
        config = AutoConfig.from_pretrained(
            name, trust_remote_code=trust_remote_code, revision=revision
        )
        cls = class_for_config(config)
        with init_empty_weights():
            model = cls._from_config(config)
    except Exception as err:  # noqa: BLE001 - a check that cannot be made leaves the recipe as is
        logger.debug("LoRA targets: cannot build %s on the meta device (%s)", name, err)
        return None
    return type(model).__name__, linear_modules(model)


def linear_modules(model) -> dict[str, bool]:
    """{module name: whether it is a linear layer} of a loaded (or meta) model."""
    import torch

    return {n: isinstance(m, torch.nn.Linear) for n, m in model.named_modules() if n}


def matches(targets, module: str) -> bool:
    """Whether LoRA `targets` (a regex string, or module name suffixes) select `module`, as PEFT
    selects them."""
    import re

    if targets is None or targets == ALL_LINEAR:
        return True
    if isinstance(targets, str):
        return re.fullmatch(targets, module) is not None
    return any(module == t or module.endswith(f".{t}") for t in targets)


def fits(targets, modules: dict[str, bool]) -> bool:
    """Whether LoRA targets were written for this model: a regex selects one of its linear
    layers; each name of a list selects one (names of another family's layers, e.g. Phi's
    qkv_proj on Qwen, mean the list is that family's); neither may select a layer of a vision
    or audio tower."""
    if targets is None or targets == ALL_LINEAR:
        return True
    linear = [name for name, is_linear in modules.items() if is_linear]
    if any(matches(targets, name) for name in linear if in_tower(name)):
        return False  # a vision or audio tower is never adapted
    if isinstance(targets, str):
        return any(matches(targets, name) for name in linear)
    return all(any(matches([target], name) for name in linear) for target in targets)


def in_tower(name: str) -> bool:
    return any(part in TOWERS for part in name.split("."))


def fallback_targets(modules: dict[str, bool]):
    """LoRA targets for a model the recipe's pattern does not fit: `all-linear` for a text
    model; for a multimodal one, every linear layer of its language model (a regex, as the
    catalog writes them), never the vision or audio towers."""
    import re

    towered = any(in_tower(name) for name in modules)
    if not towered:
        return ALL_LINEAR
    leaves = sorted(
        {name.rsplit(".", 1)[-1] for name, linear in modules.items()
         if linear and f"{LANGUAGE_MODEL}." in f"{name}." and not name.endswith("lm_head")}
    )  # fmt: skip
    if not leaves:
        return ALL_LINEAR
    return rf".*{LANGUAGE_MODEL}.*\.({'|'.join(re.escape(leaf) for leaf in leaves)})"


def lora_targets(targets, class_name: str, modules: dict[str, bool], name: str):
    """The recipe's LoRA targets when they fit the model being loaded (`fits`), else
    `fallback_targets`, said in one line (the recipe names the targets of the model the project
    was generated for; `--model_name_or_path` may load another family)."""
    if fits(targets, modules):
        return targets
    chosen = fallback_targets(modules)
    logger.warning(
        "LoRA targets: the recipe's lora_target_modules %s select no layer of %s (%s); using %s "
        "(set lora_target_modules in configs/local.yaml to choose)",
        targets if isinstance(targets, str) else list(targets), name, class_name, chosen,
    )  # fmt: skip
    return chosen


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
