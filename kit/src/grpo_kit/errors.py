"""The errors a user can fix: each message says what is wrong and how to fix it, and `runner.run`
prints it as one line (exit code 2) instead of a traceback."""

from __future__ import annotations

__all__ = [
    "DataError",
    "Interrupted",
    "ModelError",
    "UserError",
    "hub_hint",
]


class UserError(Exception):
    """A problem with the input (recipe, data, paths) that the message explains how to fix."""


class DataError(UserError):
    """The data cannot be used as configured (the message names the file, row and column)."""


class ModelError(UserError):
    """The model or tokenizer cannot be loaded as configured."""


class Interrupted(Exception):  # noqa: N818 - a stop, not an error
    """Training stopped on a signal after saving a checkpoint; carries the exit code."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def hub_hint(name: str, err: Exception) -> str:
    """Why a model could not load, with what usually fixes it."""
    return (
        f"cannot load '{name}': {err}. If it is a Hub id, check the spelling and your network; a "
        "gated model (Llama, Gemma) needs its licence accepted on the Hub and `hf auth login` "
        "(or HF_TOKEN). For an offline run use --smoke, or a local folder."
    )
