"""The agent's tool environments: tool schemas, TRL's tool-call semantics, the counters, the
BM25 knowledge base, and the sample data (every ideal rollout works for real).

The `python` environment's tests need the code sandbox; where it cannot run they skip with the
sandbox's own reason (install bubblewrap and allow user namespaces to run them)."""

import asyncio
import csv
import dataclasses
import importlib.util
import json
import os
import re
import time
from pathlib import Path

import pytest
from conftest import chdir, load, make_project
from grpo_kit import environments, sandbox
from grpo_kit.environments import (
    LookupEnvironment,
    PythonEnvironment,
    ToolError,
    ToolSettings,
    budget_figures,
    clip,
    execute,
    execute_turn,
    factories,
    is_budget_cut,
    is_error,
    lookup_env,
    tool_calls,
    tool_dict,
    tool_methods,
)
from grpo_kit.environments import python_env as python_module
from grpo_kit.errors import DataError, UserError
from grpo_kit.starters.tools.task import ENVIRONMENTS
from transformers.utils import get_json_schema

CORPUS = "data/sample_corpus.jsonl"
TOOLS_DATA = "data/sample_tools.jsonl"
LIMITS = sandbox.Limits(timeout=5.0, workers=1)
VERDICTS = ("SUPPORTED", "REFUTED", "NOT ENOUGH INFO")  # the fact-check rows' answers
HIT = re.compile(r"^\[(?P<id>[^\]\s]+)\] (?P<title>[^:]+): (?P<snippet>.+)$")


@pytest.fixture(autouse=True)
def in_tools_project(projects, monkeypatch):
    """The sample paths (data/...) are the tools project's."""
    monkeypatch.chdir(projects("tools"))


# Tiny models of tool-calling families the agent loop is checked with: the suite's default
# (Qwen2.5's template) and the template's default model (Qwen3.5, thinking off).
FAMILIES = {"qwen2_5": ("qwen2", "qwen2_5"), "qwen3_5_nothink": ("qwen3_5", "qwen3_5_nothink")}


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def tiny_tokenizer(request, tmp_path_factory):
    """The tokenizer of a tools project's tiny model (its chat template, trained on its data)."""
    from grpo_kit.offline.tiny_model import project_tiny_model
    from transformers import AutoTokenizer

    arch, template = FAMILIES[request.param]
    folder = tmp_path_factory.mktemp(f"tools-{template}")
    root = make_project(folder / "project", "tools", tiny_arch=arch, chat_template=template)
    with chdir(root):
        model_dir = project_tiny_model(folder / "model", load(root))
    return AutoTokenizer.from_pretrained(model_dir)


def call(name: str, **arguments) -> dict:
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def run(environment: PythonEnvironment, code: str) -> str:
    """One `run_python` call on its own (a turn of one call), as a plain function call."""
    return asyncio.run(environment.run_python(code))


def sandbox_limits(**fields) -> sandbox.Limits:
    limits = sandbox.Limits(**{"timeout": 5.0, "workers": 1, **fields})
    try:
        limits.level()
    except sandbox.SandboxUnavailable as err:
        pytest.skip(f"code sandbox unavailable here: {err}")
    return limits


@pytest.fixture(scope="module")
def limits():
    return sandbox_limits()


@pytest.fixture
def python_env(limits):
    return PythonEnvironment(ToolSettings(sandbox=limits))


@pytest.fixture
def lookup():
    return LookupEnvironment(ToolSettings(sandbox=LIMITS, corpus=CORPUS))


