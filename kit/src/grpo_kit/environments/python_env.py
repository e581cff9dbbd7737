"""The `python` environment: one tool, `run_python`, that runs a program in the code sandbox.

`run_python` is a coroutine, so TRL runs the calls of one turn together (it gathers a turn's
async tool calls): they go to the sandbox as one batch, spread over its workers
(`sandbox_workers`), instead of one after another on one worker. The batch runs in waves of one
program per worker. Each program keeps the sandbox's CPU timeout (`sandbox_timeout`, the same
for the first call of a turn and the last) and gets the time left as a wall-clock cap
(`run_programs(wall_seconds=...)`): a program still running when its turn's or rollout's time
runs out is stopped then, and the model is told which time it ran out of. The calls of a turn
take at most `tool_turn_seconds`, those of a rollout `tool_rollout_seconds`, those of a whole
step (all its rollouts) `tool_step_seconds` (the workers' start, once per process, aside), and
the calls left when the time is spent are not run (the model gets the budget's error).
"""

from __future__ import annotations

import asyncio
import time

from ..sandbox import MAX_OUTPUT_CHARS, run_programs
from .base import Environment, ToolError, ToolSettings, clip

NO_OUTPUT = "(no output: print the result)"
RESERVE_S = 0.25  # of the time left, kept back when a program's wall cap is set (its overhead)
MIN_PROGRAM_S = 0.1  # a program is not started with less wall-clock time than this left


class PythonEnvironment(Environment):
    """Runs the model's Python in the code task's sandbox (same isolation, seccomp filter, rlimits
    and timeout). Each call is a fresh program: nothing carries over between calls."""

    def __init__(self, settings: ToolSettings):
        super().__init__(settings)
        settings.sandbox.level()  # no sandbox here: SandboxUnavailable (with the fix) now
        self._turn: list[tuple[str, asyncio.Future]] = []  # this turn's calls, not yet run

    def reset(self, **row) -> None:
        super().reset(**row)
        self._turn = []

    async def run_python(self, code: str) -> str:
        """Run Python code and return what it prints.

        Each call runs a fresh program with the standard library only (no files, network or
        variables kept from earlier calls), so define everything it uses and print the result.

        Args:
            code: A complete Python program, e.g. "print(17 * 23)".

        Returns:
            What the program printed (its standard output and error).
        """
        future = asyncio.get_running_loop().create_future()
        self._turn.append((str(code), future))
        if len(self._turn) == 1:
            # The turn's first call runs the turn: one step of the event loop lets the calls
            # gathered with it (TRL starts them together) join, then they run as one batch.
            await asyncio.sleep(0)
            batch, self._turn = self._turn, []
            try:
                outcomes = await asyncio.to_thread(self._run_turn, [c for c, _ in batch])
            except Exception as err:  # the sandbox broke down: every call of the turn says so
                outcomes = [err] * len(batch)
            for (_, waiting), outcome in zip(batch, outcomes, strict=True):
                waiting.set_result(outcome)
        outcome = await future
        with self._counting(timed=False):  # the turn's time was counted by _run_turn
            return self._message(outcome)

    def _run_turn(self, sources: list[str]) -> list:
        """Run one turn's programs in waves of one per sandbox worker, within the turn's and the
        rollout's time: each with the sandbox's CPU timeout and the time left as its wall cap.
        A (CodeRun, which time capped it: "turn" or "rollout") per program run, None for one
        not run."""
        limits = self.settings.sandbox
        room = min(self.settings.tool_output_chars + 1, MAX_OUTPUT_CHARS)  # + the last line's end
        start = time.monotonic()
        self.settings.step_clock.touch()
        turn, (left, whose) = self.settings.tool_turn_seconds, self._time_left()
        deadline, which = start + min(turn, left), "turn" if turn <= left else whose
        outcomes: list = [None] * len(sources)
        done = 0
        try:
            while done < len(sources):
                left = deadline - time.monotonic() - RESERVE_S
                if left < MIN_PROGRAM_S:
                    break
                wave = sources[done : done + max(1, limits.workers)]
                runs = run_programs(wave, limits, max_output_chars=room, wall_seconds=left)
                outcomes[done : done + len(wave)] = [(run, which) for run in runs]
                done += len(wave)
        finally:
            self._spend(time.monotonic() - start)
        return outcomes

    def _message(self, outcome) -> str:
        """What the model sees for one call (raising ToolError for TRL's error form)."""
        if isinstance(outcome, Exception):
            raise outcome
        if outcome is None:
            raise self._cut()
        run, which = outcome
        if run.wall_cut:
            seconds = getattr(self.settings, f"tool_{which}_seconds")
            raise self._wall_cut(which, seconds)
        if run.timed_out:
            raise ToolError(f"timed out ({self.settings.sandbox.timeout:g} CPU seconds)")
        if run.error:
            raise ToolError(run.error)
        if not run.output.strip():
            return NO_OUTPUT
        return clip(run.output.rstrip(), self.settings.tool_output_chars, cut=run.truncated)
