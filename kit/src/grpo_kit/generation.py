"""Loading a trained model (merged folder, LoRA adapter or full model), how it decodes, and chat
generation.

Shared by the merge script (which compares adapter and merged outputs), `evaluate` and `infer`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .errors import UserError
from .project import Project
from .tokenizer import ready_for_generation


@dataclass(frozen=True)
class Decoding:
    """How completions are decoded: greedy (temperature 0), or sampled at `temperature` from the
    `top_p` nucleus of the `top_k` likeliest tokens (top_p 1, top_k 0: no cut).

    One description for every generation path (transformers' `generate`, vLLM's
    `SamplingParams`), so that evaluate, infer, merge and any generation loop decode alike. The
    default is the model card's recommended sampling (`[tool.grpo] recommended_sampling`), else
    greedy.
    """

    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0

    def __post_init__(self) -> None:
        if not self.temperature >= 0:  # also refuses nan
            raise UserError(f"temperature {self.temperature}: use 0 (greedy) or above")
        if not 0 < self.top_p <= 1:
            raise UserError(f"top_p {self.top_p}: use a value above 0 and at most 1")
        if self.top_k < 0:
            raise UserError(f"top_k {self.top_k}: use 0 (no top-k cut) or above")
        if self.greedy and (self.top_p < 1 or self.top_k):
            raise UserError(
                "top_p and top_k shape sampling: give a temperature above 0 with them "
                "(temperature 0 is greedy)"
            )

    @classmethod
    def recommended(cls, project: Project) -> Decoding | None:
        """The model card's recommended sampling for the recipe's chat mode, None if unknown."""
        found = project.recommended_sampling
        if found is None:
            return None
        try:
            return cls(**found)
        except (TypeError, UserError) as err:
            raise UserError(
                f"pyproject.toml [tool.grpo] recommended_sampling {found}: {err}"
            ) from err

    @classmethod
    def default(cls, project: Project) -> Decoding:
        """What evaluate and infer decode with unless told otherwise."""
        return cls.recommended(project) or cls()

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def changed(
        self, temperature: float | None = None, top_p: float | None = None, top_k: int | None = None
    ) -> Decoding:
        """This decoding with the given fields changed (None: kept); temperature 0 is greedy."""
        temperature = self.temperature if temperature is None else temperature
        if temperature == 0 and top_p is None and top_k is None:
            return Decoding()
        top_p = self.top_p if top_p is None else top_p
        return Decoding(temperature, top_p, self.top_k if top_k is None else top_k)

    def describe(self) -> str:
        if self.greedy:
            return "greedy"
        top_k = self.top_k or "off"
        return f"sampling at temperature {self.temperature:g}, top_p {self.top_p:g}, top_k {top_k}"

    def generate_kwargs(self) -> dict:
        """transformers' `generate` arguments. Every sampling field is explicit, so the
        checkpoint's generation_config (its own top_p, top_k) does not change the decoding."""
        if self.greedy:
            return {"do_sample": False}
        return {
            "do_sample": True,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "top_k": self.top_k,
        }

    def vllm_kwargs(self) -> dict:
        """vLLM `SamplingParams` arguments (temperature 0 is its greedy, top_k -1 its "off")."""
        return {"temperature": self.temperature, "top_p": self.top_p, "top_k": self.top_k or -1}


def add_decoding_options(parser, project: Project) -> None:
    """--greedy, --temperature, --top-p, --top-k, with this model's default in the help."""
    default = Decoding.default(project)
    why = (
        "the model card's recommendation ([tool.grpo] recommended_sampling)"
        if Decoding.recommended(project)
        else "the template knows no model-card sampling for it ([tool.grpo] recommended_sampling)"
    )
    group = parser.add_argument_group(
        "decoding", f"Default for this model: {default.describe()}, {why}."
    )
    group.add_argument("--greedy", action="store_true", help="decode greedily")
    group.add_argument(
        "--temperature", type=float, help=f"0 = greedy (default {default.temperature:g})"
    )
    group.add_argument("--top-p", type=float, help=f"nucleus sampling (default {default.top_p:g})")
    group.add_argument(
        "--top-k", type=int, help=f"sample from the K likeliest; 0 = off (default {default.top_k})"
    )


def decoding_from(args, project: Project) -> Decoding:
    """The decoding the options ask for: greedy, or the default with the given fields changed."""
    changes = {"temperature": args.temperature, "top_p": args.top_p, "top_k": args.top_k}
    if args.greedy:
        given = [f"--{name.replace('_', '-')}" for name, v in changes.items() if v is not None]
        if given:
            raise UserError(f"--greedy takes no {', '.join(given)} (they shape sampling)")
        return Decoding()
    return Decoding.default(project).changed(**changes)


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
    max_new_tokens: int,
    decoding: Decoding,
    chat_template_kwargs: dict | None = None,
) -> list[str]:
    """Completions for a batch of conversations, decoded as `decoding` says."""
    import torch

    texts = prompt_texts(tokenizer, conversations, chat_template_kwargs)
    inputs = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    inputs = inputs.to(model.device)
    with torch.inference_mode():
        output = model.generate(
            **inputs,
            max_new_tokens=max_new_tokens,
            pad_token_id=tokenizer.pad_token_id,
            **decoding.generate_kwargs(),
        )
    new_tokens = output[:, inputs["input_ids"].shape[1] :]
    return tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