def sample_rows() -> list[dict]:
    with open(TOOLS_DATA, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


# --- the tools as the model sees them -------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ENVIRONMENTS))
def test_every_registered_tool_has_a_json_schema(name):
    """What TRL renders into the prompt: get_json_schema refuses a tool without type hints or
    without an Args/Returns docstring (this checks your own environments too)."""
    settings = ToolSettings(sandbox=sandbox_limits() if name == "python" else LIMITS)
    environment = factories(settings, ENVIRONMENTS, [name])[name]()
    tools = tool_methods(environment)
    assert tools, f"{name} has no tools"
    for tool in tools:
        schema = get_json_schema(tool)["function"]
        assert schema["name"] == tool.__name__
        assert schema["description"] and "return" in schema
        for parameter, spec in schema["parameters"]["properties"].items():
            assert spec.get("description"), f"{tool.__name__}({parameter}) is undocumented"
            assert "\n " not in spec["description"], "a docstring line break leaks indentation"
        assert "\n " not in schema["return"].get("description", "")


def test_tools_are_listed_as_trl_lists_them():
    class Demo(environments.Environment):
        hidden = property(lambda self: 1 / 0)  # TRL lists on the class: never evaluated

        def get_reward(self) -> float:
            return 0.0

        def _helper(self):
            return None

        def zeta(self, x: int) -> str:
            """Z.

            Args:
                x: a number.

            Returns:
                Text.
            """
            return str(x)

        def alpha(self) -> str:
            """A.

            Returns:
                Text.
            """
            return "a"

    demo = Demo(ToolSettings(sandbox=LIMITS))
    assert [tool.__name__ for tool in tool_methods(demo)] == ["alpha", "zeta"]
    assert tool_methods(demo)[1].__self__ is demo
    assert list(tool_dict(demo)) == ["alpha", "zeta"]
    assert [t.__name__ for t in tool_methods(LookupEnvironment(ToolSettings()))] == [
        "open",
        "search",
    ]
    assert [t.__name__ for t in tool_methods(object.__new__(PythonEnvironment))] == ["run_python"]


# --- execute(): one tool call, exactly as TRL's tool loop runs it ----------------------------


def failing(message: str) -> str:
    """Fails.

    Args:
        message: what to raise.

    Returns:
        Nothing.
    """
    raise ToolError(message)


def test_execute_matches_trls_messages():
    tools = {"echo": lambda text: text.upper(), "failing": failing, "number": lambda: 7,
             "blocks": lambda: [{"type": "text", "text": "x"}]}  # fmt: skip
    assert execute(tools, call("echo", text="hi")) == {"role": "tool", "name": "echo",
                                                       "content": "HI"}  # fmt: skip
    assert execute(tools, call("number"))["content"] == "7"
    assert execute(tools, call("blocks"))["content"] == [{"type": "text", "text": "x"}]
    missing = execute(tools, call("nope", x=1))
    assert missing == {"role": "tool", "name": "nope",
                       "content": str({"error": "Tool nope not found."})}  # fmt: skip
    raised = execute(tools, call("failing", message="no document 'x'; use an id from search"))
    assert raised["content"] == str({"error": "no document 'x'; use an id from search"})
    wrong = execute(tools, call("echo", txt="hi"))["content"]
    assert is_error(wrong) and "unexpected keyword argument 'txt'" in wrong
    odd = execute(tools, {"type": "code", "name": "echo"})
    assert odd == {"role": "tool", "name": "echo",
                   "content": str({"error": "Unsupported tool call type: code"})}  # fmt: skip


def test_execute_awaits_async_tools():
    async def later(x: int) -> str:
        await asyncio.sleep(0)
        return f"got {x}"

    assert execute({"later": later}, call("later", x=3))["content"] == "got 3"


def test_execute_follows_trls_tool_loop():
    """The strings execute() copies from TRL's `_tool_call_loop` are still TRL's (read from its
    source, without importing the trainer): a TRL upgrade that changes them fails here."""
    source = Path(importlib.util.find_spec("trl.trainer.grpo_trainer").origin).read_text()
    loop = source[source.index("def _tool_call_loop") :]
    loop = loop[: loop.index("\n    def ")]
    for fragment in (
        # execute_turn: plain tools in order, then the async ones gathered, their results after
        'async_coros.append((name, async_tool_dict[name](**function["arguments"])))',
        "results = await asyncio.gather(*coros, return_exceptions=True)",
        "if isinstance(result, Exception):",
        'tool_call_results.append((name, {"error": str(result)}))',
        'raise ValueError(f"Tool {name} not found.")',
        'result = {"error": str(e)}',
        '{"error": f"Unsupported tool call type: {tool_call[\'type\']}"}',
        "content = result if isinstance(result, list) else str(result)",
        'tool_message = {"role": "tool", "name": name, "content": content}',
        '(**function["arguments"])',
    ):
        assert fragment in loop, fragment
    listing = 'if member_name not in ("reset", "get_reward") and not member_name.startswith("_")'
    assert listing in source


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (str({"error": "boom"}), True),
        (str({"error": "no document 'x'"}), True),  # repr switches to double quotes
        (str({"error": ""}), True),
        ("{'error': 1}", False),
        ("{'error': 'a', 'more': 1}", False),
        ("{'error': 'cut", False),
        ("42", False),
        ("error: boom", False),
        ([{"type": "text", "text": "x"}], False),
    ],
)
def test_is_error_recognises_trls_error_form(content, expected):
    assert is_error(content) is expected


def test_clip_marks_cut_text():
    assert clip("abc", 3) == "abc"
    assert clip("abcd", 3) == "abc\n[... cut at 3 characters]"
    assert clip("abc", 3, cut=True) == "abc\n[... cut at 3 characters]"


def test_tool_calls_reads_the_ideal_calls_column():
    cell = json.dumps([{"name": "search", "arguments": {"query": "x"}}, {"name": "open"}])
    assert tool_calls(cell) == [call("search", query="x"), call("open")]
    assert tool_calls([{"name": "run_python", "arguments": {"code": "1"}}]) == [
        call("run_python", code="1")
    ]
    for bad, message in (
        ("[{", "invalid JSON"),
        ('{"name": "x"}', "expected a list"),
        ('[{"arguments": {}}]', "call 1 is"),
        ('[{"name": "x", "arguments": [1]}]', "call 1 is"),
    ):
        with pytest.raises(DataError, match=message) as error:
            tool_calls(bad, source="data.jsonl row 3 column 'ideal_calls'")
        assert str(error.value).startswith("data.jsonl row 3") and "\n" not in str(error.value)


