"""The code sandbox against the attack classes of issue 25, each under every isolation level that
works here (bubblewrap, util-linux unshare, and the process-only mode where the attack does not
need the filesystem): earlier jobs' results reachable from a later program, signals through a
file's owner (F_SETOWN), memory outside RLIMIT_AS, a forged or crashing status report, judge
handles that earn credit for some test shapes, and verdicts that flip with the host's load."""

import logging
import os
import signal
import struct
import subprocess
import sys
import threading
import time

import pytest
from grpo_kit import sandbox
from grpo_kit.sandbox import ENDED, CodeRun, Limits, harness, isolation, run_code, run_tests
from test_sandbox import NAMESPACED, attack, available, leftovers


@pytest.fixture(scope="module", params=(*NAMESPACED, "process"))
def any_level(request):
    """Every level, the weaker process-only one included."""
    return available(request.param)


def server_pids(limits: Limits) -> list[int]:
    return [worker.process.pid for worker in limits.pool.workers]


# --- each job starts from a state that holds nothing of an earlier one ------------------------

# The secrets are built at run time, so they are in no program's source: a later program that
# finds `LEAK` followed by one of these numbers found an earlier job's output or error.
EARLIER = (
    ("print('LEAK' + str(123456789012))", None),
    ("def f():\n    raise ValueError('LEAK' + str(123456789013))\n", ["assert f() == 1"]),
    ("import sys\nsys.stderr.write('LEAK' + str(123456789014))\nraise KeyError(1)\n", None),
)
SPY = r"""
import ctypes, gc, os, re, sys
PATTERN = re.compile(rb'LEAK(\d{12})')
WANTED = {123456789012, 123456789013, 123456789014}

def hits(blob):
    return {int(x) for x in PATTERN.findall(blob)} & WANTED

def frames():
    found, frame = set(), sys._getframe()
    while frame is not None:
        for value in list(frame.f_locals.values()) + list(frame.f_globals.values()):
            found |= hits(repr(value).encode('utf-8', 'replace'))
        frame = frame.f_back
    return found

def objects():
    found = set()
    for obj in gc.get_objects():
        try:
            found |= hits(repr(obj).encode('utf-8', 'replace'))
        except Exception:
            pass
    return found

def memory():
    # Raw memory around every live object and below the heap's top, freed memory included
    # (read through a pipe: an unmapped page is EFAULT, not a crash).
    regions = {id(obj) >> 20 for obj in gc.get_objects()}
    sbrk = ctypes.CDLL(None).sbrk
    sbrk.restype = ctypes.c_void_p
    top = sbrk(0) >> 20
    regions |= set(range(max(0, top - 64), top + 1))
    r, w = os.pipe()
    found = set()
    for region in sorted(regions):
        for start in range(region << 20, (region + 1) << 20, 65536):
            try:
                os.write(w, (ctypes.c_char * 65536).from_address(start))
            except OSError:
                continue
            found |= hits(os.read(r, 65536))
    return found

def solve():
    return [sorted(frames()), sorted(objects()), sorted(memory())]
"""


def test_no_job_finds_an_earlier_ones_results(any_level):
    """Outputs, errors and verdict messages of earlier jobs are nowhere a later program can
    look: not in a live frame, not among the objects the garbage collector knows, not in raw
    (freed) memory of the process it was forked from."""
    limits = Limits(
        timeout=10.0,
        memory_mb=256,
        workers=1,
        isolation=any_level.isolation,
        python=any_level.python,
    )
    try:
        for program, tests in EARLIER:
            if tests is None:
                run_code(program, limits)
            else:
                run_tests(program, tests, limits=limits)
        spied = run_code(SPY + "print(solve())", limits)
        assert spied == CodeRun("[[], [], []]\n"), spied
        judged = run_tests(SPY, ["assert solve() == [[], [], []]"], limits=limits)
        assert judged.passed == 1, judged
    finally:
        sandbox._stop_all(limits.pool.workers)


def test_the_leak_search_finds_what_is_there(any_level):
    """The same search finds a secret that is in the program's memory (its own), so its finding
    nothing above means the earlier jobs left nothing."""
    bait = "x = 'LEAK' + str(123456789012)\n"
    run = run_code(SPY + bait + "print(solve())", any_level)
    expected = "[[123456789012], [123456789012], [123456789012]]\n"
    assert run == CodeRun(expected), run


