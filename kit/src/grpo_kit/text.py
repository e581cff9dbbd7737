"""Model text made safe to show: on a terminal (`for_terminal`) and in markdown (`markdown_code`).

A completion is written by the policy, and a prompt often comes from data: either can hold
terminal escape sequences (OSC 52 writes the clipboard, CSI `2J` clears the screen, OSC 8 hides a
link) or HTML (a remote `<img>` fetched when report.md is rendered, an unclosed `<details>` that
swallows the rest of it). Everything the kit prints or writes into a report from model text
passes through one of these two functions; what they keep reads the same.
"""

from __future__ import annotations

import re

__all__ = ["for_terminal", "guard_trl_sample_print", "markdown_code"]

# Escape sequences: OSC, DCS, SOS, PM and APC strings up to their terminator (BEL or ST; an
# unterminated one up to the end of its line, so the rest of the text still shows), CSI
# sequences, and the two-character escapes; in their 7-bit (ESC ...) and 8-bit (C1) forms.
_ESCAPE_RE = re.compile(
    r"(?:\x1b[\]P^_X]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
    r"|(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|\x1b[ -/]*[0-~]?"
)
# Control characters left once the sequences are gone: C0 but tab and newline, DEL, C1.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def for_terminal(text: object) -> str:
    """The text without terminal escape sequences or control characters (newlines and tabs
    kept; a carriage return ends a line only as part of `\\r\\n`), safe to print."""
    value = str(text).replace("\r\n", "\n")
    return _CONTROL_RE.sub("", _ESCAPE_RE.sub("", value))


def markdown_code(text: object) -> str:
    """The text as one markdown inline code span: rendered literally (no HTML, no markdown),
    on one line, control characters dropped. The fence is one backtick longer than the
    longest run of backticks inside."""
    value = " ".join(for_terminal(text).split())
    if not value:
        return "(empty)"
    fence = "`" * (1 + max((len(run) for run in re.findall(r"`+", value)), default=0))
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def _shown(value):
    """A prompt or completion as TRL logs it (a text, or chat messages), for the terminal."""
    if isinstance(value, list):
        return [
            {k: for_terminal(v) if k == "content" and isinstance(v, str) else v
             for k, v in m.items()} if isinstance(m, dict) else _shown(m)
            for m in value
        ]  # fmt: skip
    return for_terminal(value) if isinstance(value, str) else value


def guard_trl_sample_print() -> None:
    """Make the sample of completions GRPOTrainer prints at each logging step (`log_completions`:
    TRL's `print_prompt_completions_sample`, through rich, which keeps ESC) print its prompts
    and completions through `for_terminal`. Idempotent; the logged tables keep the raw text."""
    from trl.trainer import grpo_trainer

    printer = grpo_trainer.print_prompt_completions_sample
    if getattr(printer, "for_terminal", False):
        return

    def safe_print(prompts, completions, *args, **kwargs):
        return printer([_shown(p) for p in prompts], [_shown(c) for c in completions],
                       *args, **kwargs)  # fmt: skip

    safe_print.for_terminal = True
    grpo_trainer.print_prompt_completions_sample = safe_print
