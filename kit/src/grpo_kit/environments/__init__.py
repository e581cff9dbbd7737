"""The agent's tools: environments TRL's `GRPOTrainer(environment_factory=...)` drives.

Each rollout gets an environment instance (TRL keeps a pool and reuses them), `reset(**row)`
with the data row's columns, and the instance's public methods as its tools. A data row names its
environment in the `environment` column; the project's task says which environments exist (its
`{name: class}` table, passed to `factories`). `execute` runs one tool call, and `execute_turn`
the calls of one turn, exactly as TRL's tool loop does, so our own loops (ideal rollouts in
reward-debug, evaluation, interactive inference) show the model byte-for-byte what training
shows it.

The tools' time: a call made once its rollout's `tool_rollout_seconds` or its step's
`tool_step_seconds` are spent (or, for the python environment's programs, its turn's
`tool_turn_seconds`) is not run (a step's cut is logged, once per step); its result is TRL's
error form with `budget_cut_message`, so `tool_call_errors` counts it as a failed call, and
`budget_figures` counts it for the TRL metric `tools/budget_cuts` (cut calls per rollout).
"""

from __future__ import annotations

import ast
import asyncio
import functools
import inspect
import json
from collections.abc import Callable, Iterable

from ..errors import DataError, UserError
from .base import (
    BUDGET_CUT,
    WALL_CUT,
    Environment,
    ToolArguments,
    ToolError,
    ToolSettings,
    budget_cut_message,
    clip,
    tool_settings,
)
from .lookup_env import LookupEnvironment
from .python_env import PythonEnvironment

__all__ = [
    "BUDGET_CUTS_METRIC",
    "Environment",
    "LookupEnvironment",
    "PythonEnvironment",
    "ToolArguments",
    "ToolError",
    "ToolSettings",
    "budget_cut_message",
    "budget_figures",
    "clip",
    "execute",
    "execute_turn",
    "factories",
    "final_turn",
    "is_budget_cut",
    "is_error",
    "rollout_calls",
    "scripted_rollout",
    "tool_calls",
    "tool_dict",
    "tool_methods",
    "tool_results",
    "tool_settings",
]

SKIPPED = ("reset", "get_reward")  # methods TRL does not offer as tools (nor `_private` ones)
BUDGET_CUTS_METRIC = "tools/budget_cuts"  # calls cut by the time budget, per rollout


def factories(
    settings: ToolSettings, registry: dict[str, type], names: Iterable[str] | None = None
) -> dict[str, Callable[[], object]]:
    """`{name: factory}` for `GRPOTrainer(environment_factory=...)`: the named environments of
    `registry` (`{name: environment class}`, all by default), each made once now so a missing
    corpus or sandbox stops the run here, before a model is loaded.

    An environment is a class whose constructor takes `ToolSettings`, with `reset(self, **row)`
    (called before every rollout with the data row's columns: clear the episode's state there)
    and public methods, its tools: each with type hints and a Google-style docstring with `Args:`
    and `Returns:` (the model is shown them as the tool's schema), returning a short string and
    raising `ToolError("what went wrong and what to do")` on misuse. Subclass `Environment` for
    the call counters (see python_env.py, lookup_env.py)."""
    chosen = list(registry) if names is None else list(dict.fromkeys(names))
    for name in chosen:
        if name not in registry:
            raise UserError(
                f"unknown tool environment {name!r} (the data's `environment` column); known: "
                f"{', '.join(registry)}. Register yours in ENVIRONMENTS in task.py"
            )
    made = {name: functools.partial(registry[name], settings) for name in chosen}
    for factory in made.values():
        factory()
    return made


def tool_methods(environment) -> list[Callable]:
    """The environment's tools as TRL lists them: public functions of its class (sorted by name),
    bound to it, without `reset` and `get_reward`."""
    return [
        getattr(environment, name)
        for name, _ in inspect.getmembers(type(environment), predicate=inspect.isfunction)
        if name not in SKIPPED and not name.startswith("_")
    ]


def tool_dict(environment) -> dict[str, Callable]:
    """`{tool name: bound method}`, the table `execute` looks calls up in."""
    return {tool.__name__: tool for tool in tool_methods(environment)}


def execute(tools: dict[str, Callable], call: dict) -> dict:
    """Run one tool call (`{"type": "function", "function": {"name", "arguments"}}`) as TRL's
    tool loop does, and return the tool message it appends: `{"role": "tool", "name",
    "content"}`, where a failure's content is `str({"error": message})`."""
    if call.get("type") == "function":
        function = call["function"]
        name = function["name"]
        try:
            if name not in tools:
                raise ValueError(f"Tool {name} not found.")
            result = tools[name](**function["arguments"])
            if inspect.iscoroutine(result):  # an async tool (TRL awaits it in its own loop)
                result = asyncio.run(result)
        except Exception as e:
            result = {"error": str(e)}
    else:
        name = call.get("name", "unknown")
        result = {"error": f"Unsupported tool call type: {call.get('type')}"}
    content = result if isinstance(result, list) else str(result)
    return {"role": "tool", "name": name, "content": content}


