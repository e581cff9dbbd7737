"""Answering prompts with a trained model: the kit's `infer` (what `grpo infer` runs) and the
steps it composes (a project's own infer script, after `grpo eject infer`, composes the same
ones): its options, the prompts (one, or a JSONL file), an agent's episodes (its tools really
run, the loop TRL trains with: environments/episodes.py), the interactive chat, and the output.

`--model` takes a merged folder, a training output folder (LoRA adapter on its base model) or a
Hub id. The system prompt defaults to the recipe's, so the model sees the format it was trained
on. Decoding defaults to the model card's recommended sampling ([tool.grpo]
recommended_sampling) for the project's model and models trained from it; another model decodes
with the sampling its generation_config.json asks for, else greedily (`Decoding.for_model`);
`--temperature/--top-p/--top-k` change it, `--greedy` decodes greedily and `--seed` makes
sampling repeatable.
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Sequence
from pathlib import Path

from .errors import UserError
from .generation import add_decoding_options, chat, check_model, decoding_from
from .project import load as load_project
from .recipe import add_recipe_options, recipe_from
from .task import message_text
from .text import for_terminal

__all__ = [
    "agent_answers",
    "batches",
    "infer",
    "interactive",
    "parse_args",
    "example_prompt",
    "prompts_of",
    "read_prompts",
    "show",
    "transcript",
]

logger = logging.getLogger(__name__)


def parse_args(argv: Sequence[str] | None, prog: str = "grpo infer") -> argparse.Namespace:
    """The infer command's options, with the recipe (`args.recipe`) giving the defaults; for an
    agent task, `args.agent` is (environment factory, tool-calling turn cap), else None."""
    project = load_project()
    agent_task = project.task.environments is not None
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Generate answers with a trained (merged or adapter) model.",
        epilog="Other options (--config PATH, --smoke, recipe fields) choose the recipe whose "
        "output_dir, system_prompt and prompt_column give the defaults.",
    )
    parser.add_argument(
        "--model", type=Path, default=None, help="model folder (default: output_dir/merged)"
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--prompt",
        help="one prompt (the user message; default: the first row of your data, as the task "
        "asks it, else the task's example)",
    )
    source.add_argument(
        "--prompts-file",
        type=Path,
        help='JSONL file; each line {"prompt": ...} (or the recipe\'s prompt_column)',
    )
    if agent_task:
        source.add_argument(
            "--interactive", action="store_true", help="chat turn by turn (empty line: quit)"
        )
        parser.add_argument("--environment", help="the tools' environment (default: the recipe's)")
    parser.add_argument("--output", type=Path, help="write {prompt, completion} JSONL here")
    parser.add_argument("--limit", type=int, default=None, help="use only the first N prompts")
    parser.add_argument(
        "--system-prompt", default=None, help="system message (default: the recipe's)"
    )
    parser.add_argument("--max-new-tokens", type=int, default=256, help="default 256")
    parser.add_argument("--batch-size", type=int, default=8, help="prompts per generate call")
    parser.add_argument(
        "--dtype", default="auto", choices=["auto", "bfloat16", "float16", "float32"]
    )
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    parser.add_argument("--seed", type=int, help="seed for sampling (default: a fresh one)")
    add_decoding_options(parser, project)
    add_recipe_options(parser)
    args, overrides = parser.parse_known_args(argv)
    args.recipe = recipe_from(args, overrides, read_only=True, project=project)
    if args.model is None:
        args.model = Path(args.recipe.training.output_dir) / "merged"
        if not args.model.exists():
            raise UserError(
                f"{args.model}: no merged model yet; run `make merge` first, or pass --model "
                "(a merged folder, a training output_dir with an adapter, or a Hub id; "
                "make infer RUN_DIR=outputs/<run> uses that run's merged folder)"
            )
    check_model(args.model)  # a folder with no model (a run not merged yet): one line
    args.decoding = decoding_from(args, project, args.model)
    if args.system_prompt is None:
        args.system_prompt = args.recipe.script.system_prompt
    args.chat_template_kwargs = args.recipe.training.chat_template_kwargs
    args.prompt_column = args.recipe.script.prompt_column
    args.interactive = getattr(args, "interactive", False)
    if not (args.prompt or args.prompts_file or args.interactive):
        args.prompt = example_prompt(args.recipe)
    args.agent = None  # an agent task: (environment factory, tool-calling turn cap)
    if agent_task:
        factories = project.task.environments(args.recipe.task)
        name = args.environment or args.recipe.task.default_environment
        if name not in factories:
            raise UserError(f"--environment {name}: use one of {', '.join(factories)}")
        args.agent = (factories[name], args.recipe.training.max_tool_calling_iterations)
    return args


def example_prompt(recipe) -> str:
    """The prompt an example asks (smoke's generate step, `grpo infer` with no prompt): once the
    recipe names your data (configs/local.yaml), its first row's user message as the task builds
    it (your text, your labels); else, on the task's default data or the shipped sample, the
    task's `example_prompt`."""
    from . import data

    task, script = recipe.project.task, recipe.script
    fallback = task.example_prompt or "Hello"
    if script.dataset_name == task.data.dataset_name or Path(script.dataset_name) == Path(
        task.data.sample
    ):
        return fallback
    rows = data.load_training_rows(script, recipe.task, task)
    first = data.to_conversations(rows.select(range(min(1, len(rows)))), script, recipe.task, task)
    users = [m for m in first[0]["prompt"] if m.get("role") == "user"] if len(first) else []
    return str(users[-1]["content"]) if users else fallback


def transcript(rollout: list[dict]) -> str:
    """An agent's rollout as text: each call with its arguments, each result, the answer."""
    return "\n".join(message_line(message) for message in rollout)


def message_line(message: dict) -> str:
    calls = message.get("tool_calls") or []
    lines = [
        f"[calls {c['function']['name']}({json.dumps(c['function']['arguments'])})]"
        for c in calls
        if isinstance(c, dict) and isinstance(c.get("function"), dict)
    ]
    content = str(message.get("content") or "")
    if message.get("role") == "tool":
        return f"[{message.get('name')} -> {content}]"
    return "\n".join([*([content] if content else []), *lines])


def agent_answers(model, tokenizer, batch: list[str], args) -> list[list[dict]]:
    from .environments.episodes import run_episodes

    factory, max_iterations = args.agent
    conversations = [chat(p, args.system_prompt) for p in batch]
    return run_episodes(
        model, tokenizer, conversations, [factory() for _ in batch], [{} for _ in batch],
        args.decoding, args.max_new_tokens, max_iterations, args.chat_template_kwargs,
    )  # fmt: skip


def interactive(model, tokenizer, args) -> list[list[dict]]:
    """Chat with the agent: each line you type is a user turn; the model calls its tools (each
    call and result printed as it happens) until it answers. An empty line or EOF ends it."""
    from .environments.episodes import run_episodes

    factory, max_iterations = args.agent
    environment = factory()
    history = chat("", args.system_prompt)[:-1]
    turns = []
    while True:
        try:
            line = input("you> ").strip()
        except EOFError:
            break
        if not line:
            break
        history.append({"role": "user", "content": line})
        [rollout] = run_episodes(
            model, tokenizer, [history], [environment], [{}], args.decoding,
            args.max_new_tokens, max_iterations, args.chat_template_kwargs,
            on_message=lambda _, message: print(message_line(message), flush=True),
        )  # fmt: skip
        history += rollout
        turns.append(rollout)
    return turns


def read_prompts(path: Path, prompt_column: str) -> list[str]:
    if not path.is_file():
        raise UserError(f"{path}: file not found")
    prompts = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise UserError(f"{path} line {number}: invalid JSON ({err.msg})") from err
        if isinstance(row, str):
            prompts.append(row)
            continue
        value = row.get("prompt", row.get(prompt_column)) if isinstance(row, dict) else None
        text = message_text(value) if isinstance(value, str | list) else None
        if not text:
            raise UserError(f"{path} line {number}: no 'prompt' (or '{prompt_column}') text")
        prompts.append(text)
    if not prompts:
        raise UserError(f"{path}: no prompts")
    return prompts


def prompts_of(args: argparse.Namespace) -> list[str]:
    """The prompts asked for: --prompt, or --prompts-file (--limit: its first N)."""
    prompts = [args.prompt] if args.prompt else read_prompts(args.prompts_file, args.prompt_column)
    return prompts[: args.limit] if args.limit else prompts


def batches(prompts: list[str], size: int):
    """The prompts in batches of `size`, with a progress bar when there is more than one."""
    from rich.progress import track

    chunks = [prompts[i : i + size] for i in range(0, len(prompts), size)]
    return track(chunks, description="Generating") if len(chunks) > 1 else chunks


def show(prompts: list[str], completions: list, output: Path | None) -> None:
    """Write {prompt, completion} lines to `output`, or print each pair (an agent's rollout as
    its transcript)."""
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        with output.open("w", encoding="utf-8") as handle:
            for prompt, completion in zip(prompts, completions, strict=True):
                handle.write(json.dumps({"prompt": prompt, "completion": completion}) + "\n")
        print(f"wrote {len(completions)} completions to {output}")
        return
    for prompt, completion in zip(prompts, completions, strict=True):
        shown = transcript(completion) if isinstance(completion, list) else completion
        print(for_terminal(f"### prompt\n{prompt}\n### completion\n{shown}\n"))


def infer(argv: Sequence[str] | None = None) -> list:
    """Answer the prompts with the model; returns the answers (an agent task's: its rollouts).
    What `grpo infer` runs unless the project declares an infer script (`grpo eject infer`
    writes one that starts as this function)."""
    from . import backends
    from .generation import generate, load_model_for_inference, load_tokenizer_for

    args = parse_args(argv)  # --model, the prompts, decoding; defaults from the recipe
    tokenizer = load_tokenizer_for(args.model)
    backend = backends.load(args.recipe.project.backend)
    fast = None if args.agent else backend.fast_generator(args.model, args.recipe)  # Unsloth+vLLM
    # transformers' AutoModel (a merged folder), or the base model with PEFT's adapter on it.
    model = None if fast else load_model_for_inference(args.model, args.dtype, args.device)
    if args.interactive:
        return interactive(model, tokenizer, args)
    if args.seed is not None:
        from transformers import set_seed

        set_seed(args.seed)
    prompts = prompts_of(args)
    completions = []
    for batch in batches(prompts, args.batch_size):
        if args.agent:  # tool calls parsed, run and answered until the final answer
            completions += agent_answers(model, tokenizer, batch, args)
            continue
        conversations = [chat(prompt, args.system_prompt) for prompt in batch]
        if fast:
            completions += fast(conversations, tokenizer, args)
            continue
        # tokenizer.apply_chat_template(..., add_generation_prompt=True), then model.generate.
        completions += generate(
            model, tokenizer, conversations, args.max_new_tokens, args.decoding,
            args.chat_template_kwargs,
        )  # fmt: skip
    show(prompts, completions, args.output)
    return completions


def command(argv: Sequence[str] | None = None) -> int:
    """`grpo infer`: the project's declared infer script's `infer`, else the kit's, with
    one-line errors."""
    from .runner import run

    return run(lambda args: load_project().function("infer", infer)(args), argv)