# --- factories and settings -----------------------------------------------------------------


def test_factories_make_fresh_instances_of_the_named_environments():
    made = factories(ToolSettings(sandbox=LIMITS), ENVIRONMENTS, ["lookup"])
    assert list(made) == ["lookup"]
    first, second = made["lookup"](), made["lookup"]()
    assert isinstance(first, LookupEnvironment) and first is not second


def test_unknown_environment_is_one_clear_error():
    with pytest.raises(UserError) as error:
        factories(ToolSettings(sandbox=LIMITS), ENVIRONMENTS, ["lookup", "browser"])
    text = str(error.value)
    assert "'browser'" in text and "python, lookup" in text and "ENVIRONMENTS" in text
    assert "\n" not in text


def test_factories_check_the_environments_now(tmp_path):
    with pytest.raises(DataError, match="corpus file not found"):
        factories(
            ToolSettings(sandbox=LIMITS, corpus=str(tmp_path / "none.jsonl")),
            ENVIRONMENTS,
            ["lookup"],
        )


def test_settings_are_checked():
    with pytest.raises(UserError, match="tool_output_chars must be"):
        ToolSettings(tool_output_chars=0)
    with pytest.raises(UserError, match="search_results must be"):
        ToolSettings(search_results=0)
    with pytest.raises(UserError, match="tool_turn_seconds must be more than 0"):
        ToolSettings(tool_turn_seconds=0)
    with pytest.raises(UserError, match="tool_rollout_seconds must be more than 0"):
        ToolSettings(tool_rollout_seconds=-1)


def test_execute_turn_runs_a_turn_as_trl_does():
    """Plain tools one after another, then the async tools gathered (their messages after the
    plain ones, as TRL appends them), errors in TRL's form wherever they happen."""
    order = []

    async def slow(x: int) -> str:
        order.append(f"start {x}")
        await asyncio.sleep(0)
        order.append(f"end {x}")
        return f"slow {x}"

    async def broken() -> str:
        raise ToolError("broke")

    def plain(x: int) -> str:
        order.append(f"plain {x}")
        return f"plain {x}"

    tools = {"slow": slow, "broken": broken, "plain": plain}
    calls = [call("slow", x=1), call("plain", x=2), call("slow", x=3), call("broken"),
             call("slow", y=1), call("nope")]  # fmt: skip
    contents = [m["content"] for m in execute_turn(tools, calls)]
    assert contents[0] == "plain 2"
    assert is_error(contents[1]) and "unexpected keyword argument 'y'" in contents[1]
    assert contents[2:] == [
        str({"error": "Tool nope not found."}),
        "slow 1",
        "slow 3",
        str({"error": "broke"}),
    ]
    assert order == ["plain 2", "start 1", "start 3", "end 1", "end 3"]  # together


# --- the tools' time: a turn's calls together, budgets per turn and rollout (issue 25 #1) --------


def test_the_calls_of_one_turn_run_together_on_the_workers(monkeypatch):
    """A turn's run_python calls reach the sandbox as one batch, in waves of one program per
    worker, instead of one program after another."""
    limits = sandbox_limits(workers=2)
    batches = []
    real = python_module.run_programs

    def recorded(sources, limits, max_output_chars, wall_seconds):
        batches.append(len(sources))
        return real(sources, limits, max_output_chars, wall_seconds)

    monkeypatch.setattr(python_module, "run_programs", recorded)
    environment = PythonEnvironment(ToolSettings(sandbox=limits))
    calls = [call("run_python", code=f"print({n} * 2)") for n in range(5)]
    messages = execute_turn(tool_dict(environment), calls)
    assert [m["content"] for m in messages] == ["0", "2", "4", "6", "8"]
    assert batches == [2, 2, 1]
    assert (environment.calls, environment.failures) == (5, 0)

    # As GRPOTrainer runs them: the coroutines made in its thread, gathered on its event loop
    # in a daemon thread (trl.trainer.utils), the results awaited from the training thread.
    from trl.trainer.utils import shutdown_event_loop_in_daemon, start_event_loop_in_daemon

    thread, loop, ready = start_event_loop_in_daemon(name="test-async-tools")
    ready.wait()
    try:
        batches.clear()
        coroutines = [environment.run_python(code=f"print({n})") for n in range(3)]

        async def together():
            return await asyncio.gather(*coroutines, return_exceptions=True)

        results = asyncio.run_coroutine_threadsafe(together(), loop).result()
    finally:
        shutdown_event_loop_in_daemon(thread, loop)
    assert results == ["0", "1", "2"] and batches == [2, 1]


