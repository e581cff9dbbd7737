"""The `python` environment: one tool, `run_python`, that runs a program in the code sandbox."""

from __future__ import annotations

from ..sandbox import MAX_OUTPUT_CHARS, run_code
from .base import Environment, ToolError, ToolSettings, clip

NO_OUTPUT = "(no output: print the result)"


class PythonEnvironment(Environment):
    """Runs the model's Python in the code task's sandbox (same isolation, seccomp filter, rlimits
    and timeout). Each call is a fresh program: nothing carries over between calls."""

    def __init__(self, settings: ToolSettings):
        super().__init__(settings)
        settings.sandbox.level()  # no sandbox here: SandboxUnavailable (with the fix) now

    def run_python(self, code: str) -> str:
        """Run Python code and return what it prints.

        Each call runs a fresh program with the standard library only (no files, network or
        variables kept from earlier calls), so define everything it uses and print the result.

        Args:
            code: A complete Python program, e.g. "print(17 * 23)".

        Returns:
            What the program printed (its standard output and error).
        """
        with self._counting():
            limit = self.settings.tool_output_chars
            room = min(limit + 1, MAX_OUTPUT_CHARS)  # + the last line's end, stripped below
            run = run_code(str(code), self.settings.sandbox, max_output_chars=room)
            if run.timed_out:
                raise ToolError(f"timed out after {self.settings.sandbox.timeout:g} s")
            if run.error:
                raise ToolError(run.error)
            if not run.output.strip():
                return NO_OUTPUT
            return clip(run.output.rstrip(), limit, cut=run.truncated)
