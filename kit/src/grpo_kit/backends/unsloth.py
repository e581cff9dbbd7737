"""Tokenizer, model and LoRA for the Unsloth backend (FastLanguageModel + TRL's GRPOTrainer).

`import unsloth` must run before trl, transformers and peft are imported, or its patches do not
apply; this module does it first, and commands load it (`backends.load`) before anything that
pulls those libraries in. On a GPU, Unsloth replaces TRL's trainer with `UnslothGRPOTrainer` (its
chunked loss, and vLLM sharing the model's weights when `fast_inference` is on). Without a GPU it
falls back to a CPU mode that trains with stock `GRPOTrainer` (used by `--smoke` and the tests);
GPU-only settings (`fast_inference`, 4-bit) are refused there with what to change.
"""

from __future__ import annotations

import os

__all__ = [
    "check_gpu_packages",
    "check_trainer",
    "fast_generator",
    "load_for_merge",
    "save_merged",
    "trainer_model",
]

os.environ.setdefault("UNSLOTH_VLLM_STANDBY", "1")  # before import: vLLM memory standby (GPU)
os.environ.setdefault("UNSLOTH_DISABLE_STATISTICS", "1")

import importlib.util  # noqa: E402
import logging  # noqa: E402

import unsloth  # noqa: E402, F401  (first: patches trl/transformers/peft on import)

from .. import startup  # noqa: E402

startup.quiet_nanobind_exit()  # triton's leak report at exit, in any process that loads it

from ..errors import ModelError, hub_hint  # noqa: E402
from ..tokenizer import ready_for_generation  # noqa: E402

logger = logging.getLogger(__name__)


def on_gpu() -> bool:
    import torch

    return torch.cuda.is_available()


def check_gpu_packages(recipe) -> None:
    """Settings that need a GPU, refused before any heavy work with what to change."""
    backend, model_args, training = recipe.backend, recipe.model, recipe.training
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise ModelError(
            "the Unsloth backend trains in one process (its multi-GPU GRPO is not mature); run "
            "`make train`, or bake the project with backend=transformers for several GPUs"
        )
    if on_gpu():
        if backend.fast_inference and importlib.util.find_spec("vllm") is None:
            raise ModelError(
                "fast_inference is true but vLLM is not installed: pip install -e '.[gpu]' (or "
                "set fast_inference: false for Unsloth's own generation)"
            )
        if model_args.lora_r > backend.max_lora_rank:
            raise ModelError(
                f"lora_r={model_args.lora_r} is above max_lora_rank={backend.max_lora_rank}; "
                "raise max_lora_rank (vLLM refuses larger adapters)"
            )
        return
    gpu_only = [
        name
        for name, on in (
            ("fast_inference: true", backend.fast_inference),
            ("load_in_4bit: true", model_args.load_in_4bit),
            ("load_in_8bit: true", model_args.load_in_8bit),
            ("use_vllm: true", training.use_vllm),
        )
        if on
    ]
    if gpu_only:
        raise ModelError(
            f"{', '.join(gpu_only)} need a CUDA GPU and none is visible; set them to false (or "
            "run with --smoke for an offline CPU check)"
        )


def _dtype(name: str | None):
    import torch

    return None if name in (None, "auto") else getattr(torch, name)


def trainer_model(recipe) -> dict:
    """GRPOTrainer's model arguments: an Unsloth PEFT model (LoRA is applied here)."""
    from unsloth import FastLanguageModel

    backend, model_args, training = recipe.backend, recipe.model, recipe.training
    if not model_args.use_peft:
        raise ModelError("the Unsloth backend trains LoRA adapters: set use_peft: true")
    name = model_args.model_name_or_path
    try:
        model, _ = FastLanguageModel.from_pretrained(
            model_name=name,
            max_seq_length=backend.max_seq_length,
            dtype=_dtype(model_args.dtype),
            load_in_4bit=model_args.load_in_4bit,
            fast_inference=backend.fast_inference,
            gpu_memory_utilization=backend.gpu_memory_utilization,
            max_lora_rank=backend.max_lora_rank,
            trust_remote_code=training.trust_remote_code,
            revision=model_args.model_revision,
        )
    except (OSError, ValueError) as err:
        raise ModelError(hub_hint(name, err)) from err
    # A string is one regex (e.g. only the language model of a multimodal model), a list names
    # module leaves; Unsloth takes both as they are (a regex wrapped in a list matches nothing).
    # Targets written for another family than the model loaded are replaced (one line says so).
    targets = unsloth_targets(model_args.lora_target_modules, model, name)
    model = FastLanguageModel.get_peft_model(
        model,
        r=model_args.lora_r,
        lora_alpha=model_args.lora_alpha,
        lora_dropout=model_args.lora_dropout,
        target_modules=targets,
        # Trained in full beside the adapters (e.g. lm_head, embed_tokens); saved with them.
        modules_to_save=model_args.lora_modules_to_save,
        use_rslora=model_args.use_rslora,
        use_gradient_checkpointing="unsloth" if training.gradient_checkpointing else False,
        random_state=training.seed,
    )
    return {"model": model}