def test_a_flood_of_endless_calls_ends_within_the_rollout_budget():
    """Acceptance: one turn of 20 `while 1: 0` calls (a 640-token completion holds about that
    many) ends within the rollout's tool time, not after 20 sandbox timeouts; the calls not run
    are errors the rewards see (tool_call_errors) and counted (tools/budget_cuts)."""
    from grpo_kit.starters.tools.rewards import tool_call_errors

    settings = ToolSettings(sandbox=sandbox_limits(workers=2), tool_rollout_seconds=3.0)
    environment = PythonEnvironment(settings)
    ready = [call("run_python", code="print('up')")] * 2
    execute_turn(tool_dict(environment), ready)  # both workers started before the clock does
    environment.reset()
    calls = [call("run_python", code="while 1: 0")] * 20
    start = time.monotonic()
    messages = execute_turn(tool_dict(environment), calls)
    elapsed = time.monotonic() - start
    assert elapsed < settings.tool_rollout_seconds + 0.5  # 20 x 5 s = 100 s before
    contents = [m["content"] for m in messages]
    timed_out = [c for c in contents if "ran out of the rollout's time (3 s" in c]
    cuts = sum(is_budget_cut(c) for c in contents)
    # Every call is cut by the budget: the first ones stopped while running, the rest not run.
    assert all(is_error(c) for c in contents) and len(timed_out) >= 2
    assert cuts == environment.episode_budget_cuts == 20
    assert 20 - len(timed_out) >= 10
    rollout = [{"role": "assistant", "content": "", "tool_calls": calls}, *messages]
    metrics = []
    assert tool_call_errors([rollout], log_metric=lambda *i: metrics.append(i)) == [-1.0]
    assert ("tools/budget_cuts", float(cuts)) in metrics
    assert budget_figures(rollout) == {"tools/budget_cuts": float(cuts)}
    environment.reset()  # a new rollout has its own time
    assert run(environment, "print(1)") == "1"


def test_the_rollout_budget_covers_every_tool(lookup):
    """Calls of any tool stop being run once the rollout's tool time is spent."""
    settings = dataclasses.replace(lookup.settings, tool_rollout_seconds=1e-9)
    environment = LookupEnvironment(settings)
    assert environment.open("quell-light").startswith("Quell Light")  # time left: it runs
    cut = execute(tool_dict(environment), call("search", query="harbour"))["content"]
    assert is_budget_cut(cut) and "make fewer calls" in cut
    assert (environment.episode_budget_cuts, environment.failures) == (1, 1)
    environment.reset()
    assert environment.search("harbour")  # a new rollout
    assert not is_budget_cut(str({"error": "no document 'x'; use an id from search"}))


def test_the_step_budget_bounds_all_rollouts_of_a_step(caplog):
    """TRL runs a step's rollouts one after another: 4 rollouts of endless programs would wait
    4 x the rollout's time for tools. The step's budget (`tool_step_seconds`, shared by the
    environments made from the same settings) cuts the rest once it is spent, says so in the
    log once, and the next step (TRL resets every environment of it first) has its own."""
    import logging

    settings = ToolSettings(
        sandbox=sandbox_limits(workers=1), tool_rollout_seconds=2.0, tool_step_seconds=3.0
    )
    pool = [PythonEnvironment(settings) for _ in range(4)]
    run(pool[0], "print('up')")  # the worker started before the clock does
    for environment in pool:  # TRL: the step's environments are all reset first
        environment.reset()
    endless = [call("run_python", code="while 1: 0")]
    start = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="grpo_kit.environments.base"):
        contents = [execute_turn(tool_dict(e), endless)[0]["content"] for e in pool]
    elapsed = time.monotonic() - start
    assert elapsed < settings.tool_step_seconds + 0.75, elapsed  # 4 x 2 s = 8 s before
    assert "ran out of the rollout's time (2 s" in contents[0]
    assert "ran out of the step's time (3 s" in contents[1]
    assert all(is_budget_cut(c) for c in contents)
    assert [e.episode_budget_cuts for e in pool] == [1, 1, 1, 1]
    assert caplog.text.count("tools: this step") == 1  # logged once, when it bites
    for environment in pool:  # the next step
        environment.reset()
    assert run(pool[0], "print(1)") == "1"


def test_the_step_budget_covers_every_tool(lookup):
    settings = dataclasses.replace(lookup.settings, tool_step_seconds=1e-9)
    first, second = LookupEnvironment(settings), LookupEnvironment(settings)
    first.reset(), second.reset()
    assert first.open("quell-light").startswith("Quell Light")  # time left: it runs
    cut = execute(tool_dict(second), call("search", query="harbour"))["content"]
    assert is_budget_cut(cut) and "s a step" in cut  # its rollout's time is not spent
    first.reset(), second.reset()
    assert second.search("harbour")  # a new step
    with pytest.raises(UserError, match="tool_step_seconds must be more than 0"):
        ToolSettings(tool_step_seconds=0)


