"""The code sandbox against an attacker: every attack ends within its wall-clock limit + 1 s
(`Limits.wall_limit`: the timeout counts CPU seconds, so a busy machine stretches it), earns
nothing, leaves the trainer, its files and its secrets alone, and leaves no process behind.

Each attack runs under every OS isolation level that works on this machine (bubblewrap,
util-linux unshare); the attacks that do not depend on the filesystem also run in the weaker
process-only mode. A level that cannot run here is skipped with the reason (install bubblewrap
and allow user namespaces to run them all)."""

import collections
import contextlib
import dataclasses
import datetime
import json
import math
import os
import signal
import socket
import struct
import threading
import time
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest
from grpo_kit import sandbox as sandbox_module
from grpo_kit.sandbox import (
    MAX_OUTPUT_CHARS,
    CodeRun,
    Limits,
    Pool,
    SandboxUnavailable,
    harness,
    isolation,
    run_code,
    run_programs,
    run_tests,
)

TIMEOUT = 1.0
NAMESPACED = ("bubblewrap", "unshare")
# Attack programs never define `solve`, so only a forged verdict could pass these.
TESTS = ["assert solve() == 42", "assert solve() != 0", "assert solve()"]


def available(level: str) -> Limits:
    """A sandbox of `level`, skipped with the reason where it cannot run. Under a root trainer
    whose Python the sandbox's dedicated user cannot read (under /root, say), bubblewrap and
    process mode run the system's Python (`sandbox_python`, as the error says)."""
    pythons = [None, *(["/usr/bin/python3"] if os.path.exists("/usr/bin/python3") else [])]
    for python in pythons:
        limits = Limits(TIMEOUT, 256, 1, isolation=level, python=python)
        try:
            limits.level()
            return limits
        except SandboxUnavailable as err:
            problem = err
    pytest.skip(f"{level} isolation unavailable here: {problem}")


@pytest.fixture(scope="module", params=NAMESPACED)
def isolated(request):
    """A sandbox with OS isolation (one per level that works here)."""
    return available(request.param)


@pytest.fixture(scope="module", params=(*NAMESPACED, "process"))
def any_level(request):
    """Every level, the weaker process-only one included."""
    return available(request.param)


