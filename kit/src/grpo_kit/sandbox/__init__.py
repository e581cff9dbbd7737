"""A sandbox for running model-written Python against unit tests, closed to a real attacker.

Isolation comes from the operating system (`isolation.py`: bubblewrap, else util-linux
`unshare`, else, only when the recipe asks, a weaker process-only mode), never from the
interpreter. Inside, a fork server (`harness.py`) runs each program in a fresh child under a
seccomp filter and rlimits, and judges it from a second child that holds the tests: the program
only ever sees the arguments of the calls the tests make, and returns plain data (numbers,
strings, containers; anything else stays a handle equal only to itself), so the verdict cannot
be forged from inside the program. Each of `Limits.workers` workers is one long-lived sandbox
that runs programs one after another; nothing a program leaves (processes, files) survives it.

Any test snippet works (MBPP `assert f(x) == y` lines, HumanEval `check(candidate)` code, loops,
helpers), with one documented limit: a test can compare values, not the program's own objects
(an instance of a class the program defines equals only itself; compare its fields instead).
The judge decides from plain data only: it iterates a program's object for `x in obj`, and
refuses the truth value, hash and comparison with a value of one (the test fails), so a program
that computes nothing passes no `assert f(x)`, `f(x) != y` or `x in f(...)`; an exception a
program raises reaches the test as itself, except StopIteration outside `next()` (it would end a
`map`/`filter` early and pass the test).

`Limits.timeout` is CPU seconds (program and tests) plus the seconds the program waits (sleeps,
blocks), so a busy machine does not change a verdict; a program holds its sandbox at most
`Limits.wall_limit` (`timeout / harness.MIN_SHARE`) wall-clock seconds. A caller with a deadline
of its own (a tool turn's time) also passes `wall_seconds`: a job then ends after at most that
many wall-clock seconds from its start, whatever CPU time it has left, and its result says so
(`timed_out` and `wall_cut`); the CPU timeout stays as configured, so a job that starts late
keeps all of it on an idle machine.

`run_code` runs a whole program without tests (a tool call, say) in the same sandboxes, under
the same limits, and returns what it printed (stdout and stderr, cut at a size: a program that
prints more is stopped there) and its error.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
import weakref
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache

from ..errors import UserError
from .arguments import SandboxArguments
from .harness import MIN_SHARE, test_problem
from .isolation import (
    FIX,
    HARNESS,
    MODES,
    PROCESS_WARNING,
    Interpreter,
    IsolationError,
    as_user,
    candidates,
    free_ids,
    interpreter,
    launch,
    release_ids,
    take_ids,
)

__all__ = [
    "MAX_OUTPUT_CHARS",
    "MODES",
    "CodeRun",
    "Job",
    "Limits",
    "SandboxArguments",
    "SandboxUnavailable",
    "TestRun",
    "describe",
    "run_code",
    "run_many",
    "run_programs",
    "run_tests",
    "sandbox_limits",
    "test_problem",
]

logger = logging.getLogger(__name__)
GRACE = 0.5  # seconds past the timeout before the trainer kills a sandbox that does not answer
START_TIMEOUT = 60.0  # seconds for a sandbox to start (bubblewrap, Python, preloaded modules)
PIPE_BYTES = 1 << 20  # pipe capacity asked for; larger payloads are written by a thread
MAX_OUTPUT_CHARS = 65_536  # most output `run_code` returns (the answer must fit one message)
ENDED = "the sandbox stopped before the program finished"  # a job's error when its sandbox died


class SandboxUnavailable(UserError):
    """The sandbox cannot run here as configured (the message names the fix)."""


class SandboxError(Exception):
    """A sandbox worker failed to start or broke down."""


@dataclass(frozen=True)
class TestRun:
    """What happened to one program."""

    passed: int
    total: int
    timed_out: bool = False
    error: str = ""  # why the first failing test failed (the program's error, or the exception)
    verdicts: tuple[bool, ...] = ()
    wall_cut: bool = False  # timed out at the call's `wall_seconds`, before its CPU timeout

    @property
    def fraction(self) -> float:
        return self.passed / self.total if self.total else 0.0


@dataclass(frozen=True)
class CodeRun:
    """What one whole program did (`run_code`)."""

    output: str  # what it printed, stdout and stderr as they came, at most max_output_chars
    error: str = ""  # `Type: message` when it raised (or how it ended); "" when it ran to the end
    timed_out: bool = False
    truncated: bool = False  # it printed more than max_output_chars and was stopped there
    wall_cut: bool = False  # timed out at the call's `wall_seconds`, before its CPU timeout

    @property
    def ok(self) -> bool:
        """It ran to the end (exit status 0) in time, whatever it printed."""
        return not (self.error or self.timed_out or self.truncated)


@dataclass(frozen=True)
class Script:
    """One whole program to run without tests, and the most output to keep."""

    source: str
    max_output_chars: int


@dataclass(frozen=True)
class Job:
    """One program and its tests."""

    program: str
    tests: tuple[str, ...]
    setup: str = ""  # code run before the program, in its process (MBPP `test_setup_code`)
    prelude: str = ""  # code run before the tests, in the judge (HumanEval's prompt: helpers)
    remote: tuple[str, ...] = ()  # names the prelude defines that the program must provide

    @classmethod
    def of(cls, job) -> Job:
        if isinstance(job, Job):
            return job
        program, tests, setup = (*job, "")[:3]
        return cls(str(program), tuple(str(t) for t in tests), str(setup or ""))


class Pool:
    """The long-lived sandbox workers of one `Limits`, started on first use."""

    def __init__(self):
        self.workers: list[Worker] = []
        self.owner = os.getpid()
        self.lock = threading.Lock()
        weakref.finalize(self, _stop_all, self.workers)

    def run(self, limits: Limits, jobs: list, level: str, python: Interpreter, wall=None):
        with self.lock:
            if os.getpid() != self.owner:  # a forked copy: the workers belong to the parent
                self.workers.clear()
                self.owner = os.getpid()
            return _schedule(self.workers, limits, jobs, level, python, wall)


def _stop_all(workers: list) -> None:
    for worker in list(workers):
        worker.stop()
    workers.clear()


_DEFAULTS = SandboxArguments()


@dataclass(frozen=True)
class Limits:
    """The code task's sandbox settings (recipe fields `sandbox_*`), and the workers that apply
    them (started on first use, stopped with this object or at exit)."""

    # The recipe's defaults (SandboxArguments): one place for each.
    timeout: float = _DEFAULTS.sandbox_timeout  # CPU seconds, program and all its tests (below)
    memory_mb: int = _DEFAULTS.sandbox_memory_mb  # address space of the program (and the judge)
    workers: int = _DEFAULTS.sandbox_workers  # sandboxes running programs in parallel
    isolation: str = _DEFAULTS.sandbox_isolation  # auto | bubblewrap | unshare | process
    python: str | None = _DEFAULTS.sandbox_python  # interpreter for programs (3.11+); None: ours
    disk_mb: int = 64  # the sandbox's private tmpfs (all files a program writes)
    file_bytes: int = 8_000_000  # largest single file a program may write
    pool: Pool = field(default_factory=Pool, compare=False, repr=False, hash=False)

    @property
    def wall_limit(self) -> float:
        """The most wall-clock seconds one program holds a sandbox. A program's `timeout` counts
        the CPU seconds of its processes and the seconds it waits (sleeps, blocks), not the
        seconds a busy machine keeps it from a CPU, so host load does not change its verdict;
        only below `MIN_SHARE` of a CPU does waiting for one count too."""
        return self.timeout / MIN_SHARE

    def level(self) -> tuple[str, Interpreter]:
        """(isolation level, interpreter) used here; raises SandboxUnavailable with the fix."""
        return choose(self.isolation, self.python, self.disk_mb)

    def describe(self) -> dict:
        """For `make doctor` and the run record: the isolation in use and the limits."""
        level, python = self.level()
        ids = free_ids()[:1] if os.geteuid() == 0 else ()
        return {
            "isolation": level,
            "python": python.version,
            "interpreter": python.executable,
            "seccomp": True,
            # whose per-user kernel limits a program spends: a dedicated uid per sandbox (the
            # first shown) when the trainer is root, else the trainer's own
            "uid": ids[0] if ids else os.getuid(),
            "dedicated_user": bool(ids),
            "timeout_s": self.timeout,
            "memory_mb": self.memory_mb,
            "disk_mb": self.disk_mb,
            "workers": self.workers,
            **({"warning": PROCESS_WARNING} if level == "process" else {}),
        }

    def summary(self) -> str:
        """One line for `make doctor` and the log (raises SandboxUnavailable with the fix)."""
        facts = self.describe()
        who = "dedicated uids from" if facts["dedicated_user"] else "uid"
        return (
            f"{facts['isolation']} isolation + seccomp, Python {facts['python']} "
            f"({facts['interpreter']}), as {who} {facts['uid']}; {self.workers} worker(s), "
            f"per program {self.timeout:g} CPU s (at most {self.wall_limit:g} s), "
            f"{self.memory_mb} MB memory, {self.disk_mb} MB disk"
        )


def sandbox_limits(args: SandboxArguments) -> Limits:
    """The sandbox these fields describe, checked now: without the configured isolation, the run
    stops here (before any model loads) with one line naming the fix."""
    limits = Limits(
        timeout=args.sandbox_timeout,
        memory_mb=args.sandbox_memory_mb,
        workers=args.sandbox_workers,
        isolation=args.sandbox_isolation,
        python=args.sandbox_python,
    )
    limits.level()  # raises SandboxUnavailable (a UserError) with the fix
    return limits


def describe(limits: Limits) -> dict:
    """`limits.describe()`: the isolation in use (raises SandboxUnavailable with the fix)."""
    return limits.describe()


def run_many(jobs: Sequence, limits: Limits, wall_seconds: float | None = None) -> list[TestRun]:
    """Run jobs (`Job`s or (program, tests, setup) tuples) on `limits.workers` sandboxes, in
    order; `wall_seconds`: each job's wall-clock cap besides its CPU timeout (module docstring).
    Raises SandboxUnavailable when no sandbox of the configured level works here."""
    wall = _wall(wall_seconds)
    jobs = [Job.of(job) for job in jobs]
    if not jobs:
        return []
    level, python = limits.level()
    return limits.pool.run(limits, jobs, level, python, wall)


def _wall(seconds: float | None) -> float | None:
    """A job's wall-clock cap, checked: None (none but `Limits.wall_limit`) or seconds > 0."""
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
        raise ValueError(f"wall_seconds must be a number of seconds above 0, got {seconds!r}")
    return float(seconds)