def execute_turn(tools: dict[str, Callable], calls: list) -> list[dict]:
    """Run the tool calls of one assistant turn as TRL's tool loop does and return the tool
    messages it appends: plain tools one after another, then the async tools' coroutines
    together (TRL gathers them), their messages after the plain tools' ones."""
    messages: list[dict] = []
    pending: list[tuple[str, object]] = []
    for call in calls:
        function = call.get("function") if call.get("type") == "function" else None
        tool = tools.get(function["name"]) if isinstance(function, dict) else None
        if tool is not None and inspect.iscoroutinefunction(tool):
            try:
                pending.append((function["name"], tool(**function["arguments"])))
            except Exception as e:
                messages.append(_tool_message(function["name"], {"error": str(e)}))
        else:
            messages.append(execute(tools, call))
    if pending:

        async def together():
            return await asyncio.gather(*(c for _, c in pending), return_exceptions=True)

        for (name, _), result in zip(pending, asyncio.run(together()), strict=True):
            messages.append(
                _tool_message(
                    name, {"error": str(result)} if isinstance(result, Exception) else result
                )
            )
    return messages


def _tool_message(name: str, result) -> dict:
    content = result if isinstance(result, list) else str(result)
    return {"role": "tool", "name": name, "content": content}


def is_budget_cut(content) -> bool:
    """True when a tool message's content is the error of a call cut by the time budget: not
    run, or stopped while running when the turn's or rollout's time ran out."""
    if not is_error(content):
        return False
    return ast.literal_eval(content)["error"].startswith((BUDGET_CUT, WALL_CUT))


def budget_figures(messages: list[dict]) -> dict[str, float]:
    """The rollout's calls cut by the time budget, as the figure `tools/budget_cuts` (for
    `@reward(metrics=...)`: logged as a TRL metric, its mean over the rollouts)."""
    return {BUDGET_CUTS_METRIC: float(sum(is_budget_cut(c) for c in tool_results(messages)))}


def is_error(content) -> bool:
    """True when a tool message's content is TRL's error form, `str({"error": message})`."""
    if not isinstance(content, str) or not content.startswith("{'error': "):
        return False
    try:
        value = ast.literal_eval(content)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return False
    return isinstance(value, dict) and list(value) == ["error"] and isinstance(value["error"], str)


def tool_calls(value, source: str = "ideal_calls") -> list[dict]:
    """A data cell listing tool calls (a JSON string, or a list, of `{"name", "arguments"}`
    objects) as TRL's tool calls, ready for `execute`; `source` names the cell in errors."""
    calls = value
    if isinstance(value, str):
        try:
            calls = json.loads(value)
        except json.JSONDecodeError as err:
            raise DataError(f"{source}: invalid JSON ({err.msg})") from err
    shape = 'a list of {"name": ..., "arguments": {...}} objects'
    if not isinstance(calls, list):
        raise DataError(f"{source}: expected {shape}, got {type(calls).__name__}")
    result = []
    for number, call in enumerate(calls, start=1):
        if not (
            isinstance(call, dict)
            and isinstance(call.get("name"), str)
            and isinstance(call.get("arguments", {}), dict)
        ):
            raise DataError(f"{source}: call {number} is {str(call)[:80]}; expected {shape}")
        arguments = call.get("arguments", {})
        result.append(
            {"type": "function", "function": {"name": call["name"], "arguments": arguments}}
        )
    return result


def rollout_calls(messages: list[dict]) -> list[dict]:
    """Every tool call of a rollout's assistant turns (TRL's parsed `tool_calls`)."""
    found = []
    for message in messages:
        if message.get("role", "assistant") == "assistant":
            calls = message.get("tool_calls")
            if isinstance(calls, list):
                found += [c for c in calls if isinstance(c, dict)]
    return found


def tool_results(messages: list[dict]) -> list[str]:
    """The contents of a rollout's tool messages, in order."""
    return [str(m.get("content") or "") for m in messages if m.get("role") == "tool"]


def final_turn(messages: list[dict]) -> str | None:
    """The text of the rollout's last turn when that turn is the assistant's and makes no call
    (None otherwise: the rollout stopped before answering)."""
    if not messages:
        return None
    last = messages[-1]
    if last.get("role", "assistant") != "assistant" or last.get("tool_calls"):
        return None
    return str(last.get("content") or "")


def scripted_rollout(environment, row: dict, calls: list[dict], answer: str) -> list[dict]:
    """The messages after the prompt of an agent that makes `calls` (TRL's tool-call form), each
    really executed on `environment` as TRL runs it, and then answers `answer`."""
    environment.reset(**row)
    tools = tool_dict(environment)
    messages: list[dict] = []
    for call in calls:
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        messages.append(execute(tools, call))
    messages.append({"role": "assistant", "content": answer})
    return messages
