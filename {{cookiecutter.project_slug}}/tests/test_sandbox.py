"""The local code sandbox against attacks: each ends within timeout + 1 s, earns nothing, leaves
the host process and files alone, and leaves no process behind."""

import contextlib
import os
import socket
import threading
import time
from pathlib import Path

import pytest

from {{ cookiecutter.package_name }}.sandbox import MARKER, Limits, run_tests

LIMITS = Limits(timeout=1.0, memory_mb=256)
# Attack programs never define `solve`, so only a forged result could pass these.
TESTS = ["assert solve() == 42", "assert solve() != 0"]


def leftover_processes(marker: str) -> list[int]:
    """Processes still carrying this run's marker (other runs may be going on in parallel)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if f"{MARKER}={marker}".encode() in Path("/proc", entry, "environ").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found


def attack(program: str, tests=TESTS):
    start = time.monotonic()
    run = run_tests(program, tests, limits=LIMITS)
    elapsed = time.monotonic() - start
    assert elapsed < LIMITS.timeout + 1.0, f"took {elapsed:.1f}s"
    assert run.passed == 0, run
    assert run.marker and leftover_processes(run.marker) == []
    return run


def test_honest_program_passes():
    run = run_tests(
        "def f():\n    return 1\n", ["assert f() == 1", "assert f() == 2"], limits=LIMITS
    )
    assert (run.passed, run.total) == (1, 2)


def test_infinite_loop():
    assert attack("while True:\n    pass\n").timed_out


def test_fork_bomb():
    attack("import os\nwhile True:\n    os.fork()\n")


def test_subprocess_and_shell():
    attack("import subprocess\nsubprocess.run(['sleep', '100'])\n")
    attack("import os\nos.system('sleep 100 &')\n")


def test_memory_bomb():
    attack("blocks = []\nwhile True:\n    blocks.append(bytearray(50_000_000))\n")


def test_huge_stdout_and_stderr():
    attack("while True:\n    print('x' * 100_000)\n")
    attack("import sys\nwhile True:\n    sys.stderr.write('x' * 100_000)\n")


def test_writing_outside_its_directory(tmp_path):
    target = tmp_path / "pwned.txt"
    keep = tmp_path / "keep.txt"
    keep.write_text("host data")
    attack(f"open({str(target)!r}, 'w').write('x')\n")
    attack(f"import os\nos.remove({str(keep)!r})\n")
    attack(f"import os\nos.rename({str(keep)!r}, 'stolen.txt')\n")
    attack("open('../escape.txt', 'w').write('x')\n")
    assert not target.exists()
    assert keep.read_text() == "host data"


def test_reading_environment_secrets(monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_secret_value")
    tests = ["assert 'hf_secret_value' in SECRET"]
    attack("import os\nSECRET = os.environ.get('HF_TOKEN', '')\n", tests)
    attack("import os\nSECRET = open(f'/proc/{os.getppid()}/environ').read()\n", tests)
    attack(
        "import os\nSECRET = open(os.path.expanduser('~/.cache/huggingface/token')).read()\n", tests
    )


def test_opening_a_network_socket():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(1.5)
    port = server.getsockname()[1]
    connected = []

    def accept():
        with contextlib.suppress(OSError):
            connected.append(server.accept())

    thread = threading.Thread(target=accept)
    thread.start()
    attack(f"import socket\nsocket.create_connection(('127.0.0.1', {port})).send(b'x')\n")
    attack(f"import _socket\n_socket.socket().connect(('127.0.0.1', {port}))\n")
    thread.join()
    server.close()
    assert connected == []


def test_killing_its_parent():
    parent = os.getpid()
    attack(f"import os, signal\nos.kill({parent}, signal.SIGKILL)\n")
    attack("import os, signal\nos.kill(os.getppid(), signal.SIGTERM)\n")
    assert os.getpid() == parent  # still here


@pytest.mark.parametrize(
    "program",
    [
        "import sys\nsys.exit(0)\n",
        "import os\nos._exit(0)\n",
        "raise SystemExit(0)\n",
        "import os\nfor fd in range(3, 64):\n    try:\n"
        "        os.write(fd, b'0 0 pass\\n1 1 pass\\n')\n    except OSError:\n        pass\n",
        "print('0 pass')\nprint('1 pass')\n",
        "import builtins\nbuiltins.str = lambda value: '0 pass\\n'\nraise SystemExit\n",
        "import sys\nframe = sys._getframe(1)\n",
        "try:\n    raise ValueError\nexcept ValueError as e:\n"
        "    frame = e.__traceback__.tb_frame.f_back\n",
    ],
    ids=[
        "sys.exit",
        "os._exit",
        "SystemExit",
        "fake-result-lines",
        "fake-stdout",
        "rebind-builtins",
        "read-frames",
        "traceback-frames",
    ],
)
def test_exit_and_forgery_tricks_earn_nothing(program):
    attack(program)


def test_hard_exit_inside_a_test_stops_credit():
    program = "import os\ndef f():\n    os._exit(0)\n"
    run = run_tests(program, ["assert True", "f()", "assert True"], limits=LIMITS)
    assert run.passed == 1  # only the test that really ran before the exit