# --- signals through a file's owner; no host path in what a model reads ------------------------

OWNER = r"""
import fcntl, os, signal, socket
TRAINER_PID = @TRAINER@
TARGETS = [os.getppid(), 1, TRAINER_PID, -os.getpgid(0)]
def attempts():
    r, w = os.pipe()
    a, b = socket.socketpair()
    for pid in TARGETS:
        yield lambda: fcntl.fcntl(r, fcntl.F_SETOWN, pid)
        yield lambda: fcntl.ioctl(a, 0x8901, pid.to_bytes(4, 'little', signed=True))
        yield lambda: fcntl.ioctl(a, 0x8902, pid.to_bytes(4, 'little', signed=True))
    yield lambda: fcntl.fcntl(r, 10, signal.SIGUSR1)  # F_SETSIG
    yield lambda: fcntl.fcntl(r, 15, b'\x01\x00\x00\x00' + TRAINER_PID.to_bytes(4, 'little'))
    yield lambda: fcntl.fcntl(r, fcntl.F_SETFL, os.O_ASYNC)
    yield lambda: fcntl.ioctl(a, 0x5452, b'\x01\x00\x00\x00')  # FIOASYNC
    os.write(w, b'x')
    a.send(b'x')
def solve():
    done = []
    for index, attempt in enumerate(attempts()):
        try:
            attempt()
            done.append(index)
        except OSError:
            pass
    return done
"""


def test_no_file_owner_signals_anyone(any_level):
    """F_SETOWN/F_SETOWN_EX/F_SETSIG/O_ASYNC (and their ioctl forms) would make the kernel signal
    the sandbox's server, its init, the trainer (in the process-only mode) or a process group
    on the next I/O: refused, so the sandbox is not restarted, the job does not run twice and
    the trainer gets no signal."""
    received = []
    previous = signal.signal(signal.SIGUSR1, lambda number, frame: received.append(number))
    try:
        program = OWNER.replace("@TRAINER@", str(os.getpid()))
        run_tests("def f():\n    return 1\n", ["assert f() == 1"], limits=any_level)
        before = server_pids(any_level)
        run = run_tests(program, ["assert solve() == []"], limits=any_level)
        assert run.verdicts == (True,), run
        script = run_code(program + "print(solve())", any_level)
        assert script == CodeRun("[]\n"), script
        attack(any_level, program + "solve()\ndel solve\n")
        assert server_pids(any_level) == before  # the same sandbox: nothing killed it
        time.sleep(0.05)
        assert received == []
    finally:
        signal.signal(signal.SIGUSR1, previous)


# Paths of this machine a sandbox's messages could name: the harness's folder, the workers'
# scratch folders.
HOST_PATHS = (str(isolation.HARNESS.parent), "grpo-sandbox-")


NESTED = (
    "import os, struct\nbody = b'[' * 100_000\nframe = struct.pack('>I', len(body)) + body\n"
    "for fd in range(3, 64):\n    try:\n        os.write(fd, frame)\n    except OSError:\n"
    "        pass\n"
)


def test_no_host_path_in_any_error_a_model_reads(any_level):
    errors = [
        run_code(NESTED + "os._exit(0)\n", any_level).error,
        run_code(NESTED + "raise ValueError('after')\n", any_level).error,
        run_code("import os\nopen(os.path.abspath('missing'))\n", any_level).error,
        run_tests(
            "import os\ndef f():\n    open(os.path.abspath('missing'))\n",
            ["assert f() is None"],
            limits=any_level,
        ).error,
    ]
    for error in errors:
        assert not any(path in error for path in HOST_PATHS), error
    missing = "FileNotFoundError: [Errno 2] No such file or directory: '/tmp/work/missing'"
    assert errors[2] == missing and errors[3] == "test 0: " + missing


def test_a_sandbox_that_dies_mid_job_says_only_that(any_level):
    """A sandbox killed under a job: the job runs once more elsewhere, and when that one dies too
    the error says so in words, not with the sandbox's stderr (it names host paths)."""
    limits = Limits(timeout=5.0, workers=1, isolation=any_level.isolation, python=any_level.python)
    killed: set[int] = set()
    stop = threading.Event()

    def killer():
        while not stop.is_set():
            for worker in list(limits.pool.workers):
                if worker.job is not None and worker.process.pid not in killed:
                    time.sleep(0.2)
                    killed.add(worker.process.pid)
                    os.killpg(worker.process.pid, 9)
            time.sleep(0.01)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    try:
        run = run_code("import time\ntime.sleep(3)\n", limits)
    finally:
        stop.set()
        thread.join()
        sandbox._stop_all(limits.pool.workers)
    assert run == CodeRun("", ENDED) and len(killed) == 2


