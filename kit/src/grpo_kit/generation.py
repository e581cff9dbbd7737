"""Loading a trained model (merged folder, LoRA adapter or full model), how it decodes, and chat
generation.

Shared by the merge script (which compares adapter and merged outputs), `evaluate` and `infer`.
"""

from __future__ import annotations

import functools
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from .errors import UserError
from .project import Project
from .tokenizer import ready_for_generation

__all__ = [
    "Decoding",
    "base_model_of",
    "chat",
    "check_model",
    "check_model_dir",
    "default_device",
    "generate",
    "is_adapter",
    "load_model_for_inference",
    "load_tokenizer_for",
    "model_class",
    "prompt_texts",
    "stands_for",
]

logger = logging.getLogger(__name__)
RUN_RECORD = "run_record.json"  # at the top of a run's folder (callbacks/run_record.py writes it)
MODEL_HINT = (
    "name a run's output_dir, one of its checkpoint-N folders, its merged folder or a Hub id: "
    "make evaluate/infer/merge RUN_DIR=outputs/<run> (grpo evaluate/infer --model PATH)"
)
CARD_SOURCE = "the model card's recommendation ([tool.grpo] recommended_sampling)"
NO_CARD = "the template knows no model-card sampling for it ([tool.grpo] recommended_sampling)"
# The marker in a model folder the kit built from another source (offline/real_model.py: the
# real model, from a PyPI wheel): {"hub_id": the Hub model it stands for, and the source}.
MODEL_SOURCE = "grpo_kit_source.json"


@dataclass(frozen=True)
class Decoding:
    """How completions are decoded: greedy (temperature 0), or sampled at `temperature` from the
    `top_p` nucleus of the `top_k` likeliest tokens (top_p 1, top_k 0: no cut).

    One description for every generation path (transformers' `generate`, vLLM's
    `SamplingParams`), so that evaluate, infer, merge and any generation loop decode alike. The
    default (`for_model`) depends on the model: the project's own model (or one trained from it)
    decodes with the model card's recommended sampling (`[tool.grpo] recommended_sampling`);
    another model with the sampling its own generation_config.json asks for; else greedily.
    `source` says where the values came from (reports name it; it takes no part in equality).
    """

    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    source: str = field(default="", compare=False)

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
            return cls(**found, source=CARD_SOURCE)
        except (TypeError, UserError) as err:
            raise UserError(
                f"pyproject.toml [tool.grpo] recommended_sampling {found}: {err}"
            ) from err

    @classmethod
    def default(cls, project: Project) -> Decoding:
        """What evaluate and infer decode the project's own model with unless told otherwise."""
        return cls.recommended(project) or cls(source=f"greedy: {NO_CARD}")

    @classmethod
    def for_model(cls, project: Project, model: str | Path | None) -> Decoding:
        """What evaluate and infer decode `model` with unless told otherwise (None: the project's
        model). The card's sampling belongs to the project's model: a model trained from it
        (its run record or adapter says so) keeps it, and so does a folder the kit built that
        stands for it (`stands_for`: the real model built offline); any other model decodes with
        the sampling its generation_config.json asks for (do_sample), else greedily."""
        origin = origin_of(model) if model is not None else project.model
        hub_id = stands_for(origin)  # a folder the kit built: the Hub model it stands for
        if model is None or (hub_id or origin) == project.model:
            return cls.default(project)
        for source in dict.fromkeys([str(model), origin]):
            own = cls.from_generation_config(source)
            if own is not None:
                return own
        named = f"{hub_id} (built in {origin})" if hub_id else origin
        return cls(source=f"greedy: {named} is not the project's model ({project.model}) and "
                   "its generation_config.json asks for no sampling")  # fmt: skip

    @classmethod
    def from_generation_config(cls, name: str) -> Decoding | None:
        """The sampling a model's generation_config.json asks for (do_sample: true), None when
        it asks for none or cannot be read here."""
        path = Path(name) / "generation_config.json"
        if Path(name).is_dir():
            if not path.is_file():
                return None
            values = json.loads(path.read_text(encoding="utf-8"))
        else:  # a Hub id: its cached generation config, if any (never a download)
            try:
                from transformers import GenerationConfig

                values = GenerationConfig.from_pretrained(name, local_files_only=True).to_dict()
            except (OSError, ValueError):
                return None
        if not values.get("do_sample"):
            return None
        try:
            return cls(
                float(values.get("temperature") or 1.0),
                float(values.get("top_p") or 1.0),
                int(values.get("top_k") or 0),
                source=f"{name}'s generation_config.json",
            )
        except (TypeError, ValueError, UserError):
            return None

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def changed(
        self, temperature: float | None = None, top_p: float | None = None, top_k: int | None = None
    ) -> Decoding:
        """This decoding with the given fields changed (None: kept); temperature 0 is greedy."""
        if temperature is None and top_p is None and top_k is None:
            return self
        temperature = self.temperature if temperature is None else temperature
        if temperature == 0 and top_p is None and top_k is None:
            return Decoding(source="greedy: --temperature 0")
        top_p = self.top_p if top_p is None else top_p
        top_k = self.top_k if top_k is None else top_k
        return Decoding(temperature, top_p, top_k, source="your decoding options")

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
    """--greedy, --temperature, --top-p, --top-k, with the project's model's default in the help
    (another model's comes from its own generation_config.json: `Decoding.for_model`)."""
    default = Decoding.default(project)
    why = CARD_SOURCE if Decoding.recommended(project) else NO_CARD
    group = parser.add_argument_group(
        "decoding",
        f"Default for {project.model or 'the project model'} and models trained from it: "
        f"{default.describe()}, {why}. Another model: the sampling its generation_config.json "
        "asks for, else greedy.",
    )
    group.add_argument("--greedy", action="store_true", help="decode greedily")
    group.add_argument(
        "--temperature", type=float, help=f"0 = greedy (default {default.temperature:g})"
    )
    group.add_argument("--top-p", type=float, help=f"nucleus sampling (default {default.top_p:g})")
    group.add_argument(
        "--top-k", type=int, help=f"sample from the K likeliest; 0 = off (default {default.top_k})"
    )