# --- python: run_python in the code sandbox -------------------------------------------------


def test_run_python_returns_what_the_program_prints(python_env):
    assert run(python_env, "import math\nprint(math.comb(10, 3))\nprint('done')") == ("120\ndone")
    assert run(python_env, "x = 1") == "(no output: print the result)"
    assert (python_env.calls, python_env.failures, python_env.episode_calls) == (2, 0, 2)


def test_run_python_errors_reach_the_model_as_trl_errors(python_env):
    tools = tool_dict(python_env)
    message = execute(tools, call("run_python", code="print('partial')\n1 / 0"))
    assert message["content"] == str({"error": "ZeroDivisionError: division by zero"})
    with pytest.raises(ToolError, match="SyntaxError"):
        run(python_env, "print(")
    assert (python_env.calls, python_env.failures, python_env.episode_failures) == (2, 2, 2)


def test_nothing_carries_over_between_calls(python_env):
    run(python_env, "x = 5\nopen('note', 'w').write('hi')")
    with pytest.raises(ToolError, match="NameError"):
        run(python_env, "print(x)")
    with pytest.raises(ToolError, match="FileNotFoundError"):
        run(python_env, "print(open('note').read())")


def test_run_python_times_out():
    environment = PythonEnvironment(ToolSettings(sandbox=sandbox_limits(timeout=1.0)))
    with pytest.raises(ToolError, match=r"^timed out \(1 CPU seconds\)$"):
        run(environment, "while True:\n    pass")
    assert environment.failures == 1


def test_a_program_late_in_a_turn_keeps_its_full_cpu_timeout(monkeypatch):
    """The time left in the turn caps a program's wall-clock time, not its CPU timeout: after a
    call that used most of a 3 s turn, the next program still runs with the configured 5 CPU
    seconds (its CPU rlimit says so; it was cut to about 0.6 s before), and the sandbox gets the
    time left as `wall_seconds`."""
    limits = sandbox_limits(timeout=5.0, workers=1)
    settings = ToolSettings(sandbox=limits, tool_turn_seconds=3.0)
    environment = PythonEnvironment(settings)
    run(environment, "print('up')")  # the worker started before the turn's clock does
    passed = []
    real = python_module.run_programs

    def recorded(sources, limits, max_output_chars, wall_seconds):
        passed.append((limits, wall_seconds))
        return real(sources, limits, max_output_chars, wall_seconds)

    monkeypatch.setattr(python_module, "run_programs", recorded)
    calls = [
        call("run_python", code="import time\ntime.sleep(1)\nprint('slept')"),
        call(
            "run_python", code="import resource\nprint(resource.getrlimit(resource.RLIMIT_CPU)[0])"
        ),
    ]
    contents = [m["content"] for m in execute_turn(tool_dict(environment), calls)]
    assert contents[0] == "slept"
    assert int(contents[1]) > limits.timeout  # the harness's CPU rlimit: the timeout + 1 s
    assert [given for given, _ in passed] == [limits, limits]  # the same limits, the same workers
    first, late = (wall for _, wall in passed)
    assert late < first - 1.0 and first <= settings.tool_turn_seconds


@pytest.mark.parametrize(
    ("turn", "rollout", "which"), [(1.5, 30.0, "turn"), (15.0, 1.5, "rollout")]
)
def test_an_endless_program_is_cut_when_its_turns_time_runs_out(turn, rollout, which):
    """With a CPU timeout longer than the turn (or the rollout's time left), an endless program
    is stopped at the time left, and the model is told which time it ran out of."""
    settings = ToolSettings(sandbox=sandbox_limits(timeout=30.0), tool_turn_seconds=turn,
                            tool_rollout_seconds=rollout)  # fmt: skip
    environment = PythonEnvironment(settings)
    run(environment, "print('up')")  # the worker started before the clock does
    environment.reset()
    start = time.monotonic()
    with pytest.raises(ToolError) as raised:
        run(environment, "while 1: 0")
    assert time.monotonic() - start < 1.5 + 1.0  # the CPU timeout would be 30 s
    assert (
        str(raised.value)
        == f"ran out of the {which}'s time (1.5 s for all of a {which}'s tool calls)"
    )
    assert environment.failures == 1 and environment.episode_budget_cuts == 1


def test_long_output_is_cut_with_a_marker(limits):
    environment = PythonEnvironment(ToolSettings(sandbox=limits, tool_output_chars=40))
    assert run(environment, "print('x' * 40)") == "x" * 40
    assert run(environment, "print('y' * 41)") == "y" * 40 + "\n[... cut at 40 characters]"
    endless = run(environment, "while True:\n    print('z' * 1000)")  # stopped, not timed out
    assert endless == "z" * 40 + "\n[... cut at 40 characters]"


