"""Which operating-system isolation runs the code sandbox here, and the command that starts it.

Levels, strongest first (recipe field `sandbox_isolation`):

* `bubblewrap`: `bwrap` (the tool Flatpak uses) builds the sandbox: new user, mount, PID,
  network, IPC and UTS namespaces, no capabilities, a read-only view of the interpreter, its
  standard library and the shared libraries it loads, a size-capped private tmpfs on /tmp,
  a read-only /dev with null/zero/random, no /proc, an empty environment, and nothing outlives
  it (its PID namespace dies with it; it dies with the trainer).
* `unshare`: the same namespaces through util-linux `unshare`; the harness builds the same
  read-only root itself (mount, pivot_root) and drops every capability before it serves.
* `process`: no namespaces; only the seccomp filter, rlimits, an empty environment and a
  temporary working directory. The judge, seccomp and rlimits still stop accidents and the
  attacks in tests/test_sandbox*.py that do not need the filesystem, but a program can read and
  write whatever your user can (files; other processes' environments and memory through /proc;
  local Unix sockets), so it is used only when the recipe asks for it (`sandbox_isolation:
  process`), with `PROCESS_WARNING` (what it still stops, what it does not) on every run.

`auto` takes the first of `bubblewrap` and `unshare` that works here (checked by running a
program) and refuses to train when neither does.

Whose resources a program spends (`take_ids`): the kernel counts some resources per user
(processes and threads against RLIMIT_NPROC, inotify instances and watches, keys, POSIX message
queues, pipe buffers), and a user namespace charges what happens inside it to the user that
created it, whatever uid the program sees inside. So when the trainer runs as root, every
sandbox runs as a dedicated unprivileged user of its own (uid = gid, one no account or group here
uses, no supplementary groups; `launch` says how each level gets there): its counts go to that
user, root's own limits are untouched, and RLIMIT_NPROC, which the kernel never enforces on
root, holds (64 processes and threads per program). A trainer that is not root cannot switch
users (that needs privileges), so its sandboxes count against its own user: the namespaced
levels give each a user namespace of its own, where RLIMIT_NPROC holds (64 per program), and in
every mode the seccomp filter denies the per-user resources a program does not need (inotify,
fanotify, keyrings, message queues), so what a program can still spend of its user's counts is
bounded by its rlimits.
"""

from __future__ import annotations

import grp
import json
import os
import pwd
import shutil
import struct
import subprocess
import sys
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

HARNESS = Path(__file__).with_name("harness.py")
MODES = ("auto", "bubblewrap", "unshare", "process")
NAMESPACED = ("bubblewrap", "unshare")
INSIDE = "/sandbox/harness.py"  # where the harness appears inside a bubblewrap sandbox
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
TOP_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ENVIRONMENT = {"PYTHONHASHSEED": "0", "LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"}
FLAGS = ("-S", "-s", "-B", "-P")  # no site, no user site, no .pyc, no script dir on sys.path
FIX = (
    "install bubblewrap 0.8 or newer (apt-get install bubblewrap / dnf install bubblewrap; "
    "Ubuntu 22.04's 0.6 is too old: use sandbox_isolation: unshare there) and allow user "
    "namespaces (sysctl kernel.unprivileged_userns_clone=1 or "
    "kernel.apparmor_restrict_unprivileged_userns=0; in Docker, run with --security-opt "
    "seccomp=unconfined --security-opt apparmor=unconfined), or set `sandbox_isolation: "
    "process` in the recipe to accept the weaker process-only sandbox"
)
PROCESS_WARNING = (
    "code sandbox: process-only isolation (sandbox_isolation: process): programs run as your "
    "user with no namespaces. The seccomp filter and rlimits still apply (no new processes, no "
    "signals to other processes, no network sockets; CPU, memory, file-size limits) and the "
    "judge still decides verdicts, but a program can read and write every file your user can "
    "(your code, keys, tokens), read your other processes' environments (HF_TOKEN) and memory "
    "through /proc and change the trainer's, connect to local Unix sockets (Docker's, say) and "
    "leave files in /tmp or /dev/shm (when the trainer runs as root, programs run as a "
    "dedicated unprivileged user instead, and reach what every user may). "
    f"For OS isolation, {FIX.split(', or set')[0]}"
)

