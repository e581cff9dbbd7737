"""What every tool environment shares: its settings, the error a tool raises, the call counters
and the cut of long tool output."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..errors import UserError
from ..sandbox import MAX_OUTPUT_CHARS, Limits, SandboxArguments, sandbox_limits


@dataclass(frozen=True)
class ToolSettings:
    """The tools' settings (recipe fields of the same names), passed to each environment."""

    sandbox: Limits = field(default_factory=Limits)  # where `run_python` runs programs
    corpus: str = "data/sample_corpus.jsonl"  # the knowledge base of `search` and `open`
    corpus_id_column: str = "id"
    corpus_title_column: str = "title"
    corpus_text_column: str = "text"
    search_results: int = 3  # most hits one `search` returns
    tool_output_chars: int = 600  # longest tool result shown to the model; longer is cut

    def __post_init__(self):
        if not 1 <= self.tool_output_chars <= MAX_OUTPUT_CHARS:
            raise UserError(
                f"tool_output_chars must be 1..{MAX_OUTPUT_CHARS}, got {self.tool_output_chars}"
            )
        if self.search_results < 1:
            raise UserError(f"search_results must be at least 1, got {self.search_results}")


@dataclass
class ToolArguments(SandboxArguments):
    """Recipe fields of the shipped environments: the lookup tools' knowledge base and results,
    the cut of long tool output, and the sandbox (`sandbox_*`) that runs `run_python`."""

    corpus: str = field(
        default="data/sample_corpus.jsonl",
        metadata={"help": "the lookup tools' documents (JSONL/CSV)"},
    )
    corpus_id_column: str = field(default="id", metadata={"help": "document id column"})
    corpus_title_column: str = field(default="title", metadata={"help": "document title column"})
    corpus_text_column: str = field(default="text", metadata={"help": "document text column"})
    search_results: int = field(default=3, metadata={"help": "hits one search returns"})
    tool_output_chars: int = field(
        default=600, metadata={"help": "longest tool result the model sees"}
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
    )


class ToolError(Exception):
    """A tool was misused or failed; TRL shows the model `{'error': '<message>'}`."""


def clip(text: str, limit: int, cut: bool = False) -> str:
    """`text` up to `limit` characters, with a marker saying so when it was longer (or `cut`:
    the text was already shortened before it got here)."""
    if len(text) <= limit and not cut:
        return text
    return f"{text[:limit]}\n[... cut at {limit} characters]"


class Environment:
    """Base of the tool environments: `reset` and the call counters. A subclass's public methods
    are its tools (TRL lists them on the class, skipping `reset`, `get_reward` and `_names`)."""

    def __init__(self, settings: ToolSettings):
        self.settings = settings
        self.calls = 0  # tool calls over this instance's life (TRL reuses instances)
        self.failures = 0  # of which raised (the model saw an error)
        self.episode_calls = 0  # tool calls since the last reset
        self.episode_failures = 0

    def reset(self, **row) -> None:
        """Start an episode; `row` holds the data row's columns (TRL passes them all)."""
        self.episode_calls = 0
        self.episode_failures = 0

    @contextlib.contextmanager
    def _counting(self) -> Iterator[None]:
        """Count one tool call, and a failure when it raises."""
        self.calls += 1
        self.episode_calls += 1
        try:
            yield
        except Exception:
            self.failures += 1
            self.episode_failures += 1
            raise
