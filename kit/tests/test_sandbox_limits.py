"""Per-user kernel limits: a program spends none of the trainer's.

The kernel counts some resources per user (inotify instances and watches, processes and threads
against RLIMIT_NPROC, keys, POSIX message queues), and a user namespace charges them to the user
that made it. A root trainer's sandboxes run as dedicated unprivileged users, so root's counts
stay untouched and RLIMIT_NPROC (never enforced on root) holds; in every mode the seccomp filter
denies the per-user resources a program does not need. These tests run three sandboxes of
inotify and thread bombs and check, meanwhile, that the trainer's user still opens inotify
instances and starts threads. A level that cannot run here is skipped with the reason (install
bubblewrap and allow user namespaces to run them all; under a root trainer bubblewrap runs as the
dedicated user, which must be able to read the interpreter)."""

import ctypes
import json
import os
import platform
import threading
import time
from pathlib import Path

import pytest
from grpo_kit.sandbox import Limits, SandboxUnavailable, run_programs

LEVELS = ("bubblewrap", "unshare", "process")
LIBC = ctypes.CDLL(None, use_errno=True)
# name: (x86_64, aarch64) syscall number; arguments that would succeed when allowed
CALLS = {
    "inotify_init1": (294, 26, (0,)),
    "inotify_init": (253, None, ()),
    "inotify_add_watch": (254, 27, (0, b"/tmp", 0x100)),
    "inotify_rm_watch": (255, 28, (0, 1)),
    "fanotify_init": (300, 262, (0, 0)),
    "fanotify_mark": (301, 263, (0, 1, 2, -100, b"/tmp")),
    "add_key": (248, 217, (b"user", b"k", b"v", 1, -4)),
    "request_key": (249, 218, (b"user", b"k", None, 0)),
    "keyctl": (250, 219, (0, -4, 0)),
    "mq_open": (240, 180, (b"q", 0o100 | 2, 0o600, None)),
}


def available(level: str, workers: int = 1) -> Limits:
    """A sandbox of `level`; under a root trainer whose Python the dedicated user cannot read
    (under /root, say), bubblewrap and process mode run the system's Python."""
    pythons = [None, *(["/usr/bin/python3"] if os.path.exists("/usr/bin/python3") else [])]
    for python in pythons:
        limits = Limits(15.0, 512, workers, isolation=level, python=python)
        try:
            limits.level()
            return limits
        except SandboxUnavailable as err:
            problem = err
    pytest.skip(f"{level} isolation unavailable here: {problem}")


PROBE = """
import ctypes, json
libc = ctypes.CDLL(None, use_errno=True)
found = {}
for name, (number, args) in CALLS.items():
    result = libc.syscall(number, *args)
    found[name] = [result, ctypes.get_errno()]
print(json.dumps(found))
"""


@pytest.mark.parametrize("level", LEVELS)
def test_per_user_resources_are_denied_inside(level):
    limits = available(level)
    index = 0 if platform.machine() == "x86_64" else 1
    calls = {name: (c[index], c[2]) for name, c in CALLS.items() if c[index] is not None}
    source = f"CALLS = {calls!r}\n" + PROBE
    run = run_programs([source], limits)[0]
    assert run.ok, run
    found = json.loads(run.output)
    # EPERM (1) from the seccomp filter: the kernel never counted anything
    assert found == {name: [-1, 1] for name in calls}, found


BOMB = """
import ctypes, json, os, threading, time
libc = ctypes.CDLL(None, use_errno=True)
instances = 0
for _ in range(200):
    if libc.syscall(INOTIFY_INIT1, 0) < 0:
        break
    instances += 1
threading.stack_size(64 * 1024)
hold, threads = threading.Event(), 0
for _ in range(400):
    try:
        threading.Thread(target=hold.wait, daemon=True).start()
    except RuntimeError:
        break
    threads += 1
time.sleep(3)
print(json.dumps({"inotify": instances, "threads": threads}))
hold.set()
"""


def _host_can_open_inotify_and_start_threads() -> str:
    """'' when this process (the trainer's user) opens an inotify instance and starts a
    thread, else what failed."""
    fd = LIBC.inotify_init1(0)
    if fd < 0:
        return f"inotify_init1: {os.strerror(ctypes.get_errno())}"
    os.close(fd)
    try:
        thread = threading.Thread(target=lambda: None)
        thread.start()
        thread.join()
    except RuntimeError as err:
        return f"thread: {err}"
    return ""


