"""The agent's tools: environments TRL's `GRPOTrainer(environment_factory=...)` drives.

Each rollout gets an environment instance (TRL keeps a pool and reuses them), `reset(**row)`
with the data row's columns, and the instance's public methods as its tools. A data row names its
environment in the `environment` column; the project's task says which environments exist (its
`{name: class}` table, passed to `factories`). `execute` runs one tool call exactly as TRL's tool
loop does, so our own loops (ideal rollouts in reward-debug, evaluation, interactive inference)
show the model byte-for-byte what training shows it.
"""

from __future__ import annotations

import ast
import asyncio
import functools
import inspect
import json
from collections.abc import Callable, Iterable

from ..errors import DataError, UserError
from .base import Environment, ToolArguments, ToolError, ToolSettings, clip, tool_settings
from .lookup_env import LookupEnvironment
from .python_env import PythonEnvironment

__all__ = [
    "Environment",
    "LookupEnvironment",
    "PythonEnvironment",
    "ToolArguments",
    "ToolError",
    "ToolSettings",
    "clip",
    "execute",
    "factories",
    "final_turn",
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