def test_reset_starts_an_episode(python_env):
    run(python_env, "print(1)")
    with pytest.raises(ToolError):
        run(python_env, "raise ValueError('bad')")
    assert python_env.reset(question="q", answer="1", prompt=[]) is None
    assert (python_env.episode_calls, python_env.episode_failures) == (0, 0)
    assert (python_env.calls, python_env.failures) == (2, 1)


# --- lookup: search and open over a BM25 index ------------------------------------------------


def test_search_lists_the_best_documents(lookup):
    lines = lookup.search("When did the Narrows Bridge open?").splitlines()
    assert 1 <= len(lines) <= lookup.settings.search_results
    hits = [HIT.match(line) for line in lines]
    assert all(hits), lines
    assert hits[0]["id"] == "narrows-bridge" and hits[0]["title"] == "Narrows Bridge"
    assert len(hits[0]["snippet"]) <= lookup_env.SNIPPET_CHARS
    assert lookup.search("festivals")  # plural finds "festival"
    assert "[lantern-tide-festival]" in lookup.search("lantern festivals")


def test_search_without_matches_and_with_nothing_to_search(lookup):
    nothing = "no documents match 'zeppelin quasar'; try other keywords"
    assert lookup.search("zeppelin quasar") == nothing
    assert lookup.search("the of and").startswith("no documents match")  # only stopwords
    with pytest.raises(ToolError, match="empty query"):
        lookup.search("  ")
    assert (lookup.calls, lookup.failures) == (3, 1)


def test_open_reads_a_document(lookup):
    text = lookup.open("quell-light")
    assert text.startswith("Quell Light\n") and "built in 1821" in text
    assert lookup.open(" [quell-light] ") == text  # the id as search shows it
    message = execute(tool_dict(lookup), call("open", doc_id="lighthouse"))
    assert message["content"] == str({"error": "no document 'lighthouse'; use an id from search"})
    assert lookup.opened == ["quell-light", "quell-light"]
    lookup.reset(question="q")
    assert lookup.opened == [] and lookup.episode_calls == 0 and lookup.calls == 3


def test_lookup_output_is_cut_with_a_marker():
    short = LookupEnvironment(ToolSettings(sandbox=LIMITS, tool_output_chars=30))
    assert short.open("ivel").endswith("\n[... cut at 30 characters]")
    assert len(short.search("Ivel orchards")) == 30 + len("\n[... cut at 30 characters]")


def test_tool_messages_never_echo_a_whole_argument(lookup):
    """Issue 25 #10: a 10,000-character argument came back whole in "no document ..." (10,041
    characters); every message, errors included, is cut to tool_output_chars."""
    limit = lookup.settings.tool_output_chars
    marker = len(f"\n[... cut at {limit} characters]")
    tools = tool_dict(lookup)
    for name, argument in (("open", "doc_id"), ("search", "query")):
        content = execute(tools, call(name, **{argument: "zq" * 5000}))["content"]
        assert len(content) <= limit + marker + len(str({"error": ""})), (name, len(content))
        assert "zqzq" in content and "..." in content
    short = LookupEnvironment(ToolSettings(sandbox=LIMITS, tool_output_chars=20))
    with pytest.raises(ToolError) as error:
        short.open("x" * 10_000)
    assert str(error.value) == "no document 'xxxxxxx\n[... cut at 20 characters]"


def test_program_errors_are_cut_too(limits):
    environment = PythonEnvironment(ToolSettings(sandbox=limits, tool_output_chars=40))
    with pytest.raises(ToolError) as error:
        run(environment, "raise ValueError('v' * 10_000)")
    assert str(error.value) == "ValueError: " + "v" * 28 + "\n[... cut at 40 characters]"


def write_corpus(path: Path, documents: list[dict]) -> str:
    path.write_text("".join(json.dumps(d) + "\n" for d in documents), encoding="utf-8")
    return str(path)


DOCS = [{"id": "a", "title": "Alpha", "text": "apples grow on the hill"},
        {"id": "b", "title": "Beta", "text": "boats sail in the bay"}]  # fmt: skip


