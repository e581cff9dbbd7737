"""Runs one untrusted program and its tests inside the sandbox process (see `sandbox.py`).

Started as `python -I -S -B harness.py` in an empty working directory with a scrubbed
environment. It reads one JSON request from stdin, lowers its own resource limits, leaves the
network namespace when the kernel allows it, installs an audit hook (which cannot be removed)
that refuses process creation, signals to other processes, sockets, ctypes, frame and garbage-
collector introspection, and file access outside the working directory and the standard
library, and only then executes the program and each test. After each test it writes
`<nonce> <index> pass|fail` to a pipe. The nonce and every function the harness calls after the
program starts are held in local variables, which the program cannot reach once frame
introspection is refused, so a program that exits early, prints look-alike lines or replaces
builtins cannot claim tests it did not pass.

This file must stay standalone: it runs with `-I -S` and imports only the standard library.
"""

import contextlib
import json
import os
import resource
import sys
import sysconfig

BLOCKED_EVENTS = frozenset({
    "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.exec", "os.system",
    "os.startfile", "subprocess.Popen", "pty.spawn", "os.setuid", "os.setgid", "os.setreuid",
    "resource.setrlimit", "resource.prlimit", "socket.__new__", "socket.connect", "socket.bind",
    "socket.getaddrinfo", "socket.sendto", "sys._getframe", "sys._current_frames",
    "sys.settrace", "sys.setprofile", "gc.get_objects", "gc.get_referrers", "gc.get_referents",
    "object.__getattr__", "os.putenv", "os.unsetenv", "os.chroot", "os.mknod",
})  # fmt: skip
BLOCKED_PREFIXES = ("ctypes.", "_winapi.", "winreg.")
BLOCKED_IMPORTS = frozenset({
    "ctypes", "_ctypes", "_posixsubprocess", "subprocess", "multiprocessing", "socket",
    "_socket", "pty",
})  # fmt: skip
WRITE_EVENTS = frozenset({
    "os.remove", "os.rename", "os.mkdir", "os.rmdir", "os.chmod", "os.chown", "os.link",
    "os.symlink", "os.truncate", "os.utime", "os.chflags", "shutil.rmtree", "shutil.move",
})  # fmt: skip
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def limit_resources(request) -> None:
    """Cap CPU time, memory, file size and open files (limits this process may lower)."""
    seconds = int(request["timeout"]) + 1
    memory = int(request["memory_mb"]) * 1024 * 1024
    for kind, value in (
        (resource.RLIMIT_CPU, seconds),
        (resource.RLIMIT_AS, memory),
        (resource.RLIMIT_FSIZE, int(request["output_bytes"])),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NOFILE, 64),
    ):
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(kind, (value, value))


def leave_network() -> None:
    """Enter an empty network namespace (root, or unprivileged user namespaces) if possible."""
    flags = (0x40000000, 0x10000000 | 0x40000000)  # CLONE_NEWNET, CLONE_NEWUSER | CLONE_NEWNET
    unshare = getattr(os, "unshare", None)
    if unshare is None:
        try:
            import ctypes

            unshare = ctypes.CDLL(None, use_errno=True).unshare
        except Exception:
            return
    try:
        for flag in flags:
            try:
                if unshare(flag) in (0, None):
                    return
            except OSError:
                continue
    finally:
        sys.modules.pop("ctypes", None)
        sys.modules.pop("_ctypes", None)


def make_audit_hook(work_dir: str):
    """The hook, with every name it uses bound now: the program may rebind globals later."""
    is_instance, to_str, startswith = isinstance, str, str.startswith
    getcwd, sep = os.getcwd, os.sep
    blocked, prefixes, imports, writes = (
        BLOCKED_EVENTS,
        BLOCKED_PREFIXES,
        BLOCKED_IMPORTS,
        WRITE_EVENTS,
    )
    write_flags, own_pid = WRITE_FLAGS, os.getpid()
    stdlib = {sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib")}
    readable = tuple(p for p in stdlib if p) + (work_dir, "/usr/share/zoneinfo", "/dev/null")
    writable = (work_dir,)

    def normalise(path) -> str:
        if is_instance(path, bytes):
            path = path.decode("utf-8", "surrogateescape")
        path = to_str(path)
        if not startswith(path, "/"):
            path = getcwd() + "/" + path
        parts: list[str] = []
        for part in path.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if parts:
                    parts.pop()
            else:
                parts.append(part)
        return "/" + "/".join(parts)

    def inside(path: str, roots) -> bool:
        # A plain loop, not any(): the program may rebind builtins before this runs.
        for root in roots:  # noqa: SIM110
            if path == root or startswith(path, root + sep):
                return True
        return False

    def hook(event, args):
        if event in blocked or startswith(event, prefixes):
            raise PermissionError("sandbox: " + event + " is not allowed")
        if event == "import" and args[0].split(".")[0] in imports:
            raise ImportError("sandbox: importing " + args[0] + " is not allowed")
        if event in ("os.kill", "os.killpg") and args[0] not in (own_pid, 0):
            raise PermissionError("sandbox: signals to other processes are not allowed")
        if event == "open":
            path, mode, flags = args
            if is_instance(path, int):
                return
            target = normalise(path)
            writing = False
            if mode is not None:
                for char in "wax+":
                    if char in to_str(mode):
                        writing = True
            if is_instance(flags, int) and flags & write_flags:
                writing = True
            if writing and not inside(target, writable):
                raise PermissionError("sandbox: writing " + target + " is not allowed")
            if not writing and not inside(target, readable):
                raise PermissionError("sandbox: reading " + target + " is not allowed")
        if event in writes:
            for path in args:
                if is_instance(path, str | bytes) and not inside(normalise(path), writable):
                    raise PermissionError("sandbox: " + event + " outside the working directory")

    return hook


def main() -> None:
    request = json.loads(sys.stdin.read())
    sys.stdin.close()
    results, tests = int(request["results_fd"]), request["tests"]
    program = request["setup"] + "\n" + request["program"]
    # The result lines are built now, and everything used after the program starts is a local:
    # rebinding builtins or module attributes (str, os.write, ...) cannot change what is written.
    nonce = request.pop("nonce")
    checks = [(tests[i], (nonce + " " + str(i)).encode()) for i in range(len(tests))]
    passed, failed = b" pass\n", b" fail\n"
    write, run, build, error, report, stderr = (
        os.write,
        exec,
        compile,
        BaseException,
        print,
        sys.stderr,
    )
    limit_resources(request)
    leave_network()
    sys.addaudithook(make_audit_hook(os.path.realpath(os.getcwd())))
    namespace = {"__name__": "__solution__", "__builtins__": __builtins__}
    try:
        run(build(program, "solution.py", "exec"), namespace)
    except error as err:  # the program itself failed: every test fails
        report("program failed:", repr(err), file=stderr)
        for _, line in checks:
            write(results, line + failed)
        return
    for test, line in checks:
        try:
            run(build(test, "test.py", "exec"), namespace)
            verdict = passed
        except error as err:
            report("test failed:", repr(err), file=stderr)
            verdict = failed
        write(results, line + verdict)


if __name__ == "__main__":
    main()