def test_the_process_mode_states_its_weaker_promise(caplog):
    """Where `sandbox_isolation: process` is chosen (the log of every run, `make doctor`), the
    warning says what it still stops and what it does not."""
    warning = isolation.PROCESS_WARNING
    for fact in ("no namespaces", "read and write every file your user can", "/proc",
                 "Unix sockets", "seccomp", "rlimits", "bubblewrap"):  # fmt: skip
        assert fact in warning, fact
    limits = available("process")
    with caplog.at_level(logging.WARNING, logger="grpo_kit.sandbox"):
        sandbox.choose.__wrapped__("process", limits.python, 64)
    assert warning in caplog.text
    assert limits.describe()["warning"] == warning


# --- memory outside RLIMIT_AS --------------------------------------------------------------

PARKED = r"""
import os, socket
def solve():
    pinned, refused = 0, []
    a, b = socket.socketpair()
    for _ in range(60):  # 480 MB, past the 256 MB limit, when nothing refuses
        try:
            fd = os.memfd_create('m')
            os.write(fd, b'x' * 8_000_000)
        except OSError as error:
            refused.append(type(error).__name__)
            fd, w = os.pipe()  # a descriptor of another kind, holding 64 kB, to park
            os.write(w, b'x' * 65536)
            os.close(w)
        try:
            socket.send_fds(a, [b'x'], [fd])
        except OSError as error:
            refused.append(type(error).__name__)
            break
        os.close(fd)
        pinned += 8
    return pinned, refused
"""


def test_a_bubblewrap_that_cannot_cap_its_tmpfs_is_refused(monkeypatch, tmp_path):
    """Without --size (bubblewrap before 0.8) the sandbox's /tmp would be a tmpfs as large as
    half the RAM, outside every rlimit: that bubblewrap is refused (auto falls back to unshare,
    which caps its tmpfs itself)."""
    found = isolation.bubblewrap()
    if found is None:
        pytest.skip("bubblewrap is not installed")
    python = isolation.interpreter(None)
    plan = isolation.launch("bubblewrap", python, str(tmp_path), 1 << 20, 3)
    assert plan.argv[plan.argv.index("--size") + 1 : plan.argv.index("--size") + 4] == [
        str(1 << 20), "--tmpfs", "/tmp"]  # fmt: skip
    monkeypatch.setattr(isolation, "bubblewrap", lambda: (found[0], found[1] - {"--size"}))
    with pytest.raises(isolation.IsolationError, match="cannot cap the size"):
        isolation.launch("bubblewrap", python, str(tmp_path), 1 << 20, 3)


def test_memory_outside_the_address_space_limit_is_refused(any_level):
    """memfds (their pages are not mapped, so RLIMIT_AS does not count them) and descriptors
    parked in flight in a Unix socket (SCM_RIGHTS) pinned 861 MB from one 512 MB program:
    memfd_create and sendmsg are refused, so a program holds at most its address space plus
    64 descriptors' buffers."""
    limits = Limits(
        timeout=5.0,
        memory_mb=256,
        workers=1,
        isolation=any_level.isolation,
        python=any_level.python,
    )
    try:
        run = run_code(PARKED + "print(solve())", limits)
        assert run == CodeRun("(0, ['PermissionError', 'PermissionError'])\n"), run
        attack(limits, PARKED + "solve()\ndel solve\n")
    finally:
        sandbox._stop_all(limits.pool.workers)


# --- the status channel -----------------------------------------------------------------------

JUNK = (
    "import os\nfor fd in range(3, 64):\n    try:\n        os.write(fd, b'junk')\n"
    "    except OSError:\n        pass\n"
)
FORGED = (  # a report as the harness writes it, for this very job (its id read from a frame)
    "import json, os, struct, sys\nframe = sys._getframe()\n"
    "while 'job_id' not in frame.f_locals:\n    frame = frame.f_back\n"
    "body = json.dumps({'id': frame.f_locals['job_id'], 'error': ''}).encode()\n"
    "for fd in range(3, 64):\n    try:\n"
    "        os.write(fd, struct.pack('>I', len(body)) + body)\n"
    "    except OSError:\n        pass\n"
)