# Run by the chosen interpreter on the host: what it needs inside the sandbox.
PROBE = r"""
import json, os, sys, sysconfig
found = set()
for entry in sys.path:
    if entry.endswith("lib-dynload") and os.path.isdir(entry):
        for name in sorted(os.listdir(entry)):
            module = name.split(".")[0]
            if name.endswith(".so") and not module.startswith(("_test", "xx", "_xx")):
                try:
                    __import__(module)
                except BaseException:
                    pass
with open("/proc/self/maps") as maps:
    for line in maps:
        parts = line.split()
        if len(parts) >= 6 and parts[5].startswith("/") and ".so" in parts[5]:
            found.add(parts[5])
paths = sysconfig.get_paths()
zone = []
try:
    import zoneinfo
    zone = [p for p in zoneinfo.TZPATH if os.path.isdir(p)]
except Exception:
    pass
print(json.dumps({
    "executable": os.path.realpath(sys.executable),
    "version": ".".join(map(str, sys.version_info[:3])),
    "stdlib": sorted({os.path.realpath(paths["stdlib"]), os.path.realpath(paths["platstdlib"])}),
    "site": sorted({os.path.realpath(paths["purelib"]), os.path.realpath(paths["platlib"])}),
    "libraries": sorted(found),
    "zoneinfo": zone,
}))
"""


# The dedicated users (uid = gid) a root trainer's sandboxes run as, one per worker: those of these
# ids that no account or group on this machine uses (65534 is `nobody`, shared with daemons).
SANDBOX_IDS = tuple(range(65533, 65277, -1))


class IsolationError(Exception):
    """No sandbox of the requested level can start here (the message says why)."""


@lru_cache(maxsize=1)
def free_ids() -> tuple[int, ...]:
    """The ids of `SANDBOX_IDS` that no account (uid) and no group (gid) here uses."""
    used = {entry.pw_uid for entry in pwd.getpwall()} | {entry.gr_gid for entry in grp.getgrall()}
    return tuple(number for number in SANDBOX_IDS if number not in used)


_taken: set[int] = set()
# Re-entrant: a sandbox's finalizer (`Worker.stop`, run by the garbage collector at any
# allocation) hands its ids back from inside `take_ids` on the same thread; a plain lock
# deadlocked the trainer there.
_taken_lock = threading.RLock()


def take_ids() -> tuple[int, int] | None:
    """(uid, gid) for a new sandbox: when this process is root, a dedicated unprivileged user
    that no other sandbox of this process holds (module docstring), its own so that RLIMIT_NPROC
    counts per sandbox; None when not root (the sandbox runs as the trainer's own user). Hand it
    back with `release_ids`."""
    if os.geteuid() != 0:
        return None
    ids = free_ids()
    if not ids:
        raise IsolationError(
            f"every id from {SANDBOX_IDS[-1]} to {SANDBOX_IDS[0]} belongs to an account or group "
            "here; a root trainer's sandbox runs as one that none uses"
        )
    running = _running_uids()  # another trainer's sandboxes (several processes, one GPU each)
    with _taken_lock:
        start = os.getpid() % len(ids)  # trainers side by side start at different ids
        for step in range(len(ids)):
            number = ids[(start + step) % len(ids)]
            if number not in _taken and number not in running:
                _taken.add(number)
                return number, number
    raise IsolationError(f"more than {len(ids)} sandboxes at once")