def run_tests(
    program: str,
    tests: Sequence[str],
    setup: str = "",
    limits: Limits | None = None,
    prelude: str = "",
    remote: Sequence[str] = (),
    wall_seconds: float | None = None,
) -> TestRun:
    """Run `program`, then judge each test snippet (e.g. `assert f(1) == 2`) against it."""
    job = Job(program, tuple(tests), setup, prelude, tuple(remote))
    return run_many([job], limits or Limits(), wall_seconds)[0]


def run_programs(
    sources: Sequence[str],
    limits: Limits,
    max_output_chars: int = 10_000,
    wall_seconds: float | None = None,
) -> list[CodeRun]:
    """Run whole programs (as `__main__`, no tests) on `limits.workers` sandboxes, in order, each
    under the same isolation, seccomp filter, rlimits and timeout as a program under test;
    `wall_seconds`: each program's wall-clock cap besides its CPU timeout (module docstring).
    Raises SandboxUnavailable when no sandbox of the configured level works here."""
    if not 1 <= max_output_chars <= MAX_OUTPUT_CHARS:
        raise ValueError(f"max_output_chars must be 1..{MAX_OUTPUT_CHARS}, got {max_output_chars}")
    wall = _wall(wall_seconds)
    jobs = [Script(str(source), max_output_chars) for source in sources]
    if not jobs:
        return []
    level, python = limits.level()
    return limits.pool.run(limits, jobs, level, python, wall)