def test_the_status_report_cannot_hide_an_error(any_level):
    """Junk or a forged report on any descriptor the program holds cannot turn its error into
    success: the exit status decides, the report only names the error."""
    for prelude in (JUNK, NESTED, FORGED):
        for ending in ("raise ValueError('boom')\n", "os._exit(1)\n"):
            run = run_code(prelude + ending, any_level)
            assert run.error and not run.ok, (prelude, ending, run)
    assert run_code(JUNK + "print('fine')", any_level) == CodeRun("fine\n")  # status 0


def test_the_status_report_cannot_crash_the_sandbox(any_level):
    """Deeply nested JSON on every descriptor used to raise RecursionError in the server (its
    traceback reached the model): now the same sandbox answers the next job, once."""
    run_code("print(1)", any_level)
    before = server_pids(any_level)
    for ending in ("os._exit(0)\n", "os._exit(1)\n", "raise ValueError\n"):
        start = time.monotonic()
        run = run_code(NESTED + ending, any_level)
        assert run.output == "" and not run.timed_out, run
        assert time.monotonic() - start < any_level.wall_limit  # not run twice
    # Under test, the same junk goes to the program's own pipe to the judge: it fails itself.
    judged = run_tests(NESTED + "def f():\n    return 1\n", ["assert f() == 1"], limits=any_level)
    assert judged.passed == 0
    assert run_tests("def f():\n    return 1\n", ["assert f() == 1"], limits=any_level).passed
    assert server_pids(any_level) == before and leftovers(any_level) == []


def test_reports_and_verdicts_are_parsed_within_bounds():
    deep = b"[" * 100_000
    assert harness.parse_frame(struct.pack(">I", len(deep)) + deep) is None
    assert harness.parse_frame(b"junk") is None and harness.parse_frame(b"") is None
    frame = b'{"id": 3, "error": "E"}'
    assert harness.parse_frame(struct.pack(">I", len(frame)) + frame) == {"id": 3, "error": "E"}
    assert harness.parse_frame(b"xx" + struct.pack(">I", len(frame)) + frame) is None
    assert harness.parse_frame(struct.pack(">I", 2) + b"[]") is None  # not an object
    assert harness.parse_object(b'{"a": NaN}') is None


# --- judge handles: shapes of test that a program computing nothing must not pass ---------------