def unsloth_targets(targets, model, name: str):
    """The recipe's LoRA targets for the model Unsloth loaded (backends/transformers.py
    `lora_targets`), with `all-linear` spelled out as the names of its linear layers (Unsloth
    takes names or one regex)."""
    from .transformers import ALL_LINEAR, linear_modules, lora_targets

    modules = linear_modules(model)
    chosen = lora_targets(targets, type(model).__name__, modules, name)
    if chosen != ALL_LINEAR or targets == ALL_LINEAR:
        return chosen
    leaves = {n.rsplit(".", 1)[-1] for n, linear in modules.items() if linear}
    return sorted(leaves - {"lm_head"})


def check_trainer(trainer) -> None:
    """On a GPU the trainer must be Unsloth's; a silent fallback to TRL's loses its memory
    savings (Unsloth only logs it when its patch fails)."""
    if on_gpu() and type(trainer).__name__ != "UnslothGRPOTrainer":
        raise ModelError(
            f"expected UnslothGRPOTrainer, got {type(trainer).__name__}: Unsloth could not patch "
            "this TRL version; check the installed versions with `make doctor`"
        )


def load_for_merge(run_dir: str, dtype: str, device: str | None = None):
    """The trained adapter on its base model, loaded the way it was trained (Unsloth places it
    on the GPU when there is one, so `device` is not needed)."""
    from unsloth import FastLanguageModel

    model, tokenizer = FastLanguageModel.from_pretrained(
        model_name=run_dir, dtype=_dtype(dtype), load_in_4bit=False
    )
    return model, ready_for_generation(tokenizer)  # batched generation in the merge check


def save_merged(model, tokenizer, out_dir: str) -> None:
    """Unsloth's 16-bit merge: a standalone model plain transformers can load."""
    model.save_pretrained_merged(out_dir, tokenizer, save_method="merged_16bit")


def fast_generator(model_dir, recipe):
    """vLLM generation through Unsloth's `fast_generate` with the saved LoRA, when the recipe
    trains with fast_inference and a GPU and vLLM are here; None means plain generation.

    Returns a function (conversations, tokenizer, answering options) -> completions, the
    conversations rendered with the options' chat_template_kwargs.
    """
    from pathlib import Path

    model_dir = Path(model_dir)
    backend = recipe.backend
    usable = backend.fast_inference and on_gpu() and importlib.util.find_spec("vllm")
    if not usable or not (model_dir / "adapter_config.json").is_file():
        return None
    from unsloth import FastLanguageModel
    from vllm import SamplingParams

    from ..generation import base_model_of, prompt_texts

    model, _ = FastLanguageModel.from_pretrained(
        model_name=base_model_of(model_dir),
        max_seq_length=backend.max_seq_length,
        load_in_4bit=bool(recipe.model.load_in_4bit),
        fast_inference=True,
        gpu_memory_utilization=backend.gpu_memory_utilization,
        max_lora_rank=backend.max_lora_rank,
    )
    lora = model.load_lora(str(model_dir))
    logger.info("generating with vLLM (Unsloth fast_generate) and the adapter in %s", model_dir)

    def generate(conversations: list[list[dict]], tokenizer, args) -> list[str]:
        texts = prompt_texts(tokenizer, conversations, args.chat_template_kwargs)
        params = SamplingParams(max_tokens=args.max_new_tokens, **args.decoding.vllm_kwargs())
        outputs = model.fast_generate(texts, sampling_params=params, lora_request=lora)
        return [output.outputs[0].text for output in outputs]

    return generate