def run_code(
    source: str,
    limits: Limits | None = None,
    max_output_chars: int = 10_000,
    wall_seconds: float | None = None,
) -> CodeRun:
    """Run one whole program in the sandbox and return what it printed and how it ended."""
    return run_programs([source], limits or Limits(), max_output_chars, wall_seconds)[0]


@lru_cache(maxsize=16)
def choose(mode: str, python: str | None, disk_mb: int) -> tuple[str, Interpreter]:
    """The strongest isolation level of `mode` that runs a program here (checked once per
    process, and logged: the run's log says which isolation scored its programs)."""
    try:
        found = interpreter(python)
        levels = candidates(mode)
    except IsolationError as err:
        raise SandboxUnavailable(f"code sandbox: {err}") from err
    problems = []
    for level in levels:
        try:
            _smoke(level, found, disk_mb)
        except (IsolationError, SandboxError) as err:
            why = str(err).strip()[:300]
            if level != "unshare" and os.geteuid() == 0 and "Permission denied" in why:
                why += (
                    f" (the trainer is root, so {level} runs as a dedicated user, which must "
                    "be able to read the sandbox's Python: set sandbox_python to one every user "
                    "can read, e.g. /usr/bin/python3, or use sandbox_isolation: unshare)"
                )
            problems.append(f"{level}: {why}")
            continue
        if level == "process":
            logger.warning(PROCESS_WARNING)
        else:
            logger.info(
                "code sandbox: %s isolation, Python %s (%s)", level, found.version, found.executable
            )
        return level, found
    raise SandboxUnavailable(
        f"code sandbox: no isolation works here ({'; '.join(problems)}); {FIX}"
        if mode == "auto"
        else f"code sandbox: sandbox_isolation={mode} does not work here ({problems[0]}); {FIX}"
    )