NOTHING = {
    # membership: the program's own __contains__ is never asked
    "contains-anything": (
        "class C:\n    def __contains__(self, item):\n        return True\n"
        "    def __iter__(self):\n        return iter(())\n"
        "def f(*args):\n    return C()\n",
        ["assert 3 in f(1)", "assert 'x' in f(1)", "assert [1] in f(1)"],
    ),
    "contains-no-iter": (
        "class C:\n    __contains__ = lambda self, item: True\ndef f(*args):\n    return C()\n",
        ["assert 3 in f(1)"],
    ),
    # inequality: an object differs from every value in Python, not in the judge
    "object-differs": (
        "def f(*args):\n    return object()\n",
        ["assert f(1) != 2", "assert not (f(1) == 2)", "assert f(1) not in {2, 3}",
         "assert f(1) not in [2, 3]", "assert f(1) not in (2,)", "assert f(1) not in {2: 0}",
         "assert f(1) is not None and f(1) != None"],
    ),
    # iteration: StopIteration from a call would end map/filter early and pass the test
    "stop-iteration": (
        "def f(*args):\n    raise StopIteration\n",
        ["assert all(map(f, [1, 2]))", "assert list(filter(f, [1])) == []",
         "assert not any(map(f, [1]))", "assert sum(map(f, [1, 2])) == 0",
         "assert all(f(x) for x in [1])", "assert [*map(f, [1])] == []"],
    ),
    "stop-iteration-attribute": (
        "class C:\n    @property\n    def x(self):\n        raise StopIteration\n"
        "def f(*args):\n    return C()\n",
        ["assert all(map(lambda v: v.x, [f(1)]))"],
    ),
    # truth values of the program's objects are the program's word
    "truthy-objects": (
        "class T:\n    def __bool__(self):\n        return True\n"
        "def f(*args):\n    return object()\n"
        "def g(*args):\n    return [T(), object()]\n",
        ["assert f(1)", "assert all(map(f, [1, 2]))", "assert all(g(1))", "assert any(g(1))"],
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", NOTHING.values(), ids=NOTHING.keys())
def test_programs_that_compute_nothing_pass_no_shape(any_level, case):
    program, tests = case
    run = attack(any_level, program, tests)
    assert run.verdicts == (False,) * len(tests), run


def test_the_same_shapes_pass_programs_that_compute(any_level):
    program = (
        "class Bag:\n    def __init__(self, items):\n        self.items = list(items)\n"
        "    def __iter__(self):\n        return iter(self.items)\n"
        "    def __len__(self):\n        return len(self.items)\n"
        "def f(x):\n    return x + 1\n"
        "def bag(*items):\n    return Bag(items)\n"
        "def gen(n):\n    yield from range(n)\n"
        "def even(x):\n    return x % 2 == 0\n"
    )
    tests = [
        "assert 3 in bag(1, 2, 3) and 4 not in bag(1, 2, 3) and (1, 2) in bag((1, 2))",
        "assert f(1) != 3 and f(1) not in {3, 4} and f(1) in [2]",
        "assert all(map(f, [1, 2])) and list(filter(even, [1, 2, 4])) == [2, 4]",
        "assert sum(map(f, [1, 2])) == 5 and len(bag(1, 2)) == 2 and list(bag(5)) == [5]",
        "g = gen(2)\nassert next(g) == 0 and next(g) == 1 and next(g, None) is None",
        "assert [x for x in gen(3)] == [0, 1, 2] and sorted(bag(3, 1)) == [1, 3]",
        "b = bag(1)\nassert b == b and b is not None and not (b != b)",
    ]
    run = run_tests(program, tests, limits=any_level)
    assert run.verdicts == (True,) * len(tests), run


# --- verdicts that do not depend on the host's load ----------------------------------------


def test_the_budget_counts_cpu_and_waiting_not_the_load():
    """The arithmetic of `Budget` on fake clocks: a computing job pays its CPU seconds at any
    share of a CPU from MIN_SHARE up; a job that waits pays wall-clock seconds."""
    clock = {"wall": 0.0, "cpu": 0.0}

    class Budget(harness.Budget):
        def now(self):
            return clock["wall"]

        def cpu_seconds(self, pid):
            return clock["cpu"]

    def spend(*phases, seconds=10.0):
        """Run phases of (wall-clock seconds, share of a CPU); the budget used."""
        clock.update(wall=0.0, cpu=0.0)
        budget = Budget(seconds, [1])
        for wall, share in phases:
            for _ in range(100):
                clock["wall"] += wall / 100
                clock["cpu"] += share * wall / 100
        return round(budget.seconds - budget.left(), 6)

    assert spend((0.5, 1.0)) == 0.5  # computing on an idle machine
    assert spend((1.0, 0.5)) == 0.5  # the same work with both cores busy
    assert spend((3.0, harness.MIN_SHARE)) == pytest.approx(1.0)  # the least share absorbed
    assert spend((0.7, 0.0)) == 0.7  # sleeping or blocked: wall-clock seconds
    assert spend((1.0, 0.2)) == pytest.approx(0.2 + 0.4)  # under MIN_SHARE: waiting counts
    assert spend((0.5, 2.0)) == 1.0  # two threads: twice the CPU seconds
    assert spend((1.0, 0.25), (1.0, 0.45)) == pytest.approx(0.7)  # an uneven share, on average
    assert Budget(1.0, [1]).wait() == harness.POLL
    clock["wall"] += 1.0
    assert Budget(1.0, [1]).wait() == harness.POLL and spend((1.0, 0.0), seconds=1.0) == 1.0


def test_a_wall_clock_cap_ends_the_budget_and_says_it_cut():
    """`Budget(wall=...)` on fake clocks: the caller's wall-clock cap ends a job that still has
    CPU time (`wall_cut`), whatever its share of a CPU; a job whose CPU budget runs out first is
    not a wall cut; the limits message's `wall` is read only when it is a number above 0."""
    clock = {"wall": 0.0, "cpu": 0.0}

    class Budget(harness.Budget):
        def now(self):
            return clock["wall"]

        def cpu_seconds(self, pid):
            return clock["cpu"]

    def run(seconds, wall, share):
        """Advance until the budget is spent: (wall-clock seconds taken, wall_cut)."""
        clock.update(wall=0.0, cpu=0.0)
        budget = Budget(seconds, [1], wall)
        while budget.wait() > 0:
            clock["wall"] += 0.01
            clock["cpu"] += share * 0.01
        return round(clock["wall"], 2), budget.wall_cut

    assert run(10.0, 2.0, 1.0) == (2.0, True)  # computing: cut at the cap, 8 CPU s left
    assert run(10.0, 2.0, 0.0) == (2.0, True)  # waiting
    assert run(1.0, 2.0, 1.0) == (1.0, False)  # the CPU timeout first
    taken, cut = run(1.0, 5.0, harness.MIN_SHARE)  # a busy machine: still the CPU timeout
    assert taken == pytest.approx(3.0, abs=0.02) and not cut
    assert run(1.0, None, 1.0) == (1.0, False)  # no cap
    assert harness.wall_cap({"timeout": 1.0, "wall": 2.5}) == 2.5
    for wrong in (0, -1.0, float("nan"), float("inf"), True, "2", None):
        assert harness.wall_cap({"timeout": 1.0, "wall": wrong}) is None
    assert harness.wall_cap({"timeout": 1.0}) is None


# A correct program that needs 0.7 CPU seconds: well inside a 1 s budget on an idle machine,
# 1.05 s or more of wall-clock time with every core busy (a wall-clock budget timed it out).
WORK = "import time\ndef solve():\n    t = time.process_time()\n"
WORK += "    while time.process_time() - t < 0.7:\n        pass\n    return 42\n"
LOAD_CASES = (
    (WORK, ["assert solve() == 42"]),
    ("def solve():\n    return 42\n", ["assert solve() == 42", "assert solve() == 41"]),
    ("def solve():\n    while True:\n        pass\n", ["assert solve() == 42"]),
    ("import time\ndef solve():\n    time.sleep(100)\n", ["assert solve() == 42"]),
)
EXPECTED = [((True,), False), ((True, False), False), ((False,), True), ((False,), True), "42"]


SHARE = (  # the share of a CPU a program gets here now, measured by 0.3 CPU seconds of work
    "import time\nt, c = time.time(), time.process_time()\n"
    "while time.process_time() - c < 0.3:\n    pass\nprint(0.3 / (time.time() - t))\n"
)


def verdicts(limits: Limits) -> tuple[list, float]:
    """The verdicts of LOAD_CASES and of WORK run whole; the least share of a CPU a program got
    meanwhile (0 when the probe itself ran out of time)."""
    shares = [run_code(SHARE, limits).output]
    runs = [run_tests(program, tests, limits=limits) for program, tests in LOAD_CASES]
    answer = run_code(WORK + "print(solve())", limits).output.strip()
    shares.append(run_code(SHARE, limits).output)
    share = min(float(text) if text.strip() else 0.0 for text in shares)
    return [(run.verdicts, run.timed_out) for run in runs] + [answer], share


@pytest.mark.slow
def test_verdicts_do_not_change_with_host_load():
    """The same verdicts on an idle machine and with every core busy (one spinning process per
    core): a program's budget is CPU time, not wall-clock time. (On a machine so busy that a
    program gets less than MIN_SHARE of a CPU without the spinners, the test cannot tell.)"""
    level = next((lv for lv in NAMESPACED if usable(lv)), "process")
    limits = Limits(timeout=1.0, memory_mb=256, workers=1, isolation=level)
    try:
        idle, idle_share = verdicts(limits)
        spin = [sys.executable, "-S", "-c", "while True:\n    pass\n"]
        spinners = [subprocess.Popen(spin) for _ in range(len(os.sched_getaffinity(0)))]
        try:
            loaded, loaded_share = verdicts(limits)
        finally:
            for spinner in spinners:
                spinner.kill()
                spinner.wait()
    finally:
        sandbox._stop_all(limits.pool.workers)
    share = min(idle_share, loaded_share)
    if (idle, loaded) != (EXPECTED, EXPECTED) and share < harness.MIN_SHARE * 1.15:
        pytest.skip(f"this machine is busier than the sandbox absorbs: a program got {share:.0%}")
    assert idle == EXPECTED
    assert loaded == EXPECTED


def usable(level: str) -> bool:
    try:
        Limits(isolation=level).level()
    except sandbox.SandboxUnavailable:
        return False
    return True
