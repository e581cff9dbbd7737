"""What every tool environment shares: its settings, the error a tool raises, the call counters,
the tools' time budget and the cut of long tool output."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..errors import UserError
from ..sandbox import MAX_OUTPUT_CHARS, Limits, SandboxArguments, sandbox_limits

logger = logging.getLogger(__name__)

# The tools' time budget (recipe fields tool_turn_seconds, tool_rollout_seconds,
# tool_step_seconds), wall-clock seconds: a turn's programs run one per sandbox worker at a time,
# and a turn of these defaults has room for a program per worker that uses all of the sandbox's
# default 5 CPU s. TRL runs a step's rollouts one after another, so without a step's budget a
# step of 4 rollouts could wait 4 x 30 s for tools.
TURN_SECONDS = 15.0
ROLLOUT_SECONDS = 30.0
STEP_SECONDS = 60.0


class StepClock:
    """The tool time of one generation step, shared by every environment made from the same
    settings (TRL's pool for the run). TRL resets all of a step's environments before any of its
    tool calls, so a reset that comes after a tool call starts the next step's clock. When the
    step's time is spent, its remaining calls are cut, and the log says so once per step."""

    def __init__(self):
        self.lock = threading.Lock()
        self.spent = 0.0  # wall-clock seconds of tool calls in this step
        self.called = False  # a tool call was made since the last reset
        self.cuts = 0  # calls of this step cut by the step's budget
        self.steps = 0  # steps seen (for the log)

    def on_reset(self) -> None:
        with self.lock:
            if self.called:
                self.spent, self.called, self.cuts = 0.0, False, 0
                self.steps += 1

    def touch(self) -> None:
        with self.lock:
            self.called = True

    def charge(self, seconds: float) -> None:
        with self.lock:
            self.spent += seconds
            self.called = True

    def cut(self, budget: float) -> None:
        """Count a call cut by the step's budget; the first of a step is logged."""
        with self.lock:
            self.cuts += 1
            first = self.cuts == 1
        if first:
            logger.warning(
                "tools: this step's %g s of tool time (tool_step_seconds) is spent after %.1f s; "
                "its remaining tool calls are not run (raise tool_step_seconds, or lower "
                "max_tool_calling_iterations or the rollouts per step)",
                budget,
                self.spent,
            )


# The tools' defaults, once: the recipe fields (ToolArguments) and the settings (ToolSettings).
CORPUS = "data/sample_corpus.jsonl"
CORPUS_COLUMNS = {"id": "id", "title": "title", "text": "text"}
SEARCH_RESULTS = 3
TOOL_OUTPUT_CHARS = 600


@dataclass(frozen=True)
class ToolSettings:
    """The tools' settings (recipe fields of the same names), passed to each environment."""

    sandbox: Limits = field(default_factory=Limits)  # where `run_python` runs programs
    corpus: str = CORPUS  # the knowledge base of `search` and `open`
    corpus_id_column: str = CORPUS_COLUMNS["id"]
    corpus_title_column: str = CORPUS_COLUMNS["title"]
    corpus_text_column: str = CORPUS_COLUMNS["text"]
    search_results: int = SEARCH_RESULTS  # most hits one `search` returns
    tool_output_chars: int = TOOL_OUTPUT_CHARS  # longest tool result (or error) shown to the model
    tool_turn_seconds: float = TURN_SECONDS  # wall-clock seconds for one turn's calls, together
    tool_rollout_seconds: float = ROLLOUT_SECONDS  # wall-clock seconds for a rollout's calls
    tool_step_seconds: float = STEP_SECONDS  # wall-clock seconds for all calls of a step
    step_clock: StepClock = field(default_factory=StepClock, compare=False, repr=False)

    def __post_init__(self):
        if not 1 <= self.tool_output_chars <= MAX_OUTPUT_CHARS:
            raise UserError(
                f"tool_output_chars must be 1..{MAX_OUTPUT_CHARS}, got {self.tool_output_chars}"
            )
        if self.search_results < 1:
            raise UserError(f"search_results must be at least 1, got {self.search_results}")
        for name in ("tool_turn_seconds", "tool_rollout_seconds", "tool_step_seconds"):
            if not getattr(self, name) > 0:
                raise UserError(f"{name} must be more than 0 seconds, got {getattr(self, name)}")


@dataclass
class ToolArguments(SandboxArguments):
    """Recipe fields of the shipped environments: the lookup tools' knowledge base and results,
    the cut of long tool output, and the sandbox (`sandbox_*`) that runs `run_python`."""

    corpus: str = field(
        default=CORPUS,
        metadata={"help": "the lookup tools' documents (JSONL/CSV)"},
    )
    corpus_id_column: str = field(
        default=CORPUS_COLUMNS["id"], metadata={"help": "document id column"}
    )
    corpus_title_column: str = field(
        default=CORPUS_COLUMNS["title"], metadata={"help": "document title column"}
    )
    corpus_text_column: str = field(
        default=CORPUS_COLUMNS["text"], metadata={"help": "document text column"}
    )
    search_results: int = field(
        default=SEARCH_RESULTS, metadata={"help": "hits one search returns"}
    )
    tool_output_chars: int = field(
        default=TOOL_OUTPUT_CHARS,
        metadata={"help": "longest tool result (or error) the model sees"},
    )
    tool_turn_seconds: float = field(
        default=TURN_SECONDS,
        metadata={"help": "seconds for all tool calls of one turn; later calls are cut"},
    )
    tool_rollout_seconds: float = field(
        default=ROLLOUT_SECONDS,
        metadata={"help": "seconds for all tool calls of one rollout; later calls are cut"},
    )
    tool_step_seconds: float = field(
        default=STEP_SECONDS,
        metadata={
            "help": "seconds for all tool calls of one step (all its rollouts, which TRL runs "
            "one after another); later calls are cut, and the log says so"
        },
    )


def tool_settings(args: ToolArguments) -> ToolSettings:
    """The environments' settings from the recipe (the sandbox checked now)."""
    return ToolSettings(
        sandbox=sandbox_limits(args),
        corpus=args.corpus,
        corpus_id_column=args.corpus_id_column,
        corpus_title_column=args.corpus_title_column,
        corpus_text_column=args.corpus_text_column,
        search_results=args.search_results,
        tool_output_chars=args.tool_output_chars,
        tool_turn_seconds=args.tool_turn_seconds,
        tool_rollout_seconds=args.tool_rollout_seconds,
        tool_step_seconds=args.tool_step_seconds,
    )


class ToolError(Exception):
    """A tool was misused or failed; TRL shows the model `{'error': '<message>'}` (cut to
    `tool_output_chars`)."""


# The start of the error a call cut by the time budget gets (TRL's error form, so the rewards
# that count failed calls count it: `is_budget_cut` recognises it): not run at all, or stopped
# while running when its turn's or rollout's time ran out.
BUDGET_CUT = "not run: "
WALL_CUT = "ran out of the "


def wall_cut_message(which: str, seconds: float) -> str:
    """The error of a call stopped while running because its turn's, rollout's or step's time
    ran out."""
    return f"{WALL_CUT}{which}'s time ({seconds:g} s for all of a {which}'s tool calls)"


def budget_cut_message(settings: ToolSettings) -> str:
    """The error a call gets when it is not run because its turn's or rollout's time is spent."""
    return (
        f"{BUDGET_CUT}the time for tool calls is spent ({settings.tool_turn_seconds:g} s a turn, "
        f"{settings.tool_rollout_seconds:g} s a rollout, {settings.tool_step_seconds:g} s a "
        "step); make fewer calls, and faster ones"
    )


def clip(text: str, limit: int, cut: bool = False) -> str:
    """`text` up to `limit` characters, with a marker saying so when it was longer (or `cut`:
    the text was already shortened before it got here)."""
    if len(text) <= limit and not cut:
        return text
    return f"{text[:limit]}\n[... cut at {limit} characters]"


def quoted(value: object, limit: int = 60) -> str:
    """A value the model passed, quoted for an error message: its repr, cut at `limit`
    characters (an argument of 10,000 characters is not echoed back whole)."""
    text = repr(str(value))
    return text if len(text) <= limit else text[: limit - 4] + "...'"


class Environment:
    """Base of the tool environments: `reset`, the call counters and the tools' time budget. A
    subclass's public methods are its tools (TRL lists them on the class, skipping `reset`,
    `get_reward` and `_names`).

    The calls of one rollout share `tool_rollout_seconds` of wall-clock time, and all calls of
    one step (every rollout of it, across instances: `StepClock`) `tool_step_seconds`: a call
    made once either is spent is not run, and the model gets `budget_cut_message` as the call's
    error (a failed call, which the rewards see). The python environment also bounds each turn's
    calls together (`tool_turn_seconds`) and gives each program at most the time left."""

    def __init__(self, settings: ToolSettings):
        self.settings = settings
        self.calls = 0  # tool calls over this instance's life (TRL reuses instances)
        self.failures = 0  # of which raised (the model saw an error)
        self.budget_cuts = 0  # of which the time budget cut: not run, or stopped when it ran out
        self.episode_calls = 0  # tool calls since the last reset
        self.episode_failures = 0
        self.episode_budget_cuts = 0
        self.episode_seconds = 0.0  # wall-clock time of the tool calls since the last reset

    def reset(self, **row) -> None:
        """Start an episode; `row` holds the data row's columns (TRL passes them all)."""
        self.episode_calls = 0
        self.episode_failures = 0
        self.episode_budget_cuts = 0
        self.episode_seconds = 0.0
        self.settings.step_clock.on_reset()

    def _time_left(self) -> tuple[float, str]:
        """(what is left of the time for tool calls, whose: "rollout" or "step")."""
        rollout = self.settings.tool_rollout_seconds - self.episode_seconds
        step = self.settings.tool_step_seconds - self.settings.step_clock.spent
        return (rollout, "rollout") if rollout <= step else (step, "step")

    def _seconds_left(self) -> float:
        """What is left of this rollout's (and its step's) time for tool calls."""
        return self._time_left()[0]

    def _spend(self, seconds: float) -> None:
        """Count a call's wall-clock time against its rollout and its step."""
        self.episode_seconds += seconds
        self.settings.step_clock.charge(seconds)

    def _cut(self) -> ToolError:
        """The error of a call not run because the time budget is spent (counted; a cut by the
        step's budget, the tighter one now, is logged once per step)."""
        self.budget_cuts += 1
        self.episode_budget_cuts += 1
        if self._time_left()[1] == "step":
            self.settings.step_clock.cut(self.settings.tool_step_seconds)
        return ToolError(budget_cut_message(self.settings))

    def _wall_cut(self, which: str, seconds: float) -> ToolError:
        """The error of a call stopped while running when its turn's or rollout's time ran out
        (counted as a budget cut too)."""
        self.budget_cuts += 1
        self.episode_budget_cuts += 1
        if which == "step":
            self.settings.step_clock.cut(seconds)
        return ToolError(wall_cut_message(which, seconds))

    @contextlib.contextmanager
    def _counting(self, timed: bool = True) -> Iterator[None]:
        """Count one tool call, and a failure when it raises (its message cut to
        `tool_output_chars`). `timed`: the call is refused once the rollout's time is spent, and
        its time counts against it (False: the caller keeps the time itself)."""
        self.calls += 1
        self.episode_calls += 1
        self.settings.step_clock.touch()
        start = time.monotonic()
        try:
            if timed and self._seconds_left() <= 0:
                raise self._cut()
            yield
        except ToolError as err:
            self.failures += 1
            self.episode_failures += 1
            raise ToolError(clip(str(err), self.settings.tool_output_chars)) from None
        except Exception as err:
            self.failures += 1
            self.episode_failures += 1
            limit = self.settings.tool_output_chars
            if len(str(err)) > limit:
                raise ToolError(clip(str(err), limit)) from err
            raise
        finally:
            if timed:
                self._spend(time.monotonic() - start)