def _smoke(level: str, python: Interpreter, disk_mb: int) -> None:
    limits = Limits(timeout=30.0, workers=1, disk_mb=disk_mb)
    workers: list[Worker] = []
    try:
        job = Job("def f():\n    return 1\n", ("assert f() == 1", "assert f() == 2"))
        run = _schedule(workers, limits, [job], level, python)[0]
    finally:
        _stop_all(workers)
    if run.verdicts != (True, False):
        raise SandboxError(f"a test program gave {run.verdicts} instead of (True, False)")


# --- workers -----------------------------------------------------------------------------------


def _frame(message: dict) -> bytes:
    data = json.dumps(message).encode()
    return struct.pack(">I", len(data)) + data


def _pipe_with(payload: bytes) -> int:
    """A pipe's read end holding `payload` (written by a thread when it does not fit)."""
    read_end, write_end = os.pipe()
    with contextlib.suppress(OSError):
        fcntl.fcntl(write_end, 1031, min(max(len(payload), 65536), PIPE_BYTES))  # F_SETPIPE_SZ
    capacity = fcntl.fcntl(write_end, 1032)  # F_GETPIPE_SZ
    if len(payload) <= capacity:
        os.write(write_end, payload)
        os.close(write_end)
    else:
        threading.Thread(target=_write_all, args=(write_end, payload), daemon=True).start()
    return read_end


def _write_all(fd: int, payload: bytes) -> None:
    with contextlib.suppress(OSError):
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view) :]
    os.close(fd)


_launchers: dict[int, ThreadPoolExecutor] = {}  # per process (a fork has its own): the thread
_launchers_lock = threading.Lock()


def _popen(argv: list[str], **options) -> subprocess.Popen:
    """`subprocess.Popen(argv, **options)`, started from one thread that lives as long as this
    process: bubblewrap's --die-with-parent kills a sandbox when the *thread* that started it
    ends (PR_SET_PDEATHSIG is per thread), so a worker started from a short-lived thread (a tool
    turn's `asyncio.to_thread`, a request handler's) would die with it and its next job fail."""
    with _launchers_lock:
        launcher = _launchers.get(os.getpid())
        if launcher is None:
            _launchers.clear()  # a forked copy: the parent's thread is not here
            launcher = _launchers[os.getpid()] = ThreadPoolExecutor(
                1, thread_name_prefix="grpo-sandbox-launcher"
            )
    return launcher.submit(subprocess.Popen, argv, **options).result()