def _running_uids() -> set[int]:
    """The real uids of the processes running now (as /proc shows them)."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status") as status:
                    for line in status:
                        if line.startswith("Uid:"):
                            found.add(int(line.split()[1]))
                            break
            except (OSError, ValueError, IndexError):
                continue
    return found


def release_ids(ids: tuple[int, int] | None) -> None:
    if ids is not None:
        with _taken_lock:
            _taken.discard(ids[0])


def as_user(ids: tuple[int, int] | None) -> dict:
    """subprocess options that start a command as `ids` (uid, gid), supplementary groups
    dropped; {} for None (the trainer's own user)."""
    if ids is None:
        return {}
    return {"user": ids[0], "group": ids[1], "extra_groups": []}


@dataclass(frozen=True)
class Interpreter:
    """The Python that runs programs, and the files it needs inside the sandbox."""

    executable: str
    version: str
    binds: tuple[str, ...]  # real paths mounted read-only at the same place
    links: tuple[tuple[str, str], ...]  # (path, target) symlinks recreated inside
    hide: tuple[str, ...]  # site-packages under a bound directory, covered by an empty tmpfs


@lru_cache(maxsize=8)
def interpreter(python: str | None = None) -> Interpreter:
    """Probe `python` (default: this interpreter) once per process."""
    command = python or sys.executable
    try:
        result = subprocess.run(
            [command, "-S", "-s", "-E", "-c", PROBE],
            capture_output=True,
            text=True,
            timeout=120,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            check=False,
        )
        facts = json.loads(result.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError) as err:
        raise IsolationError(f"cannot run the sandbox's Python {command!r}: {err}") from err
    if tuple(int(p) for p in facts["version"].split(".")[:2]) < (3, 11):
        raise IsolationError(f"the sandbox's Python {command!r} is {facts['version']}; need 3.11+")
    wanted = [facts["executable"], *facts["stdlib"], *facts["zoneinfo"], "/etc/ld.so.cache"]
    wanted.append(elf_interpreter(facts["executable"]) or "")
    wanted += sorted({os.path.dirname(path) for path in facts["libraries"]})
    binds: set[str] = set()
    links: dict[str, str] = {}
    for path in [p for p in wanted if p and os.path.exists(p)]:
        chain, real = resolve(path)
        links.update(chain)
        binds.add(real)
    for top in TOP_LINKS:
        if os.path.islink(top):
            links[top] = os.readlink(top)
    binds = {b for b in binds if not any(_inside(b, other) for other in binds if other != b)}
    links = {k: v for k, v in links.items() if not any(_inside(k, b) for b in binds)}
    hide = [s for s in facts["site"] if os.path.isdir(s) and any(_inside(s, b) for b in binds)]
    return Interpreter(
        facts["executable"], facts["version"], tuple(sorted(binds)), tuple(sorted(links.items())),
        tuple(sorted(hide)),
    )  # fmt: skip


def _inside(path: str, folder: str) -> bool:
    return path != folder and path.startswith(folder.rstrip("/") + "/")


def resolve(path: str) -> tuple[dict[str, str], str]:
    """({symlink: its target} met on the way, real path) of an absolute path."""
    links: dict[str, str] = {}
    parts = [p for p in path.split("/") if p]
    current = "/"
    for _ in range(64):
        if not parts:
            return links, current
        candidate = os.path.join(current, parts.pop(0))
        if os.path.islink(candidate):
            target = os.readlink(candidate)
            links[candidate] = target
            base = "/" if target.startswith("/") else current
            parts = [
                p for p in os.path.normpath(os.path.join(base, target)).split("/") if p
            ] + parts
            current = "/"
        else:
            current = candidate
    return links, os.path.realpath(path)


def elf_interpreter(executable: str) -> str | None:
    """The dynamic loader a 64-bit little-endian ELF executable names (PT_INTERP), if any."""
    try:
        with open(executable, "rb") as handle:
            head = handle.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
                return None
            (phoff,) = struct.unpack_from("<Q", head, 0x20)
            size, count = struct.unpack_from("<HH", head, 0x36)
            handle.seek(phoff)
            table = handle.read(size * count)
            for index in range(count):
                kind, _, offset, _, _, length = struct.unpack_from("<IIQQQQ", table, index * size)
                if kind == 3:  # PT_INTERP
                    handle.seek(offset)
                    return handle.read(length).rstrip(b"\0").decode()
    except (OSError, struct.error, UnicodeDecodeError):
        return None
    return None


@lru_cache(maxsize=1)
def bubblewrap() -> tuple[str, frozenset[str]] | None:
    """(path of bwrap, the options it supports), or None when it is not installed."""
    path = shutil.which("bwrap")
    if not path:
        return None
    try:
        text = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return path, frozenset(w for w in text.split() if w.startswith("--"))


def candidates(mode: str) -> tuple[str, ...]:
    """The levels to try, strongest first."""
    if mode not in MODES:
        raise IsolationError(f"sandbox_isolation must be one of {', '.join(MODES)}, got {mode!r}")
    return NAMESPACED if mode == "auto" else (mode,)


@dataclass(frozen=True)
class Launch:
    """How to start one sandbox worker."""

    argv: list[str]
    config: dict  # the harness's first message
    env: dict[str, str]
    cwd: str
    ids: tuple[int, int] | None = None  # (uid, gid) the command starts as; None: ours


def _hand_over(scratch: str, ids: tuple[int, int], copy: bool) -> str:
    """`scratch` and everything in it, given to the user `ids`; with `copy`, the harness that
    user runs (it may not reach the trainer's environment, say under /root): a read-only copy
    in `scratch`, root's."""
    for folder, names, files in os.walk(scratch):
        os.chown(folder, *ids)
        for name in names + files:
            os.chown(os.path.join(folder, name), *ids)
    if not copy:
        return str(HARNESS)
    path = os.path.join(scratch, "harness.py")
    shutil.copyfile(HARNESS, path)
    os.chmod(path, 0o444)
    return path


def launch(
    level: str, python: Interpreter, scratch: str, disk_bytes: int, fd: int,
    ids: tuple[int, int] | None = None,
) -> Launch:  # fmt: skip
    """The command for one worker; `scratch` is a fresh host directory it may use; `ids`: the
    dedicated user it runs as (`take_ids`), None for the trainer's own.

    With `ids` (a root trainer), bubblewrap starts as that user, so the user namespace it
    makes, and everything counted in it, is that user's (the interpreter's files must then be
    readable by every user: a Python under /root is not, and `auto` goes on to `unshare`).
    `unshare` and `process` start as root without a user namespace; the harness builds its jail
    (unshare) with root's rights, then becomes that user, with no capabilities, before it runs
    anything."""
    if level == "unshare":
        os.makedirs(os.path.join(scratch, "root"), exist_ok=True)
    if level == "process":
        os.makedirs(os.path.join(scratch, "tmp"), exist_ok=True)
    harness_path = str(HARNESS)
    if ids is not None:
        harness_path = _hand_over(scratch, ids, copy=level == "bubblewrap")
    if level == "bubblewrap":
        found = bubblewrap()
        if found is None:
            raise IsolationError("bubblewrap (bwrap) is not installed")
        bwrap, options = found
        if "--size" not in options:  # its /tmp would be a tmpfs as large as half the RAM
            raise IsolationError(
                "this bubblewrap cannot cap the size of the sandbox's /tmp (no --size option; "
                "bubblewrap 0.8+ has it), so a program could fill the host's memory with files"
            )
        argv = [bwrap, "--unshare-all", "--unshare-user", "--uid", "65534", "--gid", "65534"]
        argv += ["--cap-drop", "ALL", "--die-with-parent", "--new-session", "--as-pid-1"]
        if "--disable-userns" in options:
            argv.append("--disable-userns")
        argv += ["--hostname", "sandbox", "--clearenv"]
        for key, value in {**ENVIRONMENT, "HOME": "/tmp", "TMPDIR": "/tmp"}.items():
            argv += ["--setenv", key, value]
        for path in python.binds:
            argv += ["--ro-bind", path, path]
        for path, target in python.links:
            argv += ["--symlink", target, path]
        for path in python.hide:
            argv += ["--tmpfs", path, "--remount-ro", path]
        argv += ["--dev", "/dev", "--remount-ro", "/dev"]
        argv += ["--size", str(disk_bytes)]
        argv += ["--tmpfs", "/tmp", "--ro-bind", harness_path, INSIDE, "--remount-ro", "/"]
        argv += ["--chdir", "/tmp", python.executable, *FLAGS, INSIDE, str(fd)]
        config = {"mode": level, "scratch": "/tmp"}
        return Launch(argv, config, {}, scratch, ids)
    env = {**ENVIRONMENT, "HOME": scratch, "TMPDIR": scratch}
    harness = [python.executable, *FLAGS, harness_path, str(fd)]
    if level == "unshare":
        tool = shutil.which("unshare")
        if tool is None:
            raise IsolationError("util-linux unshare is not installed")
        user = [] if ids else ["--user", "--map-root-user"]  # root makes the jail, then `ids`
        argv = [tool, *user, "--mount", "--pid", "--fork", "--kill-child",
                "--net", "--ipc", "--uts", "--", *harness]  # fmt: skip
        root = os.path.join(scratch, "root")
        jail = {
            "root": root,
            "binds": [*python.binds, *DEVICES],
            "devices": list(DEVICES),
            "links": [list(pair) for pair in python.links],
            "hide": list(python.hide),
            "tmp_bytes": disk_bytes,
        }
        config = {"mode": level, "scratch": "/tmp", "jail": jail, "ids": ids}
        return Launch(argv, config, env, scratch)
    if level == "process":
        work = os.path.join(scratch, "tmp")
        return Launch(harness, {"mode": level, "scratch": work, "ids": ids}, env, work)
    raise IsolationError(f"unknown isolation level {level!r}")