def decoding_from(args, project: Project, model: str | Path | None = None) -> Decoding:
    """The decoding the options ask for: greedy, or the default for `model` (None: the
    project's model) with the given fields changed."""
    changes = {"temperature": args.temperature, "top_p": args.top_p, "top_k": args.top_k}
    if args.greedy:
        given = [f"--{name.replace('_', '-')}" for name, v in changes.items() if v is not None]
        if given:
            raise UserError(f"--greedy takes no {', '.join(given)} (they shape sampling)")
        return Decoding(source="greedy: --greedy")
    return Decoding.for_model(project, model).changed(**changes)


# --- where a trained model comes from -------------------------------------------------------------


def run_record_of(path: str | Path) -> dict | None:
    """The run record of a training output: in the folder itself, or, for one of its
    checkpoint-N folders or its merged folder, in the run's folder above it."""
    path = Path(path)
    for folder in (path, path.parent):
        record = folder / RUN_RECORD
        if path.is_dir() and record.is_file():
            try:
                return json.loads(record.read_text(encoding="utf-8"))
            except ValueError:
                return None
    return None


def trained_from(path: str | Path) -> str | None:
    """The model a training output started from: its run record's model_name_or_path, else its
    adapter's base model; None for a model that is no training output (a Hub id, a folder)."""
    record = run_record_of(path)
    model = (record or {}).get("recipe", {}).get("model_name_or_path")
    if model:
        return str(model)
    if is_adapter(Path(path)):
        return base_model_of(Path(path))
    return None


def origin_of(model: str | Path) -> str:
    """The model a chain of training outputs started from (a warm-up's merged folder, a stage,
    a run): the first one that is no training output."""
    current, seen = str(model), set()
    while current not in seen:
        seen.add(current)
        parent = trained_from(current)
        if parent is None:
            return current
        current = parent
    return current


def stands_for(path: str | Path) -> str | None:
    """The Hub model a folder the kit built stands for, however it was obtained: the `hub_id` of
    its `grpo_kit_source.json` (the real model built offline from a PyPI wheel writes it); None
    for any other model (a Hub id, a folder without the marker, an unreadable marker)."""
    marker = Path(path) / MODEL_SOURCE
    if not marker.is_file():
        return None
    try:
        hub_id = json.loads(marker.read_text(encoding="utf-8")).get("hub_id")
    except (OSError, ValueError, AttributeError):
        return None
    return hub_id if isinstance(hub_id, str) and hub_id else None


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
        raise UserError(
            f"{path}: no such folder: train first (make train, or make try for a CPU trial), or "
            f"{MODEL_HINT}"
        )
    if not is_adapter(path) and not (path / "config.json").is_file():
        raise UserError(
            f"{path}: holds neither a LoRA adapter nor a model (no adapter_config.json or "
            f"config.json); {MODEL_HINT}"
        )