class Worker:
    """One sandbox: the isolation tool, the harness's fork server inside, and its socket."""

    def __init__(self, level: str, python: Interpreter, disk_mb: int):
        self.level = level
        self.scratch = tempfile.mkdtemp(prefix="grpo-sandbox-")
        self.errors = tempfile.TemporaryFile()  # noqa: SIM115 - closed in stop()
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.ids = None
        try:
            self.ids = take_ids()  # a root trainer's sandbox: a dedicated user of its own
            plan = launch(
                level, python, self.scratch, disk_mb * 1024 * 1024, child.fileno(), self.ids
            )
            self.process = _popen(
                plan.argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self.errors,
                pass_fds=(child.fileno(),),
                env=plan.env,
                cwd=plan.cwd,
                start_new_session=True,
                **as_user(plan.ids),  # a root trainer's sandbox runs as a dedicated user
            )
        except (OSError, IsolationError) as err:
            parent.close()
            release_ids(self.ids)
            shutil.rmtree(self.scratch, ignore_errors=True)
            raise IsolationError(str(err)) from err
        finally:
            child.close()
        self.socket = parent
        try:
            self.socket.sendall(json.dumps(plan.config).encode())
        except OSError as err:  # it ended at once (bubblewrap refusing a path, say): say why
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=5)
            why = self.why()
            self.stop()
            raise IsolationError(f"the sandbox did not start: {why}") from err
        self.ready = False
        self.job: int | None = None
        self.capped = False  # the job's wall-clock cap (wall_seconds) comes before wall_limit
        self.next_id = 0
        self.deadline = time.monotonic() + START_TIMEOUT

    def fileno(self) -> int:
        return self.socket.fileno()

    def start(self, index: int, job: Job, limits: Limits, wall: float | None = None) -> None:
        """Send job `index` to the harness; `wall`: its wall-clock cap (seconds from now)
        besides its CPU timeout."""
        self.next_id += 1
        self.job = index
        self.capped = wall is not None and wall < limits.wall_limit
        self.deadline = time.monotonic() + (wall if self.capped else limits.wall_limit) + GRACE
        ident = self.next_id
        limits_message = {"timeout": limits.timeout, "memory_mb": limits.memory_mb,
                          "file_bytes": limits.file_bytes}  # fmt: skip
        if self.capped:
            limits_message["wall"] = wall
        if isinstance(job, Script):
            control = {"id": ident, "limits": limits_message,
                       "run": {"max_chars": job.max_output_chars}}  # fmt: skip
            self._send(control, [_pipe_with(_frame({"id": ident, "program": job.source}))])
            return
        program = _frame({"id": ident, "program": job.program, "setup": job.setup})
        tests = _frame({"id": ident, "tests": list(job.tests), "prelude": job.prelude,
                        "remote": list(job.remote)})  # fmt: skip
        control = {"id": ident, "limits": limits_message}
        self._send(control, [_pipe_with(program), _pipe_with(tests)])

    def _send(self, control: dict, fds: list[int]) -> None:
        try:
            socket.send_fds(self.socket, [json.dumps(control).encode()], fds)
        finally:
            for fd in fds:
                os.close(fd)

    def receive(self) -> dict | None:
        """The next message, or None when the sandbox is gone."""
        try:
            data = self.socket.recv(1 << 20)
        except OSError:
            return None
        if not data:
            return None
        try:
            message = json.loads(data)
        except ValueError:
            return None
        return message if isinstance(message, dict) else None

    def scrub(self, text: str) -> str:
        """`text` (an error a model may read) without this machine's paths: the harness's folder
        and the worker's scratch folder (the process-only sandbox's directory) as the sandbox
        names them."""
        text = text.replace(str(HARNESS.parent), "/sandbox")
        return text.replace(os.path.join(self.scratch, "tmp"), "/tmp").replace(self.scratch, "")

    def why(self) -> str:
        """The tail of the sandbox's stderr (bubblewrap's or the harness's complaints): for the
        trainer's log and errors, never for a program's result (it names host paths)."""
        with contextlib.suppress(OSError, ValueError):
            self.errors.seek(0)
            text = self.errors.read()[-2000:].decode("utf-8", "replace").strip()
            return text or f"exit status {self.process.poll()}"
        return "no output"

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        with contextlib.suppress(OSError):
            self.socket.close()
        with contextlib.suppress(OSError, ValueError):
            self.errors.close()
        shutil.rmtree(self.scratch, ignore_errors=True)
        release_ids(self.ids)
        self.ids = None


def _result(message: dict, job: Job | Script, scrub) -> TestRun | CodeRun:
    timed_out = bool(message.get("timed_out"))
    wall_cut = timed_out and message.get("wall_cut") is True
    if isinstance(job, Script):
        return CodeRun(str(message.get("output") or ""), scrub(str(message.get("error") or "")),
                       timed_out, bool(message.get("truncated")), wall_cut)  # fmt: skip
    verdicts = message.get("verdicts") or {}
    flags, error = [], scrub(str(message.get("error") or ""))
    for index in range(len(job.tests)):
        ok, why = (verdicts.get(str(index)) or [False, "not run"])[:2]
        flags.append(ok is True)
        if ok is not True and not error:
            error = scrub(f"test {index}: {why}")
    return TestRun(sum(flags), len(job.tests), timed_out, error, tuple(flags), wall_cut)