def process_tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path("/proc", entry, "stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def leftovers(limits: Limits) -> list[int]:
    """Processes in a sandbox beyond its tool (bwrap / unshare), the harness's server and its
    collector (the process that reads what programs say; it never runs one)."""
    extra = []
    for worker in limits.pool.workers:
        tree = process_tree(worker.process.pid)
        expected = 1 if worker.level == "process" else 2
        extra += [pid for pid in tree[expected:] if not is_collector(pid)]
    return extra


def is_collector(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/comm").read_bytes().strip() == harness.COLLECTOR_NAME
    except OSError:
        return False


def attack(limits: Limits, program: str, tests=TESTS):
    start = time.monotonic()
    run = run_tests(program, tests, limits=limits)
    elapsed = time.monotonic() - start
    # TIMEOUT CPU seconds: TIMEOUT of wall-clock time on an idle machine, more on a busy one.
    assert elapsed < limits.wall_limit + 1.0, f"took {elapsed:.1f}s"
    assert run.passed == 0, run
    assert leftovers(limits) == []
    honest = run_tests("def solve():\n    return 42\n", TESTS, limits=limits)
    assert honest.passed == 3, honest  # the sandbox still works after the attack
    return run


def test_honest_program_passes(any_level):
    run = run_tests("def f():\n    return 1\n", ["assert f() == 1", "assert f() == 2"],
                    limits=any_level)  # fmt: skip
    assert (run.passed, run.total, run.verdicts) == (1, 2, (True, False))


# --- infinite loops and bombs ------------------------------------------------------------------


@pytest.mark.parametrize(
    "program",
    [
        "while True:\n    pass\n",
        "def solve():\n    while True:\n        pass\n",
        "import signal\nfor s in (signal.SIGTERM, signal.SIGINT, signal.SIGXCPU):\n"
        "    signal.signal(s, signal.SIG_IGN)\nwhile True:\n    pass\n",
        "import time\ntime.sleep(1000)\n",
        "import sys\nsys.stdin.read()\nwhile True:\n    pass\n",
    ],
    ids=["loop", "loop-in-call", "ignore-signals", "sleep", "stdin"],
)
def test_infinite_loops_time_out(any_level, program):
    assert attack(any_level, program).timed_out


@pytest.mark.parametrize(
    "program",
    [
        "import os\nwhile True:\n    os.fork()\n",
        "import os\ntry:\n    os.fork()\nexcept OSError:\n    pass\nwhile True:\n    pass\n",
        "import subprocess\nsubprocess.run(['sleep', '100'])\n",
        "import os\nos.system('sleep 100 &')\n",
        "import os, sys\nos.posix_spawn(sys.executable, [sys.executable], {})\n",
        "import multiprocessing\nmultiprocessing.Process(target=print).start()\n",
        "import threading\n"
        "def spin():\n    while True:\n        pass\n"
        "for _ in range(10_000):\n    threading.Thread(target=spin).start()\n",
    ],
    ids=["fork-bomb", "fork-then-loop", "subprocess", "system", "posix_spawn",
         "multiprocessing", "thread-bomb"],
)  # fmt: skip
def test_process_and_thread_bombs(any_level, program):
    attack(any_level, program)


@pytest.mark.parametrize(
    "program",
    [
        "blocks = []\nwhile True:\n    blocks.append(bytearray(50_000_000))\n",
        "x = 'x' * (10 ** 10)\n",
        "import sys\nsys.setrecursionlimit(10 ** 8)\ndef f(n):\n    return f(n + 1)\nf(0)\n",
        "while True:\n    print('x' * 100_000)\n",
        "import sys\nwhile True:\n    sys.stderr.write('x' * 100_000)\n",
        "with open('big', 'wb') as f:\n    while True:\n        f.write(b'x' * 1_000_000)\n",
        "import os\nfor i in range(10 ** 6):\n    open(f'f{i}', 'w').close()\n",
        "import os\nos.makedirs('a/' * 2000, exist_ok=True)\n",
    ],
    ids=["memory", "huge-string", "recursion", "stdout", "stderr", "disk", "inodes", "deep-dirs"],
)
def test_memory_output_and_disk_bombs(any_level, program):
    attack(any_level, program)


# --- verdicts cannot be forged -----------------------------------------------------------------


FORGERIES = {
    "sys.exit": "import sys\nsys.exit(0)\n",
    "os._exit": "import os\nos._exit(0)\n",
    "SystemExit": "raise SystemExit(0)\n",
    "KeyboardInterrupt": "raise KeyboardInterrupt\n",
    "exit-in-call": "import os\ndef solve():\n    os._exit(0)\n",
    "fake-result-lines": "import os\nfor fd in range(1024):\n    try:\n"
    "        os.write(fd, b'\\x00\\x00\\x00\\x0e{\"done\":true}0 0 pass\\n')\n"
    "    except OSError:\n        pass\n",
    "fake-stdout": "print('0 pass')\nprint('{\"i\": 0, \"ok\": true}')\n",
    "rebind-builtins": "import builtins\nbuiltins.AssertionError = type('A', (), {})\n"
    "builtins.isinstance = lambda *a: True\nbuiltins.str = lambda value: ''\n",
    "frame-walk": "import sys\nframe = sys._getframe(0)\nwhile frame.f_back:\n"
    "    frame = frame.f_back\n    frame.f_globals['send'] = lambda *a: None\n",
    "traceback-frames": "try:\n    raise ValueError\nexcept ValueError as e:\n"
    "    frame = e.__traceback__.tb_frame\n    while frame:\n"
    "        frame.f_globals.pop('judge_main', None)\n        frame = frame.f_back\n",
    "gc-scan": "import gc\nfor o in gc.get_objects():\n"
    "    if isinstance(o, dict) and 'tests' in o:\n        o['tests'] = ['assert True'] * 3\n"
    "def solve():\n    return 0\n",
    "memory-scan": "import ctypes, re\nfound = []\n"
    "for line in open('/proc/self/maps'):\n    if 'rw' in line.split()[1]:\n"
    "        a, b = (int(x, 16) for x in line.split()[0].split('-'))\n"
    "        data = ctypes.string_at(a, b - a)\n"
    "        found += re.findall(rb'assert solve\\(\\) == (\\d+)', data)\n"
    "def solve():\n    return int(found[0]) if found else 0\n",
    "signal-handler": "import signal, os\n"
    "signal.signal(signal.SIGALRM, lambda *a: os._exit(0))\nsignal.alarm(1)\n"
    "def solve():\n    while True:\n        pass\n",
    "atexit": "import atexit, os\natexit.register(lambda: os.write(1, b'pass'))\n"
    "def solve():\n    raise SystemExit\n",
    "trace": "import sys\nsys.settrace(lambda *a: None)\ndef solve():\n    return 0\n",
    "kill-the-judge": "import os, signal\nfor pid in range(1, 300):\n    try:\n"
    "        os.kill(pid, signal.SIGSTOP)\n    except OSError:\n        pass\n"
    "def solve():\n    return 0\n",
    "ptrace": "import ctypes\nlibc = ctypes.CDLL(None)\nfor pid in range(1, 300):\n"
    "    libc.ptrace(16, pid, 0, 0)\ndef solve():\n    return 0\n",
}


@pytest.mark.parametrize("program", FORGERIES.values(), ids=FORGERIES.keys())
def test_forged_verdicts_earn_nothing(any_level, program):
    attack(any_level, program)


def test_redefining_what_the_tests_use_earns_nothing(any_level):
    program = (
        "abs = lambda x: 0\nlen = lambda x: 3\nsorted = lambda x: [1]\nisinstance = all\n"
        "class math:\n    isclose = staticmethod(lambda *a, **k: True)\n"
        "import builtins\nbuiltins.abs = abs\n"
        "def solve():\n    return 0\n"
    )
    tests = [
        "assert abs(solve() - 42) < 1e-9",
        "assert math.isclose(solve(), 42)",
        "import math\nassert math.isclose(solve(), 42)",
        "assert len(solve()) == 3",
        "assert sorted(solve()) == [1]",
        "assert isinstance(solve(), str)",
    ]
    run = attack(any_level, program, tests)
    assert run.total == len(tests)


def test_the_memory_scan_attack_is_real():
    """The scan finds the expected value when it is in the program's memory (here, its own
    source), so its failing above means the tests never enter the program's process."""
    limits = available("process")  # /proc/self/maps exists only without a mount namespace
    bait = "BAIT = 'assert solve() == 42'\n"
    run = run_tests(bait + FORGERIES["memory-scan"], TESTS[:1], limits=limits)
    assert run.passed == 1


ALWAYS_EQUAL = {
    "eq-object": "class E:\n    def __eq__(self, other):\n        return True\n"
    "    def __ne__(self, other):\n        return False\n"
    "    def __bool__(self):\n        return True\n"
    "def solve():\n    return E()\n",
    "int-subclass": "class I(int):\n    def __eq__(self, other):\n        return True\n"
    "    def __ne__(self, other):\n        return False\n"
    "def solve():\n    return I(0)\n",
    "str-subclass": "class S(str):\n    __eq__ = lambda self, other: True\n"
    "    __ne__ = lambda self, other: False\n"
    "def solve():\n    return S('')\n",
    "spoofed-class": "class E:\n    __class__ = property(lambda self: int)\n"
    "    __eq__ = lambda self, other: True\n    __ne__ = lambda self, other: False\n"
    "def solve():\n    return E()\n",
    "list-of-eq": "class E:\n    __eq__ = lambda self, other: True\n"
    "    __ne__ = lambda self, other: False\n"
    "def solve():\n    return [E()]\n",
    "not-implemented": "class E:\n    def __eq__(self, other):\n        return NotImplemented\n"
    "    __ne__ = __eq__\n"
    "def solve():\n    return E()\n",
}


@pytest.mark.parametrize("program", ALWAYS_EQUAL.values(), ids=ALWAYS_EQUAL.keys())
def test_objects_equal_to_everything_earn_nothing(any_level, program):
    attack(any_level, program, ["assert solve() == 42", "assert solve() == [1]",
                                "assert not (solve() != 42)"])  # fmt: skip


# --- signals -----------------------------------------------------------------------------------


def test_signals_reach_neither_trainer_nor_sandbox(any_level):
    trainer = os.getpid()
    before = [w.process.pid for w in any_level.pool.workers]
    for program in (
        f"import os, signal\nos.kill({trainer}, signal.SIGKILL)\n",
        "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n",
        "import os, signal\nos.kill(1, signal.SIGKILL)\n",
        "import os, signal\nos.kill(-1, signal.SIGKILL)\n",
        f"import os, signal\nos.killpg(os.getpgid({trainer}), signal.SIGKILL)\n",
        "import os, signal\nfor pid in range(2, 4096):\n    try:\n"
        "        os.kill(pid, signal.SIGKILL)\n    except OSError:\n        pass\n",
    ):
        attack(any_level, program)
    assert os.getpid() == trainer  # still here
    assert [w.process.pid for w in any_level.pool.workers] == before or not before


# --- the trainer's secrets and files (OS isolation only) -------------------------------------


LEAK = r"""
import glob, io, linecache, os, pathlib, shutil, sys
SECRET = SECRET_PATH
FOLDER = FOLDER_PATH

def attempts():
    yield lambda: os.environ.get("HF_TOKEN", "")
    yield lambda: repr(dict(os.environ)) + repr(os.environb)
    yield lambda: open("/proc/self/environ").read()
    yield lambda: open("/proc/%d/environ" % os.getppid()).read()
    yield lambda: open("/proc/1/environ").read()
    yield lambda: "".join(open("/proc/" + p + "/environ").read() for p in os.listdir("/proc")
                          if p.isdigit())
    yield lambda: open(SECRET).read()
    yield lambda: os.read(os.open(SECRET, os.O_RDONLY), 1000).decode()
    yield lambda: io.FileIO(SECRET).read().decode()
    yield lambda: pathlib.Path(SECRET).read_text()
    yield lambda: linecache.getline(SECRET, 1)
    yield lambda: open("/proc/self/root" + SECRET).read()
    yield lambda: open("../" * 20 + SECRET.lstrip("/")).read()
    yield lambda: (os.symlink(SECRET, "link"), open("link").read())[1]
    yield lambda: (os.link(SECRET, "hard"), open("hard").read())[1]
    yield lambda: (shutil.copy(SECRET, "copy"), open("copy").read())[1]
    yield lambda: repr(os.listdir(FOLDER)) + repr(glob.glob(FOLDER + "/*"))
    yield lambda: (sys.path.insert(0, FOLDER), __import__("secret_module").VALUE)[1]
    yield lambda: open(os.path.expanduser("~/.cache/huggingface/token")).read()
    yield lambda: open("/root/.cache/huggingface/token").read()

def solve():
    found = []
    for attempt in attempts():
        try:
            found.append(str(attempt()))
        except BaseException:
            pass
    return " ".join(found)
"""


def test_secrets_are_out_of_reach(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_TOKEN", "hf_secret_value")  # set before the sandbox starts
    (tmp_path / "token").write_text("hf_secret_value")
    (tmp_path / "secret_module.py").write_text("VALUE = 'hf_secret_value'\n")
    for level in NAMESPACED:
        limits = available(level)
        program = LEAK.replace("SECRET_PATH", repr(str(tmp_path / "token")))
        program = program.replace("FOLDER_PATH", repr(str(tmp_path)))
        run = attack(limits, program, ["assert 'hf_secret_value' in solve()",
                                       "assert 'secret_module' in solve()"])  # fmt: skip
        assert run.total == 2


def test_the_program_sees_only_the_interpreter(isolated):
    probe = (
        "import os, sys\n"
        "def visible():\n    return sorted(os.listdir('/'))\n"
        "def writable():\n    found = []\n"
        "    for d in ('/', '/usr', '/dev', '/dev/shm', sys.prefix,\n"
        "              os.path.dirname(os.__file__)):\n"
        "        try:\n            open(os.path.join(d, 'x'), 'w').close()\n"
        "            found.append(d)\n        except OSError:\n            pass\n"
        "    return found\n"
        "def cwd():\n    return os.getcwd()\n"
        "def env():\n    return sorted(os.environ)\n"
        "def packages():\n"
        "    return [p for p in sys.path if 'site-packages' in p and os.listdir(p)]\n"
    )
    tests = [
        "assert 'proc' not in visible() and 'home' not in visible()",
        "import os\nassert not os.path.exists('/etc/passwd') and not os.path.exists('/bin/sh')",
        "assert writable() == []",
        "assert cwd().startswith('/tmp')",
        "assert set(env()) <= {'HOME', 'LANG', 'PATH', 'PWD', 'PYTHONHASHSEED', 'TMPDIR'}",
        "assert packages() == []",
    ]
    run = run_tests(probe, tests, limits=isolated)
    assert run.verdicts == (True,) * len(tests), run


def test_writing_outside_its_directory(isolated, tmp_path):
    target = tmp_path / "pwned.txt"
    keep = tmp_path / "keep.txt"
    keep.write_text("host data")
    for program in (
        f"open({str(target)!r}, 'w').write('x')\n",
        f"import os\nos.remove({str(keep)!r})\n",
        f"import os\nos.rename({str(keep)!r}, 'stolen.txt')\n",
        f"import os\nos.chmod({str(keep)!r}, 0)\n",
        f"import pathlib\npathlib.Path({str(keep)!r}).write_text('changed')\n",
        "open('../escape.txt', 'w').write('x')\n",
        "open('/tmp/escape.txt', 'w').write('x')\n",
    ):
        attack(isolated, program)
    assert not target.exists()
    assert keep.read_text() == "host data"
    assert not Path("/tmp/escape.txt").exists()


def test_nothing_carries_over_between_programs(any_level):
    """Files and state a program leaves are gone before the next one runs."""
    writer = "import os\nopen('note', 'w').write('42')\nos.makedirs('d', exist_ok=True)\n"
    run_tests(writer, ["assert True"], limits=any_level)
    reader = "import os\ndef solve():\n    return int(open('note').read())\n"
    attack(any_level, reader)


def test_no_network(isolated):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(TIMEOUT + 0.5)
    port = server.getsockname()[1]
    connected = []

    def accept():
        with contextlib.suppress(OSError):
            connected.append(server.accept())

    thread = threading.Thread(target=accept)
    thread.start()
    for program in (
        f"import socket\nsocket.create_connection(('127.0.0.1', {port})).send(b'x')\n",
        f"import _socket\n_socket.socket().connect(('127.0.0.1', {port}))\n",
        "import urllib.request\nurllib.request.urlopen('http://example.com', timeout=0.5)\n",
    ):
        attack(isolated, program)
    thread.join()
    server.close()
    assert connected == []


def test_hard_exit_inside_a_test_stops_credit(any_level):
    program = "import os\ndef f():\n    os._exit(0)\n"
    tests = ["assert f is not None", "assert f() is None", "assert f is not None"]
    run = run_tests(program, tests, limits=any_level)
    assert run.verdicts == (True, False, False)  # the program is gone after the exit


def test_unknown_isolation_is_refused():
    with pytest.raises(SandboxUnavailable, match="sandbox_isolation must be one of"):
        Limits(isolation="chroot").level()


def test_killed_sandbox_is_replaced(any_level):
    run_tests("x = 1", ["assert x == 1"], limits=any_level)
    for worker in any_level.pool.workers:
        os.killpg(worker.process.pid, signal.SIGKILL)
    run = run_tests("def f():\n    return 1\n", ["assert f() == 1"], limits=any_level)
    assert run.passed == 1


def test_a_sandbox_outlives_the_thread_that_started_it(any_level):
    """A tool turn runs its programs from a short-lived thread (`asyncio.to_thread`); the
    workers it starts must not die with it (bubblewrap's --die-with-parent follows the thread
    that started it), or the next turn's programs fail with 'the sandbox did not start'."""
    limits = dataclasses.replace(any_level, pool=Pool())  # workers of its own, started below
    try:
        starter = threading.Thread(target=run_code, args=("print(1)", limits))
        starter.start()
        starter.join()
        (worker,) = limits.pool.workers
        time.sleep(0.3)  # the kernel's signal to the sandbox of an ended thread comes at once
        assert worker.process.poll() is None, worker.why()
        assert run_code("print(2)", limits) == CodeRun("2\n")
        assert limits.pool.workers == [worker]  # the same sandbox ran it
    finally:
        sandbox_module._stop_all(limits.pool.workers)


# --- whole programs (run_code): their output comes back, bounded, from behind the same walls ----


def run_attack(limits: Limits, program: str, **options) -> CodeRun:
    """Run a whole program as an attacker would; it ends in time and leaves nothing behind."""
    start = time.monotonic()
    run = run_code(program, limits, **options)
    elapsed = time.monotonic() - start
    assert elapsed < limits.wall_limit + 1.0, f"took {elapsed:.1f}s"
    assert leftovers(limits) == []
    assert run_code("print(6 * 7)", limits) == CodeRun("42\n")  # the sandbox still works
    return run


def test_run_code_returns_what_the_program_prints(any_level):
    program = (
        "import sys\nprint('out')\nsys.stderr.write('err\\n')\n"
        "if __name__ == '__main__':\n    print(sum(range(10)))\n"
    )
    run = run_code(program, any_level)
    assert run == CodeRun("out\nerr\n45\n") and run.ok
    assert run_code("x = 1", any_level) == CodeRun("")
    assert run_code("import sys\nprint('bye')\nsys.exit(0)", any_level) == CodeRun("bye\n")


def test_run_code_reports_how_a_program_failed(any_level):
    assert run_code("print('before')\n1 / 0\n", any_level) == CodeRun(
        "before\n", "ZeroDivisionError: division by zero"
    )
    assert run_code("print(", any_level).error.startswith("SyntaxError: ")
    assert run_code("input()", any_level).error == "EOFError: EOF when reading a line"
    assert run_code("import sys\nsys.exit(3)", any_level).error == "SystemExit: 3"
    assert run_code("import os\nos._exit(4)", any_level).error == "the program exited with status 4"
    crash = run_code("import ctypes\nctypes.string_at(0)", any_level)
    assert crash.error == "the program was killed by SIGSEGV" and not crash.ok


def test_run_code_interleaves_with_tests(any_level):
    """Programs and test jobs share the workers; several programs keep their order."""
    runs = run_programs([f"print({i} * {i})" for i in range(4)], any_level)
    assert [run.output for run in runs] == ["0\n", "1\n", "4\n", "9\n"]
    judged = run_tests("def f():\n    return 1\n", ["assert f() == 1"], limits=any_level)
    assert judged.passed == 1
    assert run_code("print('again')", any_level).output == "again\n"


@pytest.mark.parametrize(
    "program",
    ["import time\nprint('started', flush=True)\ntime.sleep(1000)\n",
     "import os\nprint('started')\nfor fd in range(64):\n    try:\n        os.close(fd)\n"
     "    except OSError:\n        pass\nwhile True:\n    pass\n"],
    ids=["sleep", "closed-pipes"],
)  # fmt: skip
def test_run_code_times_out(any_level, program):
    run = run_attack(any_level, program)
    assert run.timed_out and not run.ok and run.error == ""


@pytest.mark.parametrize(
    "program",
    [
        "while True:\n    print('x' * 100_000)\n",
        "import sys\nwhile True:\n    sys.stderr.write('x' * 100_000)\n",
        "import os\nwhile True:\n    os.write(1, b'x' * 65536)\n",
        "print('x' * 10 ** 7)\n",
    ],
    ids=["stdout", "stderr", "raw-fd", "one-huge-line"],
)
def test_run_code_output_is_bounded(any_level, program):
    run = run_attack(any_level, program, max_output_chars=1000)
    assert run.output == "x" * 1000 and run.truncated and not run.timed_out and not run.ok


def test_output_limits_count_characters(any_level):
    assert run_code("print('x' * 9)", any_level, max_output_chars=10) == CodeRun("x" * 9 + "\n")
    assert run_code("print('x' * 10)", any_level, max_output_chars=10).truncated
    wide = run_code("print('\u00e9\U0001f600' * 50)", any_level, max_output_chars=7)
    assert wide.output == "\u00e9\U0001f600" * 3 + "\u00e9" and wide.truncated
    assert run_code("print('\\udcff')", any_level).output == "\\udcff\n"  # unencodable
    with pytest.raises(ValueError, match="max_output_chars must be"):
        run_code("print(1)", any_level, max_output_chars=MAX_OUTPUT_CHARS + 1)


@pytest.mark.parametrize(
    "program",
    [
        "import os\nwhile True:\n    os.fork()\n",
        "import subprocess\nsubprocess.run(['sleep', '100'])\n",
        "import threading, time\n"
        "def spin():\n    while True:\n        print('t')\n"
        "for _ in range(50):\n    threading.Thread(target=spin, daemon=True).start()\n"
        "time.sleep(100)\n",
        "blocks = []\nwhile True:\n    blocks.append(bytearray(50_000_000))\n",
        "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n",
        "import os, signal\nos.kill(-1, signal.SIGKILL)\n",
        "with open('big', 'wb') as f:\n    while True:\n        f.write(b'x' * 1_000_000)\n",
    ],
    ids=["fork-bomb", "subprocess", "threads", "memory", "kill-parent", "kill-all", "disk"],
)
def test_run_code_attacks_end_in_time(any_level, program):
    trainer = os.getpid()
    run = run_attack(any_level, program)
    assert not run.ok and os.getpid() == trainer


def test_run_code_cannot_reach_the_trainers_secrets(monkeypatch, tmp_path):
    """What a program prints comes back, so a leak would show in its output."""
    monkeypatch.setenv("HF_TOKEN", "hf_secret_value")  # set before the sandbox starts
    (tmp_path / "token").write_text("hf_secret_value")
    (tmp_path / "secret_module.py").write_text("VALUE = 'hf_secret_value'\n")
    program = LEAK.replace("SECRET_PATH", repr(str(tmp_path / "token")))
    program = program.replace("FOLDER_PATH", repr(str(tmp_path))) + "print(solve())\n"
    for level in NAMESPACED:
        run = run_attack(available(level), program)
        assert run.ok, run
        assert "hf_secret_value" not in run.output and "secret_module" not in run.output


def test_run_code_cannot_write_outside_or_keep_files(isolated, tmp_path):
    target = tmp_path / "pwned.txt"
    run_attack(isolated, f"open({str(target)!r}, 'w').write('x')\n")
    assert not target.exists()
    run_code("open('note', 'w').write('42')", isolated)
    assert run_code("print(open('note').read())", isolated).error.startswith("FileNotFoundError")


def test_a_wall_clock_cap_cuts_a_job_before_its_cpu_timeout(any_level):
    """`wall_seconds` (a caller's deadline, e.g. a tool turn's time left): a job ends that many
    wall-clock seconds after it starts, however much of its CPU timeout is left, says so
    (`wall_cut`) and leaves nothing behind; the CPU timeout itself is unchanged."""
    limits = dataclasses.replace(any_level, timeout=30.0)  # the same workers, 30 CPU seconds
    start = time.monotonic()
    endless = run_code("while True:\n    pass\n", limits, wall_seconds=0.5)
    assert time.monotonic() - start < 0.5 + 1.0  # not 30 s (or 90 s, the wall limit)
    assert endless.timed_out and endless.wall_cut and not endless.ok
    assert leftovers(limits) == []
    sleeper = run_tests("import time\ndef solve():\n    time.sleep(100)\n", TESTS, limits=limits,
                        wall_seconds=0.5)  # fmt: skip
    assert sleeper.timed_out and sleeper.wall_cut and sleeper.passed == 0
    assert run_code("print(6 * 7)", limits, wall_seconds=5.0) == CodeRun("42\n")  # time to spare
    # A cap no shorter than the wall limit changes nothing: the CPU timeout cuts, as before.
    cpu = run_code("while True:\n    pass\n", any_level, wall_seconds=any_level.wall_limit)
    assert cpu.timed_out and not cpu.wall_cut
    for wrong in (0, -1.0, float("nan"), True, "1"):
        with pytest.raises(ValueError, match="wall_seconds must be"):
            run_code("print(1)", any_level, wall_seconds=wrong)


# --- the pieces: the seccomp filter, the plain-data format, the interpreter's files -------------


def run_filter(program: bytes, number: int, arch: int, *arguments: int) -> int:
    """What the kernel's classic-BPF machine answers for one system call."""
    arguments = (*arguments, 0, 0, 0, 0, 0, 0)[:6]
    data = struct.pack("<iIQ6Q", number, arch, 0, *(a & (2**64 - 1) for a in arguments))
    counter = accumulator = 0
    while True:
        code, yes, no, k = struct.unpack_from("<HBBI", program, counter * 8)
        counter += 1
        if code == harness.LD:
            accumulator = struct.unpack_from("<I", data, k)[0]
        elif code == harness.RET:
            return k
        else:
            taken = {harness.JEQ: accumulator == k, harness.JGE: accumulator >= k,
                     harness.JSET: bool(accumulator & k)}[code]  # fmt: skip
            counter += yes if taken else no


@pytest.mark.parametrize("machine", sorted(harness.SYSCALLS))
def test_seccomp_filter_decisions(machine):
    arch, calls = harness.SYSCALLS[machine]
    program = harness.seccomp_program(machine, pid=4242)
    allow, eperm = harness.ALLOW, harness.EPERM

    def verdict(name_or_number, *arguments, on=arch):
        number = calls[name_or_number] if isinstance(name_or_number, str) else name_or_number
        return run_filter(program, number, on, *arguments)

    assert verdict("clone", harness.CLONE_THREAD | 0x3D0F00) == allow  # a thread
    assert verdict("clone", 17) == eperm  # fork(): clone(SIGCHLD)
    assert verdict("clone3") == harness.ENOSYS  # libc falls back to clone for threads
    assert verdict("kill", 4242) == allow and verdict("kill", 0) == allow
    assert verdict("kill", 1) == eperm and verdict("kill", 0xFFFFFFFF) == eperm  # 1, -1
    assert verdict("tgkill", 4242) == allow and verdict("tgkill", 4243) == eperm
    assert verdict("socket", 1) == allow and verdict("socket", 2) == eperm  # AF_UNIX, AF_INET
    # No file owner that makes the kernel signal someone (F_SETOWN, F_SETSIG, F_SETOWN_EX,
    # O_ASYNC; FIOSETOWN, SIOCSPGRP, FIOASYNC) and no typing into a terminal (TIOCSTI).
    for command in (8, 10, 15):
        assert verdict("fcntl", 3, command, 4242) == eperm
    assert verdict("fcntl", 3, 4, os.O_ASYNC | os.O_NONBLOCK) == eperm  # F_SETFL
    assert verdict("fcntl", 3, 4, os.O_NONBLOCK) == allow
    assert verdict("fcntl", 3, 1) == allow and verdict("fcntl", 3, 9) == allow  # GETFD, GETOWN
    for request in (0x8901, 0x8902, 0x5452, 0x5412):
        assert verdict("ioctl", 3, request) == eperm
    assert verdict("ioctl", 1, 0x5401) == allow  # TCGETS (isatty)
    # Memory outside RLIMIT_AS: memfds, and descriptors parked in a socket (SCM_RIGHTS).
    memfd_create, sendmsg, sendmmsg = {"x86_64": (319, 46, 307), "aarch64": (279, 211, 269)}[
        machine
    ]
    assert verdict(memfd_create) == eperm and verdict(447) == eperm  # memfd_secret
    assert verdict(sendmsg) == eperm and verdict(sendmmsg) == eperm
    assert all(verdict(number) == eperm for number in calls["denied"])
    assert verdict(0) == allow or machine == "aarch64"  # read (x86_64) / io_setup (aarch64)
    assert verdict(63) == allow  # read on aarch64, uname on x86_64
    assert verdict("clone", on=0x40000003) == harness.KILL  # another architecture's ABI
    if machine == "x86_64":
        assert verdict(0x40000000 + 57) == eperm  # the x32 ABI
        assert verdict("fork") == eperm and verdict("vfork") == eperm


PLAIN = [
    None, True, 0, -(2**70), 2**62, 1.5, -0.0, float("inf"), "é\udcff", b"\x00",
    bytearray(b"ab"), [1, [2, (3,)]], (), {1, 2}, frozenset({"a"}), {(1, 2): {"k": None}},
    1 + 2j, range(1, 9, 2), Fraction(1, 3), Decimal("-1.50"), datetime.date(2024, 2, 29),
    datetime.datetime(2024, 1, 1, 12, 30), datetime.time(1, 2, 3), datetime.timedelta(-1, 5),
    collections.deque([1, 2], maxlen=3), collections.Counter("aab"),
    collections.OrderedDict(b=1, a=2), collections.namedtuple("Point", "x y")(1, 2),
]  # fmt: skip


@pytest.mark.parametrize("value", PLAIN, ids=[type(v).__name__ for v in PLAIN])
def test_plain_data_crosses_unchanged(value):
    def no_handles(obj):
        raise AssertionError(f"{obj!r} should travel as a value")

    wire = json.loads(json.dumps(harness.encode(value, no_handles)))
    back = harness.decode(wire, lambda message: None)
    assert type(back).__name__ == type(value).__name__ and back == value
    if isinstance(value, collections.deque):
        assert back.maxlen == value.maxlen


def test_nan_and_objects_cross_as_themselves():
    assert math.isnan(harness.decode(harness.encode(float("nan"), None), None))

    class Sneaky(int):
        def __eq__(self, other):
            return True

    handles = []
    wire = harness.encode([Sneaky(1), len], lambda obj: handles.append(obj) or len(handles))
    assert [item["#"] for item in wire] == ["ref", "ref"] and len(handles) == 2
    with pytest.raises(ValueError):
        harness.decode({"#": "exec", "v": "import os"}, None)
    with pytest.raises(ValueError):
        harness.encode([[[[0]]]] * 1, None, depth=harness.MAX_DEPTH)


def test_symlinks_on_the_way_are_recreated(tmp_path):
    (tmp_path / "real" / "lib").mkdir(parents=True)
    (tmp_path / "real" / "lib" / "libx.so").write_text("")
    (tmp_path / "lib").symlink_to("real/lib")
    (tmp_path / "real" / "lib" / "libx.so.1").symlink_to("libx.so")
    links, real = isolation.resolve(str(tmp_path / "lib" / "libx.so.1"))
    assert real == str(tmp_path / "real" / "lib" / "libx.so")
    assert links == {str(tmp_path / "lib"): "real/lib",
                     str(tmp_path / "real" / "lib" / "libx.so.1"): "libx.so"}  # fmt: skip


def test_the_interpreter_and_its_loader_are_found():
    found = isolation.interpreter(None)
    loader = isolation.elf_interpreter(found.executable)
    assert loader is None or os.path.exists(loader)  # None: a static or non-ELF build
    assert found.executable in found.binds or any(
        found.executable.startswith(folder + "/") for folder in found.binds
    )
    assert not any("site-packages" in folder for folder in found.binds) or found.hide