def names_a_folder(name: str | Path) -> bool:
    """Whether a model name is meant as a folder rather than a Hub id (`name` or
    `namespace/name`): it exists, is absolute or relative (`./`, `~`), has more than two parts
    (outputs/run/merged), or its first part is a folder here (outputs/run)."""
    text = str(name)
    path = Path(text).expanduser()
    if path.exists() or path.is_absolute() or text.startswith((".", "~")) or "\\" in text:
        return True
    return len(path.parts) > 2 or (len(path.parts) == 2 and Path(path.parts[0]).is_dir())


def check_model(name: str | Path, option: str = "--model") -> None:
    """A model named as a folder that holds none: a one-line UserError naming the fix (a run
    not merged yet: `make merge`), never the Hub's `Repo id must be in the form ...`. A Hub id
    passes (the Hub, or its offline cache, answers for it)."""
    if not names_a_folder(name):
        return
    path = Path(str(name)).expanduser()
    if path.name == "merged" and not path.exists():
        run = path.parent
        if not run.is_dir():
            raise UserError(
                f"{option} {path}: no such run folder {run}: train first (make train, or make "
                f"try for a CPU trial), or {MODEL_HINT}"
            )
        raise UserError(
            f"{option} {path}: no merged model yet; run `make merge RUN_DIR={run}` (grpo merge "
            f"{run}) first, or pass the run folder itself ({run}: its adapter)"
        )
    if option == "--reward_model" and not path.is_dir():
        raise UserError(
            f"{option} {path}: no such folder: train one first (make reward-model), or name a "
            "reward model's folder or Hub id"
        )
    try:
        check_model_dir(path)
    except UserError as err:
        raise UserError(f"{option} {err}") from None


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
    from transformers import AutoConfig

    return class_for_config(AutoConfig.from_pretrained(name_or_path))


def class_for_config(config):
    """The class TRL builds for a config: the first of its `architectures` when transformers has
    it, else AutoModelForCausalLM's class for the config."""
    import transformers
    from transformers import AutoModelForCausalLM

    architectures = getattr(config, "architectures", None) or []
    found = getattr(transformers, architectures[0], None) if architectures else None
    return found or AutoModelForCausalLM


def load_model_for_inference(path: Path, dtype: str = "auto", device: str | None = None):
    """A model ready for generation: a merged/full model folder, or base + LoRA adapter."""
    import torch

    if path.exists():
        check_model_dir(path)
    torch_dtype = "auto" if dtype == "auto" else getattr(torch, dtype)
    device = device or default_device()
    if device == "cpu":
        configure_cpu_threads()
    try:
        if is_adapter(path):
            from peft import PeftModel

            base_name = base_model_of(path)
            base = model_class(base_name).from_pretrained(base_name, dtype=torch_dtype)
            model = PeftModel.from_pretrained(base, str(path))
        else:
            model = model_class(str(path)).from_pretrained(str(path), dtype=torch_dtype)
    except OSError as err:
        raise UserError(
            f"cannot load the model '{path}' (a folder or Hub id): {err}. Offline, {MODEL_HINT}"
        ) from err
    return model.to(device).eval()


THREADS_VARIABLES = ("GRPO_TORCH_THREADS", "OMP_NUM_THREADS")  # the first one set wins


def cpu_threads(cores: int | None = None, load: float | None = None) -> int:
    """Torch threads for work on the CPU: the cores this process may use minus those busy with
    other work (the 1-minute load average), at least 1. Threads beyond the idle cores wait on
    each other: on a 2-core machine with one busy core, 2 threads generate 3-7x slower than 1."""
    if cores is None:
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # not Linux
            cores = os.cpu_count() or 1
    if load is None:
        try:
            load = os.getloadavg()[0]
        except (AttributeError, OSError):
            load = 0.0
    return max(1, min(cores, round(cores - load)))


def configure_cpu_threads() -> int:
    """Set torch's CPU threads (`cpu_threads`, decided once per process so that the models of
    one command run alike), unless GRPO_TORCH_THREADS or OMP_NUM_THREADS says how many; returns
    the count, said in one line when it is chosen here."""
    import torch

    for name in THREADS_VARIABLES:
        if os.environ.get(name, "").strip().isdigit():
            threads = max(1, int(os.environ[name]))
            torch.set_num_threads(threads)
            return threads
    threads = _idle_cores()
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
        logger.info(
            "CPU: %d torch thread(s) (the idle cores; set GRPO_TORCH_THREADS to choose)", threads
        )
    return threads


@functools.cache
def _idle_cores() -> int:
    return cpu_threads()


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
