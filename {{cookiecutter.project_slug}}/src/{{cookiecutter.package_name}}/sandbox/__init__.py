"""A local sandbox for running model-written Python against unit tests.

Each program runs in its own process (`harness.py`, see its docstring for what happens
inside) with:

* a wall-clock timeout, after which the whole process group is killed, and CPU, memory,
  output-size and open-file limits;
* a fresh temporary working directory (deleted afterwards) and an environment with nothing from
  ours (no `HF_TOKEN`, no `WANDB_API_KEY`), Python in isolated mode without site-packages;
* no network (an empty network namespace where the kernel allows it, and no sockets anyway), no
  child processes, no signals to other processes, no reads outside the standard library and the
  working directory, no writes outside the working directory;
* results taken only from lines carrying a per-run secret, so exiting early or printing fake
  results earns nothing; after the run, any process still carrying the run's marker is killed.

This stops what a policy stumbles into or learns during RL (infinite loops, fork and memory
bombs, exit tricks, stray files, reading secrets). It is not a boundary against code written to
break out of CPython on purpose: for that, run rewards in a container or VM sandbox (E2B,
Firecracker, gVisor).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

HARNESS = Path(__file__).with_name("harness.py")
MARKER = "GRPO_SANDBOX_RUN"


@dataclass(frozen=True)
class Limits:
    """Per-program limits (recipe fields `sandbox_*` of the code task)."""

    timeout: float = 5.0  # wall-clock seconds for the program and all its tests
    memory_mb: int = 512  # address-space limit
    output_bytes: int = 1_000_000  # stdout/stderr beyond this kill the program
    workers: int = 2  # programs run in parallel


@dataclass(frozen=True)
class TestRun:
    """What happened to one program."""

    passed: int
    total: int
    timed_out: bool = False
    exit_code: int | None = None
    stderr: str = ""
    marker: str = ""  # the run's environment marker (see `MARKER`)

    @property
    def fraction(self) -> float:
        return self.passed / self.total if self.total else 0.0


def run_tests(
    program: str, tests: Sequence[str], setup: str = "", limits: Limits = Limits()
) -> TestRun:
    """Run `program`, then each test (a snippet such as `assert f(1) == 2`) in the sandbox."""
    tests = list(tests)
    if not tests:
        return TestRun(passed=0, total=0)
    nonce = secrets.token_hex(16)
    marker = secrets.token_hex(8)
    with tempfile.TemporaryDirectory(prefix="grpo-sandbox-") as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        read_end, write_end = os.pipe()
        request = {
            "nonce": nonce,
            "results_fd": write_end,
            "program": program,
            "tests": tests,
            "setup": setup,
            "timeout": limits.timeout,
            "memory_mb": limits.memory_mb,
            "output_bytes": limits.output_bytes,
        }
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(work),
            "TMPDIR": str(work),
            "LANG": "C.UTF-8",
            "PYTHONHASHSEED": "0",
            MARKER: marker,
        }
        with (Path(tmp) / "stderr").open("w+b") as stderr:
            try:
                process = subprocess.Popen(
                    [sys.executable, "-I", "-S", "-B", str(HARNESS)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=stderr,
                    cwd=work,
                    env=env,
                    pass_fds=(write_end,),
                    start_new_session=True,
                )
            finally:
                os.close(write_end)
            try:
                lines, timed_out = _collect(process, read_end, json.dumps(request), limits)
            finally:
                os.close(read_end)
                _kill_group(process)
                _kill_marked(marker)
            stderr.seek(0)
            message = stderr.read(4000).decode("utf-8", "replace")
    passed = _count_passes(lines, nonce, len(tests))
    return TestRun(passed, len(tests), timed_out, process.returncode, message, marker)


def _collect(process, read_end: int, request: str, limits: Limits) -> tuple[list[str], bool]:
    """Send the request, then read result lines until the program ends or time runs out."""
    deadline = time.monotonic() + limits.timeout
    try:
        process.stdin.write(request.encode())
        process.stdin.close()
    except (BrokenPipeError, OSError):
        pass
    buffer = b""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return buffer.decode("utf-8", "replace").splitlines(), True
        ready, _, _ = select.select([read_end], [], [], remaining)
        if not ready:
            continue
        chunk = os.read(read_end, 65536)
        if not chunk:  # every writer closed: the harness is done
            break
        buffer += chunk
        if len(buffer) > 1_000_000:
            break
    try:
        process.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return buffer.decode("utf-8", "replace").splitlines(), True
    return buffer.decode("utf-8", "replace").splitlines(), False


def _count_passes(lines: list[str], nonce: str, total: int) -> int:
    passed = set()
    for line in lines:
        parts = line.split(" ")
        if len(parts) == 3 and parts[0] == nonce and parts[2] == "pass" and parts[1].isdigit():
            index = int(parts[1])
            if index < total:
                passed.add(index)
    return len(passed)


def _kill_group(process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)


def _kill_marked(marker: str) -> None:
    """Kill any process left with this run's marker in its environment (left its group)."""
    needle = f"{MARKER}={marker}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path("/proc", entry, "environ").read_bytes()
        except OSError:
            continue
        if needle in environ:
            with contextlib.suppress(OSError):
                os.kill(int(entry), signal.SIGKILL)


def run_many(
    jobs: Sequence[tuple[str, Sequence[str], str]], limits: Limits = Limits()
) -> list[TestRun]:
    """Run (program, tests, setup) jobs with `limits.workers` programs at a time, in order."""
    if limits.workers <= 1 or len(jobs) <= 1:
        return [run_tests(p, t, s, limits) for p, t, s in jobs]
    with ThreadPoolExecutor(max_workers=limits.workers) as pool:
        return list(pool.map(lambda job: run_tests(job[0], job[1], job[2], limits), jobs))