def test_the_index_is_built_once_and_shared(tmp_path):
    settings = ToolSettings(sandbox=LIMITS, corpus=write_corpus(tmp_path / "kb.jsonl", DOCS))
    before = lookup_env._load.cache_info().misses
    instances = [LookupEnvironment(settings) for _ in range(4)]
    assert lookup_env._load.cache_info().misses == before + 1
    assert all(instance.corpus is instances[0].corpus for instance in instances)
    assert instances[0].search("boats").startswith("[b] Beta: boats")
    stat = os.stat(settings.corpus)
    write_corpus(tmp_path / "kb.jsonl", [*DOCS, {"id": "c", "title": "Gamma", "text": "goats"}])
    os.utime(settings.corpus, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert LookupEnvironment(settings).open("c") == "Gamma\ngoats"  # an edited file: rebuilt


def test_a_csv_corpus_with_its_own_columns(tmp_path):
    path = tmp_path / "kb.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["doc", "heading", "body"])
        writer.writerow([1, "Harbour", "The harbour holds forty boats."])
        writer.writerow([2, "Hill", "The hill is green."])
    settings = ToolSettings(sandbox=LIMITS, corpus=str(path), corpus_id_column="doc",
                            corpus_title_column="heading", corpus_text_column="body")  # fmt: skip
    environment = LookupEnvironment(settings)
    assert environment.search("boats") == "[1] Harbour: The harbour holds forty boats."
    assert environment.open("2") == "Hill\nThe hill is green."


@pytest.mark.parametrize(
    ("documents", "fields", "expected"),
    [
        (DOCS, {"corpus_text_column": "body"}, r"no column 'body' .*set `corpus_text_column`"),
        (DOCS, {"corpus_id_column": "key"}, r"no column 'key' .*set `corpus_id_column`"),
        ([*DOCS, {"id": "c", "title": "", "text": "x"}], {}, r"row 3: column 'title' .* empty"),
        ([*DOCS, {"id": "a", "title": "A", "text": "x"}], {}, r"row 3: duplicate document id 'a'"),
    ],
    ids=["text-column", "id-column", "empty-title", "duplicate-id"],
)
def test_corpus_problems_are_one_clear_line(tmp_path, documents, fields, expected):
    corpus = write_corpus(tmp_path / "kb.jsonl", documents)
    with pytest.raises(DataError, match=expected) as error:
        LookupEnvironment(ToolSettings(sandbox=LIMITS, corpus=corpus, **fields))
    assert str(error.value).startswith(corpus) and "\n" not in str(error.value)


def test_a_missing_corpus_names_the_file_and_the_field(tmp_path):
    missing = str(tmp_path / "kb.jsonl")
    with pytest.raises(DataError) as error:
        LookupEnvironment(ToolSettings(sandbox=LIMITS, corpus=missing))
    assert str(error.value).startswith(missing) and "set `corpus`" in str(error.value)


# --- the sample data --------------------------------------------------------------------------


def test_sample_corpus_is_a_small_consistent_knowledge_base():
    with open(CORPUS, encoding="utf-8") as handle:
        documents = [json.loads(line) for line in handle]
    assert 25 <= len(documents) <= 40
    assert len({d["id"] for d in documents}) == len(documents)
    for document in documents:
        assert set(document) == {"id", "title", "text"}
        assert 40 <= len(document["text"].split()) <= 120, document["id"]


def test_sample_tools_rows():
    rows = sample_rows()
    assert len(rows) == 24
    assert [r["environment"] for r in rows].count("python") == 12
    assert [r["environment"] for r in rows].count("lookup") == 12
    for row in rows:
        assert set(row) == {"environment", "question", "answer", "ideal_calls"}
        calls = tool_calls(row["ideal_calls"])
        names = [c["function"]["name"] for c in calls]
        assert names == (["run_python"] if row["environment"] == "python" else ["search", "open"])
    verdicts = [row["answer"] for row in rows if row["answer"] in VERDICTS]
    assert len(verdicts) == 4 and set(verdicts) == set(VERDICTS)


def test_every_ideal_program_prints_its_answer(limits):
    environment = PythonEnvironment(ToolSettings(sandbox=limits))
    tools = tool_dict(environment)
    for row in sample_rows():
        if row["environment"] == "python":
            (ideal,) = tool_calls(row["ideal_calls"])
            message = execute(tools, ideal)
            assert message["content"] == row["answer"], (row["question"], message)


def test_every_ideal_lookup_finds_and_opens_its_document(lookup):
    tools = tool_dict(lookup)
    for row in sample_rows():
        if row["environment"] != "lookup":
            continue
        search, opening = tool_calls(row["ideal_calls"])
        hits = execute(tools, search)["content"]
        found = [HIT.match(line)["id"] for line in hits.splitlines()]
        assert opening["function"]["arguments"]["doc_id"] in found, (row["question"], hits)
        document = execute(tools, opening)["content"]
        assert not is_error(document)
        if row["answer"] not in VERDICTS:
            assert row["answer"] in document, (row["question"], document)


# --- the agent loop outside training (environments/episodes.py: evaluate, infer) -------------


class ScriptedModel:
    """Stands in for a model in `run_episodes`: each `generate` call answers with the next
    scripted turn's token ids (as the chat template renders it), after the prompt."""

    device = "cpu"

    def __init__(self, turns: list[list[int]]):
        self.turns = list(turns)
        self.prompts: list[str] = []

    def generate(self, input_ids, attention_mask, max_new_tokens, pad_token_id, **kwargs):
        import torch

        turn = self.turns.pop(0)[:max_new_tokens]
        rows = [row.tolist() + turn for row in input_ids]
        return torch.tensor(rows)


def rendered_turn(tokenizer, prompt, tools, message) -> list[int]:
    """Token ids of an assistant turn as the template TRL trains with writes it."""
    from grpo_kit.environments import episodes

    kwargs = episodes.chat_kwargs(tokenizer)
    _, text = episodes.assistant_turn(tokenizer, prompt, message, tools, kwargs)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def test_the_agent_loop_parses_runs_and_appends_like_trl(tiny_tokenizer, limits):
    """A model that calls `run_python` then answers: the call is parsed with TRL's parser, run
    in the sandbox, its result appended, and the final answer read by the rewards."""
    from grpo_kit.environments import rollout_calls, tool_methods
    from grpo_kit.environments.episodes import run_episodes
    from grpo_kit.generation import Decoding
    from grpo_kit.rewards import call_like_trl
    from grpo_kit.starters.tools.rewards import tool_answer_correctness

    environment = PythonEnvironment(ToolSettings(sandbox=limits))
    tools = tool_methods(environment)
    prompt = [{"role": "user", "content": "What is 6 times 7?"}]
    call = {"type": "function", "function": {"name": "run_python",
                                             "arguments": {"code": "print(6 * 7)"}}}  # fmt: skip
    first = rendered_turn(tiny_tokenizer, prompt, tools,
                          {"role": "assistant", "content": "", "tool_calls": [call]})  # fmt: skip
    answer = {"role": "assistant", "content": "<answer>42</answer>"}
    second = rendered_turn(tiny_tokenizer, prompt, tools, answer)
    model = ScriptedModel([first, second])
    [rollout] = run_episodes(
        model, tiny_tokenizer, [prompt], [environment], [{}], Decoding(), 512, 3
    )
    assert [m["role"] for m in rollout] == ["assistant", "tool", "assistant"]
    assert rollout[0]["tool_calls"][0]["function"]["name"] == "run_python"
    assert rollout[1]["content"] == "42" and environment.calls == 1
    assert len(rollout_calls(rollout)) == 1
    row = {"answer": "42", "environment": "python"}
    assert call_like_trl(tool_answer_correctness, [rollout], [row]) == [1.0]


def test_the_agent_loop_stops_at_the_turn_cap(tiny_tokenizer, limits):
    from grpo_kit.environments import tool_methods
    from grpo_kit.environments.episodes import run_episodes
    from grpo_kit.generation import Decoding

    environment = PythonEnvironment(ToolSettings(sandbox=limits))
    prompt = [{"role": "user", "content": "loop"}]
    call = {"type": "function", "function": {"name": "run_python",
                                             "arguments": {"code": "print(1)"}}}  # fmt: skip
    turn = rendered_turn(tiny_tokenizer, prompt, tool_methods(environment),
                         {"role": "assistant", "content": "", "tool_calls": [call]})  # fmt: skip
    model = ScriptedModel([turn] * 5)
    [rollout] = run_episodes(model, tiny_tokenizer, [prompt], [environment], [{}], Decoding(),
                             4096, 2)  # fmt: skip
    assert sum(m["role"] == "assistant" for m in rollout) == 3  # 2 tool-calling turns + 1
    assert environment.calls == 2


def test_interactive_chat_calls_the_tools_and_prints_each_step(
    tiny_tokenizer, limits, monkeypatch, capsys
):
    """`infer --interactive`: each typed line is a user turn; the model's calls really run and
    every call and result is printed as it happens; an empty line ends the chat."""
    from types import SimpleNamespace

    from grpo_kit import answering
    from grpo_kit.environments import tool_methods
    from grpo_kit.generation import Decoding

    settings = ToolSettings(sandbox=limits)
    prompt = [{"role": "user", "content": "What is 6 times 7?"}]
    tools = tool_methods(PythonEnvironment(settings))
    call = {"type": "function", "function": {"name": "run_python",
                                             "arguments": {"code": "print(6 * 7)"}}}  # fmt: skip
    first = rendered_turn(tiny_tokenizer, prompt, tools,
                          {"role": "assistant", "content": "", "tool_calls": [call]})  # fmt: skip
    second = rendered_turn(tiny_tokenizer, prompt, tools,
                           {"role": "assistant", "content": "<answer>42</answer>"})  # fmt: skip
    lines = iter(["What is 6 times 7?", ""])
    monkeypatch.setattr("builtins.input", lambda _: next(lines))
    args = SimpleNamespace(
        agent=(lambda: PythonEnvironment(settings), 3), system_prompt="", decoding=Decoding(),
        max_new_tokens=512, chat_template_kwargs={},
    )  # fmt: skip
    [rollout] = answering.interactive(ScriptedModel([first, second]), tiny_tokenizer, args)
    shown = capsys.readouterr().out
    assert '[calls run_python({"code": "print(6 * 7)"})]' in shown
    assert "[run_python -> 42]" in shown and "<answer>42</answer>" in shown
    assert [m["role"] for m in rollout] == ["assistant", "tool", "assistant"]
