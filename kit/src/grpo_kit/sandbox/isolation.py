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
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
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
    "leave files in /tmp or /dev/shm. "
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


class IsolationError(Exception):
    """No sandbox of the requested level can start here (the message says why)."""


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


def launch(level: str, python: Interpreter, scratch: str, disk_bytes: int, fd: int) -> Launch:
    """The command for one worker; `scratch` is a fresh host directory it may use."""
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
        argv += ["--tmpfs", "/tmp", "--ro-bind", str(HARNESS), INSIDE, "--remount-ro", "/"]
        argv += ["--chdir", "/tmp", python.executable, *FLAGS, INSIDE, str(fd)]
        config = {"mode": level, "scratch": "/tmp"}
        return Launch(argv, config, {}, scratch)
    env = {**ENVIRONMENT, "HOME": scratch, "TMPDIR": scratch}
    harness = [python.executable, *FLAGS, str(HARNESS), str(fd)]
    if level == "unshare":
        tool = shutil.which("unshare")
        if tool is None:
            raise IsolationError("util-linux unshare is not installed")
        argv = [tool, "--user", "--map-root-user", "--mount", "--pid", "--fork", "--kill-child",
                "--net", "--ipc", "--uts", "--", *harness]  # fmt: skip
        root = os.path.join(scratch, "root")
        os.makedirs(root, exist_ok=True)
        jail = {
            "root": root,
            "binds": [*python.binds, *DEVICES],
            "devices": list(DEVICES),
            "links": [list(pair) for pair in python.links],
            "hide": list(python.hide),
            "tmp_bytes": disk_bytes,
        }
        return Launch(argv, {"mode": level, "scratch": "/tmp", "jail": jail}, env, scratch)
    if level == "process":
        work = os.path.join(scratch, "tmp")
        os.makedirs(work, exist_ok=True)
        return Launch(harness, {"mode": level, "scratch": work}, env, work)
    raise IsolationError(f"unknown isolation level {level!r}")