def _uids(pid: int) -> set[int]:
    """The real uids, as the host counts them, of `pid`'s descendants (not `pid` itself)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path("/proc", entry, "stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    found, todo = set(), list(children.get(pid, []))
    while todo:
        child = todo.pop()
        todo += children.get(child, [])
        try:
            status = Path("/proc", str(child), "status").read_text()
        except OSError:
            continue
        found.add(int(status.split("\nUid:")[1].split()[0]))
    return found


@pytest.mark.parametrize("level", LEVELS)
def test_the_trainers_user_keeps_its_limits_while_three_sandboxes_attack(level):
    limits = available(level, workers=3)
    number = 294 if platform.machine() == "x86_64" else 26
    source = f"INOTIFY_INIT1 = {number}\n" + BOMB
    runs: list = []
    attack = threading.Thread(target=lambda: runs.extend(run_programs([source] * 3, limits)))
    attack.start()
    problems, uids = set(), set()
    while attack.is_alive():
        problem = _host_can_open_inotify_and_start_threads()
        if problem:
            problems.add(problem)
        for worker in [w for w in list(limits.pool.workers) if w.ready]:
            uids |= _uids(worker.process.pid)  # (a root trainer's jail is built as root first)
        time.sleep(0.05)
    attack.join()
    assert not problems, f"the trainer's user lost resources while programs ran: {problems}"
    assert len(runs) == 3 and all(run.ok for run in runs), runs
    for run in runs:
        found = json.loads(run.output)
        assert found["inotify"] == 0, found  # denied: not one instance counted
        if os.geteuid() == 0 or level != "process":  # RLIMIT_NPROC holds (64 per program)
            assert found["threads"] < 64, found
    if os.geteuid() == 0:  # the sandboxes ran as dedicated users, never as root
        assert uids and 0 not in uids, uids


def test_each_sandbox_of_a_root_trainer_gets_a_user_no_one_else_runs_as(monkeypatch):
    """Per sandbox: RLIMIT_NPROC counts per user, so two sandboxes (of this trainer or another
    one beside it) never share one; ids an account or a running process uses are skipped."""
    from grpo_kit.sandbox import isolation

    monkeypatch.setattr(isolation.os, "geteuid", lambda: 0)
    free = isolation.free_ids()
    monkeypatch.setattr(isolation, "_running_uids", lambda: {free[0], free[1]})
    monkeypatch.setattr(isolation.os, "getpid", lambda: 0)
    monkeypatch.setattr(isolation, "_taken", set())
    first, second = isolation.take_ids(), isolation.take_ids()
    assert first == (free[2], free[2]) and second == (free[3], free[3])
    isolation.release_ids(first)
    assert isolation.take_ids() == first
    assert isolation.as_user(first) == {"user": free[2], "group": free[2], "extra_groups": []}
    monkeypatch.setattr(isolation.os, "geteuid", lambda: 1000)
    assert isolation.take_ids() is None  # not root: the trainer's own user


def test_a_sandbox_that_ends_at_once_is_a_start_failure_that_says_why(monkeypatch):
    """bubblewrap as the sandbox's user can exit before the trainer writes its config (a Python
    it cannot read): that is IsolationError with bubblewrap's words, so `auto` goes on."""
    from grpo_kit import sandbox as sandbox_module
    from grpo_kit.sandbox import isolation

    def refusing(level, python, scratch, disk_bytes, fd, ids=None):
        argv = ["/bin/sh", "-c", "echo 'bwrap: Can not find source path' >&2"]
        return isolation.Launch(argv, {"mode": level}, {}, scratch)

    def ended(argv, **options):  # the process is gone before the first write
        process = original(argv, **options)
        process.wait()
        return process

    taken = []  # the ids this sandbox took: others in this worker process take and hand back theirs

    def recording_take_ids():
        ids = original_take_ids()
        taken.append(ids)
        return ids

    original = sandbox_module._popen
    original_take_ids = sandbox_module.take_ids
    monkeypatch.setattr(sandbox_module, "launch", refusing)
    monkeypatch.setattr(sandbox_module, "_popen", ended)
    monkeypatch.setattr(sandbox_module, "take_ids", recording_take_ids)
    python = isolation.interpreter(None)
    with pytest.raises(isolation.IsolationError, match="did not start: bwrap: Can not find"):
        sandbox_module.Worker("bubblewrap", python, 64)
    assert len(taken) == 1
    if taken[0] is not None:  # root: its dedicated user handed back
        assert taken[0][0] not in isolation._taken


def test_ids_handed_back_by_a_finalizer_inside_take_ids_do_not_deadlock():
    """A sandbox's finalizer (Worker.stop, run by the garbage collector at any allocation) can
    hand its ids back while `take_ids` holds the lock on the same thread: with a plain lock the
    kit's suite hung there for good."""
    from grpo_kit.sandbox import isolation

    done = threading.Event()

    def hand_back_inside():
        with isolation._taken_lock:  # as take_ids holds it when the collector runs
            isolation.release_ids((65000, 65000))
        done.set()

    thread = threading.Thread(target=hand_back_inside, daemon=True)
    thread.start()
    assert done.wait(10), "release_ids blocked on the lock its own thread holds"