def _failed(
    job: Job | Script, error: str, timed_out: bool = False, wall_cut: bool = False
) -> TestRun | CodeRun:
    wall_cut = timed_out and wall_cut
    if isinstance(job, Script):
        return CodeRun("", "" if timed_out else error, timed_out, wall_cut=wall_cut)
    return TestRun(0, len(job.tests), timed_out, error, (False,) * len(job.tests), wall_cut)


def _schedule(workers, limits: Limits, jobs: list, level: str, python: Interpreter, wall=None):
    """Run `jobs` on `workers` (a pool's list, started and replaced as needed), in order; `wall`:
    each job's wall-clock cap in seconds (None: `limits.wall_limit` only)."""
    results = [None if isinstance(job, Script) or job.tests else TestRun(0, 0) for job in jobs]
    try:
        _run_jobs(workers, limits, jobs, level, python, results, wall)
    finally:  # interrupted (or a sandbox would not start): no worker keeps a job of this call
        for worker in [w for w in workers if w.job is not None]:
            _retire(workers, worker)
    return [
        r if r is not None else TestRun(0, 0) if isinstance(job, Job) else _failed(job, "not run")
        for r, job in zip(results, jobs, strict=True)
    ]


def _run_jobs(workers, limits, jobs, level, python, results, wall=None) -> None:
    pending = deque(index for index, result in enumerate(results) if result is None)
    wanted = max(1, min(limits.workers, len(pending)))
    failures, attempts = 0, [0] * len(jobs)
    while pending or any(w.job is not None for w in workers):
        while pending and len(workers) < wanted:
            workers.append(Worker(level, python, limits.disk_mb))
        for worker in list(workers):
            if worker.ready and worker.job is None and pending:
                if worker.process.poll() is not None:  # died while idle
                    _retire(workers, worker)
                    continue
                index = pending.popleft()
                try:
                    worker.start(index, jobs[index], limits, wall)
                    attempts[index] += 1
                except OSError:  # its socket closed under us: another worker takes the job
                    worker.job = None
                    pending.appendleft(index)
                    _retire(workers, worker)
        waiting = [w for w in workers if not w.ready or w.job is not None]
        if not waiting:
            continue
        now = time.monotonic()
        left = max(0.0, min(w.deadline for w in waiting) - now)
        readable, _, _ = select.select(waiting, [], [], left)
        for worker in readable:
            message = worker.receive()
            if message is None or (not worker.ready and not message.get("ready")):
                why = worker.why() if message is None else message.get("problem")
                if worker.job is not None:
                    logger.warning("code sandbox: a %s sandbox ended: %s", worker.level, why)
                if worker.job is not None and attempts[worker.job] < 2:
                    pending.appendleft(worker.job)  # killed from outside: once more elsewhere
                elif worker.job is not None:  # what it said stays in the log (host paths)
                    results[worker.job] = _failed(jobs[worker.job], ENDED)
                elif not worker.ready:
                    failures += 1
                    if failures >= 3 or not any(w.ready for w in workers if w is not worker):
                        _retire(workers, worker)
                        raise SandboxError(f"the sandbox did not start: {why}")
                _retire(workers, worker)
            elif not worker.ready:
                worker.ready, failures = True, 0
            elif worker.job is not None:
                index, worker.job = worker.job, None
                results[index] = _result(message, jobs[index], worker.scrub)
                if message.get("recycle"):
                    _retire(workers, worker)
        now = time.monotonic()
        for worker in [w for w in waiting if w.deadline <= now and w in workers]:
            if worker.job is not None:  # the harness did not answer in time: kill the sandbox
                job = jobs[worker.job]
                results[worker.job] = _failed(job, "timed out (sandbox killed)", timed_out=True,
                                              wall_cut=worker.capped)  # fmt: skip
            elif not worker.ready:
                _retire(workers, worker)
                raise SandboxError(f"the sandbox did not start in {START_TIMEOUT:.0f} s")
            _retire(workers, worker)


def _retire(workers: list, worker: Worker) -> None:
    worker.stop()
    with contextlib.suppress(ValueError):
        workers.remove(worker)
