"""The sandbox's inside: a fork server that runs each program and judges it in separate processes.

Started inside the OS sandbox (see `isolation.py`) as `python -S -s -B -P harness.py <fd>`,
standard library only, on any supported Python. It talks to the trainer over one Unix socket
(fd `<fd>`): a config message, then per job a message `{"id", "limits"}` carrying two pipe read
ends, one holding the program and one holding the tests. The server never reads either: it
forks, from its own clean state,

* the **program** process, which reads only the program pipe, runs the program, then answers
  requests about its names ("call this function with these arguments") with plain data, and
* the **judge** process, which reads only the tests pipe and runs the tests. Every name the
  tests use that the program defines is a proxy: calling it sends the arguments to the program
  process and brings back the result as plain data (numbers, strings, lists, dicts, tuples,
  sets, ...; anything else stays a handle that only equals itself, see `Remote`),

and hands the judge's verdict pipe to the **collector**, a process forked once at start, which
reads the verdicts within the job's time (`Budget`), has the server kill and reap the job's
processes and then answers the trainer. Nothing is ever forked from the collector, and the
server never holds a job's output, verdicts or errors, so a job finds nothing of an earlier one
in its memory (no live frame, object or freed heap).

A job whose message carries `"run"` (and one pipe, the program's) has no tests: the server forks
only a **script** process that runs the program as `__main__` with its stdout and stderr on a
pipe the collector reads, up to a size limit (past it, the program is stopped); the answer is
that output and the program's error, under the same isolation, seccomp filter and rlimits.
Whether the program failed is its exit status; its error report is read, bounded, only to name
the failure.

So the expected values and the test code never enter the program's address space (not even
the server's, from which it is forked), and the verdict is decided in the judge: printing,
exiting, signal tricks, frame walking, patched builtins or objects that equal everything cannot
change it. Both children run under a seccomp filter (no new processes, no signals or ptrace to
other processes, no file owners that would signal one, no namespaces or mounts, no network
sockets, no memfds or descriptors passed through sockets, no inotify, fanotify, keyrings or
message queues), lowered rlimits, an empty working
directory, and stdin/stdout/stderr on /dev/null. A job's time is its CPU seconds plus the time it
waits (`Budget`), not the machine's load; a job whose limits carry `"wall"` also ends after that
many wall-clock seconds (its caller's deadline), and its answer says which cut it (`wall_cut`).
After each job its processes are killed and reaped
(before the trainer gets the answer) and the writable directory is wiped.
"""

import builtins
import contextlib
import gc
import json
import math
import os
import resource
import select
import signal
import socket
import struct
import sys
import time
import types

MAX_MESSAGE = 16 * 1024 * 1024  # bytes of one program, test set or value
MAX_DEPTH = 100  # nesting of a value sent between the program and the judge
MAX_FILES = 20_000  # entries left in the working directory before the sandbox is recycled
PRELOAD = (
    "abc", "array", "bisect", "cmath", "collections", "collections.abc", "contextlib", "copy",
    "dataclasses", "datetime", "decimal", "enum", "fractions", "functools", "hashlib", "heapq",
    "itertools", "json", "math", "numbers", "operator", "random", "re", "statistics", "string",
    "struct", "textwrap", "typing", "unicodedata",
)  # fmt: skip
# Modules the judge imports itself when the program's name refers to one (the program's module
# object never crosses); these are left as remote handles (side effects when imported).
NOT_IMPORTED = frozenset({"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo"})

# --- framing -------------------------------------------------------------------------------


def send(fd: int, message) -> None:
    """Write one length-prefixed JSON message to a pipe."""
    data = json.dumps(message, separators=(",", ":"), allow_nan=False).encode()
    if len(data) > MAX_MESSAGE:
        raise ValueError(f"message of {len(data)} bytes is over the {MAX_MESSAGE} limit")
    data = struct.pack(">I", len(data)) + data
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_exactly(fd: int, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _refuse_constant(name):
    raise ValueError(f"{name} is not plain JSON")


def receive(fd: int):
    """Read one message; None at end of stream. Raises ValueError on anything malformed."""
    head = _read_exactly(fd, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">I", head)
    if size > MAX_MESSAGE:
        raise ValueError(f"message of {size} bytes is over the {MAX_MESSAGE} limit")
    body = _read_exactly(fd, size)
    if body is None:
        raise ValueError("message cut short")
    try:
        return json.loads(body, parse_constant=_refuse_constant)
    except RecursionError:  # `[[[[...`: deeper than the parser's stack
        raise ValueError("message nested too deeply") from None


# --- plain data --------------------------------------------------------------------------------
# A value crosses between the program and the judge as JSON: null, booleans, strings, small
# integers, finite floats and lists as themselves, everything else tagged {"#": kind, ...}.
# Only exact built-in and standard-library value types travel as values; any other object
# (instances of the program's classes, subclasses of built-ins, functions, generators) travels
# as a handle into the program's table.

SMALL_INT = 1 << 62


def _collections():
    import collections
    import datetime
    import decimal
    import fractions

    return collections, datetime, decimal, fractions


def encode(value, handle, depth: int = 0):
    """`value` as JSON-able plain data; `handle(obj)` returns a handle for other objects."""
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value
    if kind is int:
        return value if -SMALL_INT < value < SMALL_INT else {"#": "int", "v": format(value, "x")}
    if kind is float:
        return value if math.isfinite(value) else {"#": "float", "v": repr(value)}
    if depth >= MAX_DEPTH:
        raise ValueError(f"value nested deeper than {MAX_DEPTH} levels")
    depth += 1
    if kind is list:
        return [encode(item, handle, depth) for item in value]
    if kind in (tuple, set, frozenset):
        return {"#": kind.__name__, "v": [encode(item, handle, depth) for item in value]}
    if kind is dict:
        return {"#": "dict", "v": [[encode(k, handle, depth), encode(v, handle, depth)]
                                    for k, v in value.items()]}  # fmt: skip
    if kind in (bytes, bytearray):
        return {"#": kind.__name__, "v": bytes(value).hex()}
    if kind is complex:
        return {"#": "complex", "v": [repr(value.real), repr(value.imag)]}
    if kind is range:
        return {"#": "range", "v": [value.start, value.stop, value.step]}
    if kind is types.ModuleType:
        return {"#": "module", "v": value.__name__, "h": handle(value)}
    collections, datetime, decimal, fractions = _collections()
    if kind is fractions.Fraction:
        return {"#": "Fraction", "v": [encode(value.numerator, handle, depth),
                                       encode(value.denominator, handle, depth)]}  # fmt: skip
    if kind is decimal.Decimal:
        return {"#": "Decimal", "v": str(value)}
    dated = kind in (datetime.date, datetime.datetime, datetime.time)
    if dated and getattr(value, "tzinfo", None) is None:  # naive: no time zone object
        return {"#": kind.__name__, "v": value.isoformat()}
    if kind is datetime.timedelta:
        return {"#": "timedelta", "v": [value.days, value.seconds, value.microseconds]}
    if kind is collections.deque:
        return {"#": "deque", "v": [encode(item, handle, depth) for item in value],
                "max": value.maxlen}  # fmt: skip
    if kind in (collections.Counter, collections.OrderedDict, collections.defaultdict):
        pairs = [[encode(k, handle, depth), encode(v, handle, depth)] for k, v in value.items()]
        return {"#": kind.__name__, "v": pairs}
    if issubclass(kind, tuple) and _is_namedtuple(kind):
        return {"#": "namedtuple", "name": kind.__name__, "fields": list(kind._fields),
                "v": [encode(item, handle, depth) for item in tuple.__iter__(value)]}  # fmt: skip
    return {"#": "ref", "h": handle(value), "t": kind.__qualname__[:80]}


def _is_namedtuple(kind) -> bool:
    fields = kind.__dict__.get("_fields")
    return (
        isinstance(fields, tuple)
        and all(type(f) is str and f.isidentifier() for f in fields)
        and kind.__bases__ == (tuple,)
    )


def decode(data, resolve, depth: int = 0):
    """The value `encode` described; `resolve(message)` turns handles and modules into objects."""
    kind = type(data)
    if data is None or kind in (bool, str, int, float):
        return data
    if depth >= MAX_DEPTH + 2:
        raise ValueError("value nested too deeply")
    depth += 1
    if kind is list:
        return [decode(item, resolve, depth) for item in data]
    if kind is not dict:
        raise ValueError(f"not plain data: {kind.__name__}")
    tag, value = data.get("#"), data.get("v")
    if tag in ("tuple", "set", "frozenset", "deque"):
        items = [decode(item, resolve, depth) for item in _list(value)]
        if tag == "deque":
            collections = _collections()[0]
            maxlen = data.get("max")
            return collections.deque(items, maxlen if type(maxlen) is int else None)
        return {"tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
    if tag in ("dict", "Counter", "OrderedDict", "defaultdict"):
        pairs = [(decode(k, resolve, depth), decode(v, resolve, depth)) for k, v in _pairs(value)]
        if tag == "dict":
            return dict(pairs)
        collections = _collections()[0]
        if tag == "defaultdict":
            return collections.defaultdict(None, pairs)
        return getattr(collections, tag)(dict(pairs))
    if tag == "int" and type(value) is str:
        return int(value, 16)
    if tag == "float" and value in ("nan", "inf", "-inf"):
        return float(value)
    if tag in ("bytes", "bytearray") and type(value) is str:
        return {"bytes": bytes, "bytearray": bytearray}[tag](bytes.fromhex(value))
    if tag == "complex":
        real, imag = _list(value, 2)
        return complex(float(real), float(imag))
    if tag == "range":
        start, stop, step = (int(v) for v in _list(value, 3))
        return range(start, stop, step)
    if tag == "Fraction":
        numerator, denominator = (decode(v, resolve, depth) for v in _list(value, 2))
        return _collections()[3].Fraction(int(numerator), int(denominator))
    if tag == "Decimal" and type(value) is str:
        return _collections()[2].Decimal(value)
    if tag in ("date", "datetime", "time") and type(value) is str:
        return getattr(_collections()[1], tag).fromisoformat(value)
    if tag == "timedelta":
        days, seconds, micro = (int(v) for v in _list(value, 3))
        return _collections()[1].timedelta(days, seconds, micro)
    if tag == "namedtuple":
        items = [decode(item, resolve, depth) for item in _list(value)]
        return _namedtuple(str(data.get("name")), tuple(_list(data.get("fields"))))(*items)
    if tag in ("ref", "module"):
        return resolve(data)
    raise ValueError(f"not plain data: {str(tag)[:40]}")


def _list(value, size: int | None = None) -> list:
    if type(value) is not list or (size is not None and len(value) != size):
        raise ValueError("malformed value")
    return value


def _pairs(value) -> list:
    pairs = _list(value)
    for pair in pairs:
        _list(pair, 2)
    return pairs


_NAMEDTUPLES: dict = {}


def _namedtuple(name: str, fields: tuple):
    if (name, fields) not in _NAMEDTUPLES:
        if not all(type(f) is str for f in fields):
            raise ValueError("malformed namedtuple")
        _NAMEDTUPLES[name, fields] = _collections()[0].namedtuple(name, fields)
    return _NAMEDTUPLES[name, fields]


def describe(error: BaseException) -> str:
    """`Type: message`, short (the message only ever comes from the program's side)."""
    text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return text[:500]


# --- the program process -----------------------------------------------------------------------


class Program:
    """Runs the program, then answers the judge's requests about the objects it made."""

    def __init__(self, requests: int, replies: int):
        self.requests, self.replies = requests, replies
        self.objects: list = []  # handle -> object (kept alive, so ids stay unique)
        self.handles: dict[int, int] = {}  # id(object) -> handle
        self.namespace: dict = {}

    def handle(self, obj) -> int:
        key = id(obj)
        if key not in self.handles:
            self.handles[key] = len(self.objects)
            self.objects.append(obj)
        return self.handles[key]

    def resolve(self, message):
        handle = message.get("h")
        if type(handle) is not int or not 0 <= handle < len(self.objects):
            raise ValueError("unknown handle")
        return self.objects[handle]

    def load(self, source: str) -> dict:
        module = types.ModuleType("__solution__")
        sys.modules["__solution__"] = module
        self.namespace = module.__dict__
        try:
            exec(compile(source, "solution.py", "exec"), self.namespace)
        except BaseException as error:  # the program failed: every test fails
            return {"loaded": False, "error": describe(error)}
        return {"loaded": True}

    def answer(self, request: dict) -> dict:
        op = request.get("op")
        if op == "get":
            name = request.get("name")
            if type(name) is not str or name not in self.namespace:
                return {"missing": True}
            return {"ok": encode(self.namespace[name], self.handle)}
        target = self.resolve(request)
        if op == "call":
            args = [decode(a, self.resolve) for a in _list(request.get("args"))]
            kwargs = {str(k): decode(v, self.resolve) for k, v in _pairs(request.get("kwargs"))}
            result = target(*args, **kwargs)
            back = [encode(args[i], self.handle) for i in _list(request.get("back"))]
            return {"ok": encode(result, self.handle), "back": back}
        if op == "attr":
            return {"ok": encode(getattr(target, str(request.get("name"))), self.handle)}
        if op == "item":
            return {"ok": encode(target[decode(request.get("key"), self.resolve)], self.handle)}
        if op in ("len", "str", "repr", "iter", "next"):
            function = {"len": len, "str": str, "repr": repr, "iter": iter, "next": next}[op]
            return {"ok": encode(function(target), self.handle)}
        raise ValueError("unknown request")

    def serve(self) -> None:
        while True:
            try:
                request = receive(self.requests)
            except ValueError:
                return
            if request is None:
                return
            try:
                reply = self.answer(request)
            except BaseException as error:  # the program's code raised: the judge re-raises
                reply = {"raise": [type(error).__name__, str(error)[:500]]}
            try:
                send(self.replies, reply)
            except ValueError as error:
                send(self.replies, {"raise": ["ValueError", str(error)]})


def program_main(job_id: int, source_fd: int, requests: int, replies: int) -> None:
    program = Program(requests, replies)
    try:
        message = receive(source_fd)
    except ValueError:
        message = None
    os.close(source_fd)
    if not isinstance(message, dict) or message.get("id") != job_id:
        return
    status = program.load(str(message.get("setup") or "") + "\n" + str(message.get("program")))
    send(replies, status)
    if status["loaded"]:
        program.serve()


def _text_stream(fd: int):
    """A line-buffered text stream on `fd` that writes any string (unencodable as escapes)."""
    return open(fd, "w", encoding="utf-8", errors="backslashreplace", buffering=1, closefd=False)


def script_main(job_id: int, source_fd: int, output: int, report: int) -> bool:
    """Run a whole program as `__main__`: what it prints goes to `output`. True when it failed
    (then `report` gets `{"id", "error"}`, `Type: message`, and the process exits with status
    1). The report comes from the program's own process, so it is only ever the program's word:
    the server goes by the exit status and reads a report only to name a failure."""
    try:
        message = receive(source_fd)
    except ValueError:
        message = None
    os.close(source_fd)
    if not isinstance(message, dict) or message.get("id") != job_id:
        return True
    os.dup2(output, 1)
    os.dup2(output, 2)
    os.close(output)
    streams = [_text_stream(1), _text_stream(2)]
    sys.stdout, sys.stderr = streams
    sys.argv = ["program.py"]
    module = types.ModuleType("__main__")
    sys.modules["__main__"] = module
    error = ""
    try:
        exec(compile(str(message.get("program")), "program.py", "exec"), module.__dict__)
    except SystemExit as stop:
        error = "" if stop.code in (None, 0) else describe(stop)
    except BaseException as failure:  # the program's own error, reported as `Type: message`
        error = describe(failure)
    for stream in (sys.stdout, sys.stderr, *streams):
        with contextlib.suppress(BaseException):
            stream.flush()
    if error:
        send(report, {"id": job_id, "error": error})
    return bool(error)


# --- the judge process -------------------------------------------------------------------------


class RemoteError(Exception):
    """The program raised an exception that is not a built-in one (or the program is gone)."""


class Remote:
    """An object that lives in the program process. The judge can call it, read its attributes
    and items, iterate it (each item comes back as plain data) and ask its len/str/repr (an int
    or a str, checked); it equals only itself. Everything else the judge decides from plain data
    or refuses with a TypeError (the test fails): the object's truth value, its hash, whether
    it equals or differs from a value, so an object that computes nothing passes no
    `assert f(x)`, `f(x) != y` or `f(x) not in {...}`; membership (`x in f(...)`) is decided by
    the judge over the items the object yields, never by the object's own `__contains__`."""

    __slots__ = ("_link", "_handle", "_type")

    def __init__(self, link, handle: int, type_name: str):
        self._link, self._handle, self._type = link, handle, type_name

    def __call__(self, *args, **kwargs):
        return self._link.call(self._handle, args, kwargs)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._link.ask({"op": "attr", "h": self._handle, "name": name})

    def __getitem__(self, key):
        return self._link.ask({"op": "item", "h": self._handle, "key": self._link.out(key)})

    def __contains__(self, item):
        return any(value is item or value == item for value in self)

    def __len__(self):
        return _exact(self._link.ask({"op": "len", "h": self._handle}), int)

    def __bool__(self):
        raise self._not_a_value("has no truth value the judge can check")

    def __iter__(self):
        return self._link.ask({"op": "iter", "h": self._handle})

    def __next__(self):
        return self._link.ask({"op": "next", "h": self._handle})

    def __repr__(self):
        return _exact(self._link.ask({"op": "repr", "h": self._handle}), str)

    def __str__(self):
        return _exact(self._link.ask({"op": "str", "h": self._handle}), str)

    def __hash__(self):
        raise self._not_a_value("cannot be hashed or looked up in a set or dict")

    def __eq__(self, other):
        if type(other) is Remote:  # one handle per object: equal only to the very same object
            return other is self
        raise self._not_a_value("cannot be compared with a value")

    def __ne__(self, other):
        return not self.__eq__(other)

    def _not_a_value(self, what: str) -> TypeError:
        return TypeError(
            f"the program returned a {self._type} object, not a value: it {what} (return plain "
            "data: numbers, strings, lists, tuples, dicts, sets)"
        )


def _exact(value, kind):
    if type(value) is not kind:
        raise TypeError(f"the program returned {type(value).__name__}, expected {kind.__name__}")
    return value


EXCEPTIONS = {
    name: value
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, Exception)
}
MUTABLE = (list, dict, set, bytearray)


class Link:
    """The judge's side of the program process: requests out, plain data back."""

    def __init__(self, requests: int, replies: int):
        self.requests, self.replies = requests, replies
        self.remotes: dict[int, Remote] = {}
        self.gone: str | None = None

    def resolve(self, message):
        handle = message.get("h")
        if type(handle) is not int:
            raise ValueError("malformed handle")
        if message.get("#") == "module":
            name = str(message.get("v"))
            top = name.partition(".")[0]
            if top in sys.stdlib_module_names and top not in NOT_IMPORTED:
                with contextlib.suppress(ImportError):
                    __import__(name)
                    return sys.modules[name]
        if handle not in self.remotes:
            self.remotes[handle] = Remote(self, handle, str(message.get("t"))[:80])
        return self.remotes[handle]

    def out(self, value):
        """A judge-side value as plain data for the program (remote objects as their handle)."""

        def handle(obj):
            if type(obj) is Remote and obj._link is self:
                return obj._handle
            raise TypeError(f"cannot pass {type(obj).__name__} to the program")

        data = encode(value, handle)
        return data

    def exchange(self, request: dict) -> dict:
        """Send one request; the reply, or the program's exception raised here. StopIteration
        ends an iteration only as the answer to `next`: raised by a call, say, it would end the
        test's `map`/`filter`/`all` early and pass it, so it becomes a RemoteError."""
        if self.gone:
            raise RemoteError(self.gone)
        try:
            send(self.requests, request)
            reply = receive(self.replies)
        except (OSError, ValueError) as error:
            reply, self.gone = None, f"the program stopped answering ({describe(error)})"
        if not isinstance(reply, dict):
            self.gone = self.gone or "the program ended"
            raise RemoteError(self.gone)
        if "raise" in reply:
            name, message = (str(part) for part in _list(reply["raise"], 2))
            exception = EXCEPTIONS.get(name)
            if exception in (StopIteration, StopAsyncIteration) and request.get("op") != "next":
                exception = None
            try:
                error = exception(message) if exception else None
            except Exception:  # e.g. UnicodeDecodeError needs more arguments
                error = None
            error = error or RemoteError(f"{name}: {message}")
            error.from_program = True  # its message is the program's, not the tests'
            raise error
        return reply

    def ask(self, request: dict):
        return decode(self.exchange(request).get("ok"), self.resolve)

    def call(self, handle: int, args: tuple, kwargs: dict):
        back = [i for i, arg in enumerate(args) if type(arg) in MUTABLE]
        reply = self.exchange({
            "op": "call", "h": handle, "args": [self.out(a) for a in args],
            "kwargs": [[k, self.out(v)] for k, v in kwargs.items()], "back": back,
        })  # fmt: skip
        result = decode(reply.get("ok"), self.resolve)
        for index, data in zip(back, _list(reply.get("back"), len(back)), strict=True):
            _update(args[index], decode(data, self.resolve))  # the call changed an argument
        return result

    def lookup(self, name: str):
        reply = self.exchange({"op": "get", "name": name})
        if reply.get("missing"):
            raise KeyError(name)
        return decode(reply.get("ok"), self.resolve)


def _update(target, new) -> None:
    if type(new) is not type(target):
        raise RemoteError("the program changed an argument's type")
    if type(target) in (list, bytearray):
        target[:] = new
    else:
        target.clear()
        target.update(new)


class Names(dict):
    """The judge's builtins: Python's own, then standard-library modules (the judge's own copy,
    whatever the program bound to that name), then the program's names, looked up when used.
    So a program cannot redefine `abs`, `len`, `sorted` or `math` for the tests."""

    link: Link

    def __missing__(self, name):
        if name in sys.stdlib_module_names and name not in NOT_IMPORTED:
            with contextlib.suppress(ImportError):
                return __import__(name)
        return self.link.lookup(name)


def test_problem(test: str, remote=()) -> str | None:
    """Why a test snippet cannot be judged (None when it can): it must be valid Python holding
    at least one `assert` (or `raise`) statement, or it would pass without checking anything,
    and must not call a function named like a standard-library module (the judge uses the
    module: the program cannot replace `math` for the tests) unless that name is in `remote`."""
    import ast

    try:
        tree = ast.parse(test)
    except (SyntaxError, ValueError) as error:
        return f"is not valid Python ({type(error).__name__}: {getattr(error, 'msg', error)})"
    if not any(isinstance(node, ast.Assert | ast.Raise) for node in ast.walk(tree)):
        return "has no assert statement, so it would pass without checking anything"
    own = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and type(n.ctx) is ast.Store}
    own |= {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    own |= {(a.asname or a.name).partition(".")[0] for n in ast.walk(tree)
            if isinstance(n, ast.Import | ast.ImportFrom) for a in n.names}  # fmt: skip
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            if name in sys.stdlib_module_names and name not in own and name not in remote:
                return (
                    f"calls {name}(), but {name} is a standard-library module, which the "
                    "judge keeps as the module: rename the function (or name it with "
                    "entry_point_column)"
                )
    return None


def judge_main(job_id: int, tests_fd: int, requests: int, replies: int, verdicts: int) -> None:
    try:
        job = receive(tests_fd)
    except ValueError:
        job = None
    os.close(tests_fd)
    if not isinstance(job, dict) or job.get("id") != job_id:
        send(verdicts, {"error": "judge: the tests did not arrive"})
        return
    send(verdicts, {"tests": True})
    link = Link(requests, replies)
    names = Names(vars(builtins))
    names.link = link
    scope = {"__name__": "__test__", "__builtins__": names}
    prelude = str(job.get("prelude") or "")
    if prelude:  # trusted code from the data (e.g. HumanEval's prompt: helpers the tests call)
        with contextlib.suppress(BaseException):
            exec(compile(prelude, "prelude.py", "exec"), scope)
    for name in _list(job.get("remote")):  # names that must come from the program
        scope.pop(str(name), None)
        names.pop(str(name), None)
    try:
        status = receive(replies)
    except (OSError, ValueError):
        status = None
    if not isinstance(status, dict) or not status.get("loaded"):
        error = status.get("error") if isinstance(status, dict) else "the program ended"
        send(verdicts, {"error": "program: " + str(error)[:500]})
        return
    remote = [str(name) for name in _list(job.get("remote"))]
    for index, test in enumerate(_list(job.get("tests"))):
        why = test_problem(str(test), remote)
        if why is None:
            try:
                exec(compile(str(test), f"test_{index}.py", "exec"), scope)
            except BaseException as error:  # a failed test, whatever it raised
                # Only the program's own messages leave the judge, never the tests' text.
                why = describe(error) if getattr(error, "from_program", False) else None
                why = why or type(error).__name__
        send(verdicts, {"i": index, "ok": why is None, "why": why})
    send(verdicts, {"done": True})


# --- seccomp -------------------------------------------------------------------------------

# (audit arch, syscall numbers) per machine; aarch64 follows asm-generic/unistd.h.
SYSCALLS = {
    "x86_64": (0xC000003E, {
        "clone": 56, "clone3": 435, "fork": 57, "vfork": 58, "kill": 62, "tgkill": 234,
        "socket": 41, "socketpair": 53, "fcntl": 72, "ioctl": 16,
        "denied": (319, 447, 46, 307,
                   200, 129, 297, 424, 434, 438, 101, 310, 311, 312, 272, 308, 165, 166, 155,
                   161, 442, 428, 429, 430, 431, 432, 433, 321, 298, 323, 250, 248, 249, 425,
                   426, 427, 246, 320, 175, 313, 176, 169, 167, 168, 163, 179, 103, 172, 173,
                   29, 30, 31, 64, 65, 66, 67, 68, 69, 70, 71, 220, 240, 241, 242, 243, 244, 245,
                   253, 254, 255, 294, 300, 301),
    }),
    "aarch64": (0xC00000B7, {
        "clone": 220, "clone3": 435, "kill": 129, "tgkill": 131,
        "socket": 198, "socketpair": 199, "fcntl": 25, "ioctl": 29,
        "denied": (279, 447, 211, 269,
                   130, 138, 240, 424, 434, 438, 117, 270, 271, 272, 97, 268, 40, 39, 41, 51,
                   442, 428, 429, 430, 431, 432, 433, 280, 241, 282, 219, 217, 218, 425, 426,
                   427, 104, 294, 105, 273, 106, 142, 224, 225, 89, 60, 116,
                   180, 181, 182, 183, 184, 185, 186, 187, 188, 189, 190, 191, 192, 193, 194, 195,
                   196, 197, 26, 27, 28, 262, 263),
    }),
}  # fmt: skip
# denied: memfd_create, memfd_secret, sendmsg, sendmmsg (memory outside RLIMIT_AS: memfds, and
# descriptors parked in flight in a Unix socket, which SCM_RIGHTS needs sendmsg for), tkill,
# rt_(tg)sigqueueinfo, pidfd_send_signal/open/getfd, ptrace, process_vm_*, kcmp,
# unshare, setns, mount API, pivot_root, chroot, bpf, perf_event_open, userfaultfd, keys,
# io_uring, kexec, modules, reboot, swap, acct, quotactl, syslog (and iopl/ioperm on x86_64),
# System V IPC and POSIX message queues (state that would outlive the program in its sandbox),
# inotify (init, init1, add_watch, rm_watch) and fanotify (init, mark): with keys and POSIX
# message queues, the resources the kernel counts per user (fs.inotify.max_user_instances and
# max_user_watches, keys, fs.mqueue), which a program must not spend for the trainer's user.
ALLOW, KILL = 0x7FFF0000, 0x80000000
EPERM, ENOSYS, AF_UNIX, CLONE_THREAD = 0x50001, 0x50026, 1, 0x10000
LD, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
# fcntl commands and ioctl requests that make the kernel signal another process (the owner of a
# file, set to any pid or process group, gets SIGIO or the F_SETSIG signal on I/O) or type into
# a terminal: F_SETOWN, F_SETSIG, F_SETOWN_EX, F_SETFL (with O_ASYNC); FIOSETOWN, SIOCSPGRP,
# FIOASYNC, TIOCSTI.
F_SETFL, O_ASYNC, SIGNALLING_FCNTL = 4, 0o20000, (8, 10, 15)
SIGNALLING_IOCTL = (0x8901, 0x8902, 0x5452, 0x5412)


def seccomp_program(machine: str, pid: int) -> bytes:
    """A classic BPF filter (struct sock_filter[]) for the program and judge processes: threads
    yes, new processes no (clone3 answers ENOSYS so libc falls back to clone for threads);
    signals only to itself, and no file owner that would have the kernel signal another process
    (`SIGNALLING_FCNTL`, `SIGNALLING_IOCTL`, O_ASYNC); Unix sockets only; the calls listed in
    `SYSCALLS` fail with EPERM; another architecture's calling convention kills the process."""
    arch, calls = SYSCALLS[machine]
    code: list = []  # (opcode, k, jump-if-true label, jump-if-false label)

    def op(opcode, k=0, yes=None, no=None):
        code.append((opcode, k, yes, no))

    arg0, arg1, arg2 = 16, 24, 32  # offsetof(struct seccomp_data, args[i]), low 32 bits
    op(LD, 4)
    op(JEQ, arch, None, "kill")
    op(LD, 0)
    if machine == "x86_64":
        op(JGE, 0x40000000, "eperm", None)  # the x32 ABI
    op(JEQ, calls["clone"], "clone", None)
    op(JEQ, calls["clone3"], "enosys", None)
    op(JEQ, calls["kill"], "signal", None)
    op(JEQ, calls["tgkill"], "signal", None)
    op(JEQ, calls["socket"], "socket", None)
    op(JEQ, calls["socketpair"], "socket", None)
    op(JEQ, calls["fcntl"], "fcntl", None)
    op(JEQ, calls["ioctl"], "ioctl", None)
    for name in ("fork", "vfork"):
        if name in calls:
            op(JEQ, calls[name], "eperm", None)
    for number in calls["denied"]:
        op(JEQ, number, "eperm", None)
    op(RET, ALLOW)
    labels = {"clone": len(code)}
    op(LD, arg0)
    op(JSET, CLONE_THREAD, "allow", "eperm")
    labels["signal"] = len(code)
    op(LD, arg0)
    op(JEQ, pid, "allow", None)
    op(JEQ, 0, "allow", "eperm")  # 0: its own process group (it leads a session of its own)
    labels["socket"] = len(code)
    op(LD, arg0)
    op(JEQ, AF_UNIX, "allow", "eperm")
    labels["fcntl"] = len(code)
    op(LD, arg1)
    for command in SIGNALLING_FCNTL:
        op(JEQ, command, "eperm", None)
    op(JEQ, F_SETFL, None, "allow")
    op(LD, arg2)
    op(JSET, O_ASYNC, "eperm", "allow")
    labels["ioctl"] = len(code)
    op(LD, arg1)
    for request in SIGNALLING_IOCTL:
        op(JEQ, request, "eperm", None)
    op(RET, ALLOW)
    for label, value in (("allow", ALLOW), ("eperm", EPERM), ("enosys", ENOSYS), ("kill", KILL)):
        labels[label] = len(code)
        op(RET, value)
    out = b""
    for index, (opcode, k, yes, no) in enumerate(code):
        jt = labels[yes] - index - 1 if yes else 0
        jf = labels[no] - index - 1 if no else 0
        out += struct.pack("<HBBI", opcode, jt, jf, k & 0xFFFFFFFF)
    return out


class Kernel:
    """prctl/mount/pivot_root/capset through ctypes (Python has no wrappers for them)."""

    def __init__(self):
        import ctypes

        self.ctypes = ctypes
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.machine = os.uname().machine

    def check(self, result: int, what: str) -> None:
        if result != 0:
            error = self.ctypes.get_errno()
            raise OSError(error, f"{what}: {os.strerror(error)}")

    def prctl(self, option: int, arg: int = 0, arg3: int = 0) -> int:
        c = self.ctypes
        return self.libc.prctl(c.c_int(option), c.c_ulong(arg), c.c_ulong(arg3), c.c_ulong(0),
                               c.c_ulong(0))  # fmt: skip

    def seccomp(self, pid: int) -> None:
        c = self.ctypes
        program = seccomp_program(self.machine, pid)

        class Fprog(c.Structure):
            _fields_ = [("len", c.c_ushort), ("filter", c.c_void_p)]

        buffer = c.create_string_buffer(program, len(program))
        fprog = Fprog(len(program) // 8, c.cast(buffer, c.c_void_p))
        self.check(self.prctl(38, 1), "no_new_privs")  # PR_SET_NO_NEW_PRIVS
        self.check(self.prctl(22, 2, c.addressof(fprog)), "seccomp")  # SECCOMP_MODE_FILTER

    def mount(self, source, target, fstype, flags: int, data=None) -> None:
        c = self.ctypes

        def b(value):
            return None if value is None else os.fsencode(value)

        result = self.libc.mount(b(source), b(target), b(fstype), c.c_ulong(flags), b(data))
        self.check(result, f"mount {target}")

    def syscall(self, number: dict, *args) -> None:
        self.check(self.libc.syscall(number[self.machine], *args), "syscall")


# --- the jail (util-linux `unshare` mode: bubblewrap does this itself) -----------------------

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC = 1, 2, 4, 8, 32, 4096, 16384
MS_PRIVATE, MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1 << 18, 1024, 2048, 1 << 21
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
CAPSET = {"x86_64": 126, "aarch64": 91}


def _locked_flags(path: str) -> int:
    """Mount flags a bind remount inside a user namespace must keep (the kernel locks them)."""
    flags = os.statvfs(path).f_flag
    result = 0
    for st, ms in ((1, MS_RDONLY), (2, MS_NOSUID), (4, MS_NODEV), (8, MS_NOEXEC),
                   (1024, MS_NOATIME), (2048, MS_NODIRATIME), (4096, MS_RELATIME)):  # fmt: skip
        if flags & st:
            result |= ms
    return result


def enter_jail(kernel: Kernel, jail: dict) -> None:
    """Build a new root (read-only binds of the interpreter, its standard library and the
    system's shared libraries; a size-capped tmpfs on /tmp; /dev/null, zero, urandom), pivot
    into it, and drop every capability. Runs as root of a fresh user + mount namespace."""
    root = jail["root"]
    kernel.mount(None, "/", None, MS_REC | MS_PRIVATE)
    kernel.mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m")
    for path in jail["binds"]:
        target = root + path
        if os.path.isdir(path):
            os.makedirs(target, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "a"):
                pass
        kernel.mount(path, target, None, MS_BIND | MS_REC)
        locked = _locked_flags(path) & ~MS_RDONLY
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | locked
        if path not in jail["devices"]:
            flags |= MS_NODEV
        kernel.mount(None, target, None, flags)
    for link, target in jail["links"]:
        os.makedirs(os.path.dirname(root + link), exist_ok=True)
        os.symlink(target, root + link)
    for path in jail["hide"]:  # site-packages inside a bound directory
        kernel.mount("tmpfs", root + path, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "size=4k")
    os.makedirs(root + "/tmp", exist_ok=True)
    options = f"mode=1777,size={int(jail['tmp_bytes'])},nr_inodes={MAX_FILES * 2}"
    if jail.get("ids"):  # the dedicated user's (it wipes it after every job)
        options += ",uid={},gid={}".format(*(int(number) for number in jail["ids"]))
    kernel.mount("tmpfs", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, options)
    os.makedirs(root + "/.old")
    os.chdir(root)
    kernel.syscall(PIVOT_ROOT, b".", b".old")
    os.chdir("/")
    kernel.check(kernel.libc.umount2(b"/.old", 2), "umount old root")  # MNT_DETACH
    os.rmdir("/.old")
    kernel.mount(None, "/", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    with contextlib.suppress(OSError):
        socket.sethostname("sandbox")
    _drop_capabilities(kernel, jail.get("ids"))


def become(ids) -> None:
    """Become the dedicated user `ids` ([uid, gid]) a root trainer gives its sandbox: no
    supplementary groups, real, effective and saved ids all its (which clears every
    capability), checked."""
    uid, gid = (int(number) for number in ids)
    if uid <= 0 or gid <= 0:
        raise OSError(1, f"not a dedicated user: {ids}")
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid) or os.getgroups():
        raise OSError(1, f"could not become uid {uid}")


def _drop_capabilities(kernel: Kernel, ids=None) -> None:
    c = kernel.ctypes
    cap = 0
    while kernel.prctl(24, cap) == 0:  # PR_CAPBSET_DROP until the kernel's last capability
        cap += 1
    if ids:  # a root trainer's jail, made with root's rights: now its dedicated user
        become(ids)
    kernel.prctl(47, 4)  # PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL
    header = (c.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (c.c_uint32 * 6)()
    kernel.syscall(CAPSET, header, data)
    kernel.check(kernel.prctl(38, 1), "no_new_privs")


# --- the server ----------------------------------------------------------------------------

# A job's time budget counts CPU, not the machine's load: `Budget`. MIN_SHARE is the share of one
# CPU below which a computing job is charged for waiting too, so a job holds its sandbox at most
# `timeout / MIN_SHARE` wall-clock seconds (a job that sleeps or blocks: `timeout`).
MIN_SHARE = 1 / 3
POLL = 0.02  # seconds between looks at a job's CPU clocks
COLLECTOR_NAME = b"grpo-collector"  # the collector's process name (ps, /proc/<pid>/comm)
MAX_REPORT = 65536  # bytes of a script's error report, or of one verdict message, read at most


def cpu_clock(pid: int) -> int:
    """The clock id of process `pid`'s CPU time, all its threads (MAKE_PROCESS_CPUCLOCK)."""
    return ((~pid) << 3) | 2


class Budget:
    """The time a job has used: the CPU seconds of its processes, plus the wall-clock seconds
    it spent neither computing nor kept from a CPU (sleeping, blocked on a read). A job that
    computes pays only CPU seconds, however busy the machine is, so host load does not turn a
    verdict into a timeout: its CPU seconds `cpu` are taken to need up to `cpu / MIN_SHARE`
    wall-clock seconds, and only wall-clock time past that counts as waiting. So a job ends
    after at most `seconds / MIN_SHARE` wall-clock seconds, and one that only waits after
    `seconds`; only on a machine that leaves it under MIN_SHARE of a CPU can a verdict change.

    `wall` (seconds, or None): a cap on the job's wall-clock time besides `seconds`, its
    caller's deadline; when it is what ran out, `wall_cut` is True."""

    def __init__(self, seconds: float, pids: list[int], wall: float | None = None):
        self.seconds = seconds
        self.wall = wall
        self.wall_cut = False  # the last `left()` found the wall-clock cap spent, not `seconds`
        self.seen = dict.fromkeys(pids, 0.0)  # pid -> CPU seconds last read
        self.start = self.now()

    def now(self) -> float:
        return time.monotonic()

    def cpu_seconds(self, pid: int) -> float:
        return time.clock_gettime(cpu_clock(pid))

    def used(self) -> float:
        for pid in self.seen:
            with contextlib.suppress(OSError):  # reaped: its last reading stands
                self.seen[pid] = self.cpu_seconds(pid)
        cpu = sum(self.seen.values())
        return cpu + max(0.0, self.now() - self.start - cpu / MIN_SHARE)

    def left(self) -> float:
        """Seconds of the budget left (<= 0: spent)."""
        left = self.seconds - self.used()
        if self.wall is None:
            return left
        wall_left = self.wall - (self.now() - self.start)
        self.wall_cut = wall_left <= 0 < left
        return min(left, wall_left)

    def wait(self) -> float:
        """Seconds to wait before looking again; 0 when the budget is spent."""
        left = self.left()
        return 0.0 if left <= 0 else min(POLL, left)


def parse_frame(data: bytes) -> dict | None:
    """The single length-prefixed JSON object `data` holds; None when it holds anything else
    (junk, several frames, a non-object, nesting deeper than the parser's stack)."""
    if len(data) < 4 or struct.unpack(">I", data[:4])[0] != len(data) - 4:
        return None
    return parse_object(data[4:])


def wall_cap(limits: dict) -> float | None:
    """A job's wall-clock cap from its limits (`"wall"`: seconds above 0), else None."""
    wall = limits.get("wall")
    if type(wall) not in (int, float) or not 0 < wall < math.inf:
        return None
    return float(wall)


def parse_object(body: bytes) -> dict | None:
    try:
        message = json.loads(body, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):  # RecursionError: `[[[[...` deeper than the stack
        return None
    return message if isinstance(message, dict) else None


class Server:
    """The fork server: it receives each job's message (an id, limits and two pipes it never
    reads), forks the job's processes from its own clean state, hands their pipes to the
    collector, reaps them (killing them when the collector says so) and wipes the directory.
    It never reads a program, its tests, its output, its verdicts or its errors, so a job,
    forked from it, finds nothing of an earlier one in its memory (live objects, frames, freed
    heap): all of that goes to the collector, from which nothing is ever forked."""

    def __init__(self, control: socket.socket, inner: socket.socket, config: dict, kernel):
        self.control, self.inner, self.kernel = control, inner, kernel
        self.scratch = config["scratch"]  # the writable directory, wiped after every job
        self.workdir = os.path.join(self.scratch, "work")
        # a user of its own: a user namespace, or a root trainer's dedicated user
        self.nproc = config["mode"] != "process" or bool(config.get("ids"))

    def child(self, keep: tuple[int, ...], limits: dict) -> tuple[int, ...]:
        """Common set-up of the program and judge processes; returns the kept fds, renumbered."""
        os.setsid()
        null = os.open("/dev/null", os.O_RDWR)
        moved = tuple(os.dup(fd) for fd in keep)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        kept = tuple(range(3, 3 + len(moved)))
        for target, fd in zip(kept, moved, strict=True):
            if fd != target:
                os.dup2(fd, target)
        os.closerange(3 + len(moved), 1 << 16)
        os.chdir(self.workdir)
        os.environ.update(HOME=self.workdir, TMPDIR=self.workdir)
        if "tempfile" in sys.modules:
            sys.modules["tempfile"].tempdir = None
        seconds = max(1, math.ceil(float(limits["timeout"]))) + 1
        memory = int(limits["memory_mb"]) * 1024 * 1024
        caps = [(resource.RLIMIT_CPU, seconds, seconds + 1), (resource.RLIMIT_AS, memory, memory),
                (resource.RLIMIT_FSIZE, int(limits["file_bytes"]), int(limits["file_bytes"])),
                (resource.RLIMIT_NOFILE, 64, 64), (resource.RLIMIT_CORE, 0, 0)]  # fmt: skip
        if self.nproc:
            caps.append((resource.RLIMIT_NPROC, 64, 64))
        for kind, soft, hard in caps:
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(kind, (soft, hard))
        self.kernel.seccomp(os.getpid())
        return kept

    def fork(self, main, job_id: int, keep: tuple[int, ...], limits: dict) -> int:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = 1 if main(job_id, *self.child(keep, limits)) else 0
            finally:
                os._exit(code)
        return pid

    def serve(self) -> None:
        while True:
            try:
                data, fds, _, _ = socket.recv_fds(self.control, 65536, 2)
            except OSError:
                return
            job = parse_object(data) if data else None
            if job is None or not self.run(job, fds):
                return  # the trainer is gone, or a fresh sandbox for the next job

    def run(self, job: dict, fds: list[int]) -> bool:
        """One job: its processes forked, their read ends handed to the collector, reaped, the
        directory wiped. False: this sandbox ends (the collector is gone, or it is not clean)."""
        job_id, limits, script = job.get("id"), job.get("limits"), job.get("run") is not None
        if type(job_id) is not int or type(limits) is not dict or len(fds) != 2 - script:
            for fd in fds:
                os.close(fd)
            return False
        os.makedirs(self.workdir, exist_ok=True)
        if script:
            output_r, output_w = os.pipe()
            report_r, report_w = os.pipe()
            keep = (fds[0], output_w, report_w)
            pids = [self.fork(script_main, job_id, keep, limits)]
            closed, handed = keep, [output_r, report_r]
        else:
            requests_r, requests_w = os.pipe()  # judge -> program
            replies_r, replies_w = os.pipe()  # program -> judge
            verdicts_r, verdicts_w = os.pipe()  # judge -> collector
            program = (fds[0], requests_r, replies_w)
            judge = (fds[1], requests_w, replies_r, verdicts_w)
            pids = [self.fork(program_main, job_id, program, limits),
                    self.fork(judge_main, job_id, judge, limits)]  # fmt: skip
            closed, handed = (*program, *judge), [verdicts_r]
        for fd in closed:
            os.close(fd)
        message = json.dumps({"job": job, "pids": pids}).encode()
        try:
            socket.send_fds(self.inner, [message], handed)
        except OSError:
            pass  # the collector is gone: reap() kills the job's processes
        finally:
            for fd in handed:
                os.close(fd)
        if not self.reap(pids):
            return False
        clean = self.wipe()
        with contextlib.suppress(OSError):
            self.inner.sendall(json.dumps({"recycle": not clean}).encode())
        return clean

    def reap(self, pids: list[int]) -> bool:
        """Wait for the job's processes to end, telling the collector of each (`{"exit": i,
        "status": wait status}`), and kill them when it says `kill` (it always does, once it
        has what it needs). False when the collector is gone (they are killed then)."""
        pidfds = {}
        for pid in pids:
            with contextlib.suppress(OSError, AttributeError):  # pidfd: Linux 5.3+
                pidfds[pid] = os.pidfd_open(pid)
        alive, told = list(pids), False
        try:
            while alive or not told:
                watch = [pidfds[pid] for pid in alive if pid in pidfds]
                watch += [] if told else [self.inner]
                polling = any(pid not in pidfds for pid in alive)
                select.select(watch, [], [], 0.005 if polling or not watch else None)
                if not told and select.select([self.inner], [], [], 0)[0]:
                    told = True
                    ok = self.inner.recv(64) == b"kill"
                    for pid in alive:  # not reaped yet: the pid is still theirs
                        _kill(pid)
                    if not ok:  # the collector is gone
                        for pid in alive:
                            os.waitpid(pid, 0)
                        return False
                for pid in list(alive):
                    done, status = os.waitpid(pid, os.WNOHANG)
                    if done:
                        alive.remove(pid)
                        with contextlib.suppress(OSError):
                            self.inner.sendall(json.dumps({"exit": pids.index(pid),
                                                           "status": status}).encode())  # fmt: skip
        finally:
            for fd in pidfds.values():
                os.close(fd)
        return True

    def wipe(self) -> bool:
        """Empty the writable directory (its processes are dead by now); False when that fails
        or it holds too much: then the whole sandbox is recycled, its tmpfs freed by the kernel."""
        folders, todo, count = [], [self.scratch], 0
        try:
            while todo:
                folder = todo.pop()
                os.chmod(folder, 0o700)
                folders.append(folder)
                with os.scandir(folder) as entries:
                    for entry in entries:
                        count += 1
                        if count > MAX_FILES:
                            return False
                        if entry.is_dir(follow_symlinks=False):
                            todo.append(entry.path)
                        else:
                            os.unlink(entry.path)
            for folder in reversed(folders[1:]):
                os.rmdir(folder)
        except (OSError, RecursionError, ValueError):
            return False
        return True


def _kill(pid: int) -> None:
    """SIGKILL a job process (it leads its own process group; under seccomp it cannot make
    another process, so its group is itself and its threads)."""
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)


class Collector:
    """Reads what each job's processes say (the judge's verdicts; a script's output and error
    report), within the job's `Budget`, tells the server to kill them, and answers the trainer
    once the server has reaped them all. Forked once from the server at start; nothing is ever
    forked from it, so what it has read reaches no later program."""

    def __init__(self, control: socket.socket, inner: socket.socket):
        self.control, self.inner = control, inner
        self.exits: dict[int, int] = {}  # process index -> wait status, for the current job

    def serve(self) -> None:
        with contextlib.suppress(OSError):
            while self.job():
                pass

    def job(self) -> bool:
        """Collect one job and answer the trainer; False when the sandbox ends."""
        data, fds, _, _ = socket.recv_fds(self.inner, 65536, 2)
        message = parse_object(data) if data else None
        if message is None:
            return False
        job, pids, self.exits = message["job"], message["pids"], {}
        limits = job["limits"]
        budget = Budget(float(limits["timeout"]), pids, wall_cap(limits))
        script, report = "run" in job, b""
        try:
            if script:
                result, report = self.collect_output(job, fds[0], fds[1], budget)
            else:
                result = self.collect(job["id"], fds[0], budget)
        finally:
            for fd in fds:
                os.close(fd)
        self.inner.sendall(b"kill")
        message = self.next_message(None)
        while "recycle" not in message:  # the server's word on each process, then the directory
            message = self.next_message(None)
        if script and not (result["timed_out"] or result["truncated"]):
            result["error"] = self.script_error(job["id"], self.exits.get(0, 0), report)
        result["wall_cut"] = result["timed_out"] and budget.wall_cut
        result["recycle"] = message["recycle"] is not False
        self.control.sendall(json.dumps(result).encode())
        return not result["recycle"]

    def next_message(self, timeout: float | None) -> dict:
        """The server's next message ({} when none came within `timeout`); exit statuses are
        recorded as they come. Raises OSError when the server is gone."""
        if timeout is not None and not select.select([self.inner], [], [], timeout)[0]:
            return {}
        data = self.inner.recv(65536)
        if not data:
            raise OSError("the server is gone")
        message = parse_object(data) or {}
        if type(message.get("exit")) is int:
            self.exits[message["exit"]] = int(message.get("status") or 0)
        return message

    def collect(self, job_id: int, verdicts: int, budget: Budget) -> dict:
        result = {"id": job_id, "verdicts": {}, "timed_out": False, "error": "", "tests": False}
        buffer = b""
        while True:
            wait = budget.wait()
            if wait <= 0:
                result["timed_out"] = True
                break
            ready, _, _ = select.select([verdicts], [], [], wait)
            if not ready:
                continue
            chunk = os.read(verdicts, 65536)
            if not chunk:
                break
            buffer += chunk
            while len(buffer) >= 4:
                (size,) = struct.unpack(">I", buffer[:4])
                if size > MAX_REPORT:
                    return result  # no judge sends that: stop reading
                if len(buffer) < 4 + size:
                    break
                message, buffer = parse_object(buffer[4 : 4 + size]) or {}, buffer[4 + size :]
                index, why = message.get("i"), message.get("why")
                if type(index) is int and (why is None or type(why) is str):
                    result["verdicts"][str(index)] = [message.get("ok") is True, why]
                elif message.get("tests") is True:
                    result["tests"] = True
                elif type(message.get("error")) is str:
                    result["error"] = message["error"][:1000]
                elif message.get("done") is True:
                    return result
        return result

    def collect_output(self, job: dict, output_r: int, report_r: int, budget: Budget):
        """(result, its error report): the script's output (at most 4 bytes a character) and
        report, read until both end, the output passes `max_chars` (the script is then stopped)
        or its time is up; then its end, awaited within the budget."""
        max_chars = max(1, int(job["run"]["max_chars"]))
        output, report = bytearray(), bytearray()
        limit = 4 * max_chars
        streams = [output_r, report_r]
        timed_out = truncated = False
        while streams and not truncated:
            wait = budget.wait()
            if wait <= 0:
                timed_out = True
                break
            ready, _, _ = select.select(streams, [], [], wait)
            for fd in ready:
                chunk = os.read(fd, 65536)
                if not chunk or (fd == report_r and len(report) > MAX_REPORT):
                    streams.remove(fd)  # ended (or a report no harness would send)
                elif fd == output_r:
                    output += chunk
                    truncated = len(output) > limit
                else:
                    report += chunk
        while not (timed_out or truncated) and 0 not in self.exits:  # its pipes closed: ended?
            wait = budget.wait()
            if wait <= 0:
                timed_out = True
            else:
                self.next_message(wait)
        text = bytes(output[:limit]).decode("utf-8", "replace")
        if len(text) > max_chars:
            text, truncated = text[:max_chars], True
        result = {"id": job["id"], "output": text, "error": "", "timed_out": timed_out,
                  "truncated": truncated}  # fmt: skip
        return result, bytes(report)

    def script_error(self, job_id: int, status: int, report: bytes) -> str:
        """The script's error, by its exit status: none for status 0 (whatever it wrote), the
        error its report names for the harness's status 1 (when the report is one well-formed
        message for this job), else how it ended."""
        if os.WIFSIGNALED(status):
            try:
                name = signal.Signals(os.WTERMSIG(status)).name
            except ValueError:
                name = f"signal {os.WTERMSIG(status)}"
            return f"the program was killed by {name}"
        exit_code = os.waitstatus_to_exitcode(status)
        if exit_code == 0:
            return ""
        message = parse_frame(report) if exit_code == 1 else None
        error = message.get("error") if message and message.get("id") == job_id else None
        if isinstance(error, str) and error:
            return error[:1000]
        return f"the program exited with status {exit_code}"


def seccomp_works(kernel: Kernel) -> str:
    """'' when a child under the filter cannot fork (checked once per sandbox), else why not."""
    if kernel.machine not in SYSCALLS:
        return f"no seccomp filter for {kernel.machine}"
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            kernel.seccomp(os.getpid())
            try:
                os.fork()
                code = 2
            except PermissionError:
                code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return "" if code == 0 else f"the seccomp filter did not apply (check {code})"


def preload() -> None:
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            __import__(name)


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    config = json.loads(control.recv(1 << 20))
    kernel = Kernel()
    try:
        if config["mode"] == "unshare":
            enter_jail(kernel, {**config["jail"], "ids": config.get("ids")})
        elif config.get("ids"):  # process mode, started by a root trainer: its dedicated user
            preload()
            become(config["ids"])
            stdlib = os.path.dirname(os.__file__)
            if not os.access(stdlib, os.R_OK | os.X_OK):
                raise OSError(13, f"the sandbox's user (uid {os.getuid()}) cannot read the "
                              "Python's standard library: set sandbox_python to a Python every "
                              "user can read, e.g. /usr/bin/python3")  # fmt: skip
        kernel.check(kernel.prctl(4, 0), "dumpable")  # PR_SET_DUMPABLE: no ptrace, no /proc/pid
        problem = seccomp_works(kernel)
    except OSError as error:
        problem = describe(error)
    preload()
    version = ".".join(str(part) for part in sys.version_info[:3])
    control.sendall(json.dumps({"ready": not problem, "problem": problem, "python": version,
                                "machine": kernel.machine}).encode())  # fmt: skip
    if problem:
        return
    gc.collect()
    gc.freeze()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    collector = os.fork()
    if collector == 0:
        ours.close()
        kernel.libc.prctl(15, kernel.ctypes.c_char_p(COLLECTOR_NAME), 0, 0, 0)  # PR_SET_NAME
        try:
            Collector(control, theirs).serve()
        finally:
            os._exit(0)
    theirs.close()
    try:
        Server(control, ours, config, kernel).serve()
    finally:
        ours.close()  # the collector answers what it has, then ends
        os.waitpid(collector, 0)


def check_arguments(argv: list) -> None:
    """The harness is started by the sandbox with its socket's descriptor, never by hand: any
    other arguments (`--help` included) get argparse's usage (exit 0 for --help, 2 otherwise)."""
    if len(argv) == 1 and argv[0].isdigit():
        return
    import argparse  # only off the sandbox's path: it starts the harness with one number

    parser = argparse.ArgumentParser(
        prog="python -m grpo_kit.sandbox.harness",
        description="The code sandbox's fork server. Internal: grpo_kit.sandbox starts it inside "
        "the OS sandbox with the descriptor of its control socket; there is nothing to run by "
        "hand (`grpo docs agents` describes the sandbox).",
    )
    parser.add_argument("fd", type=int, help="the control socket's file descriptor")
    parser.parse_args(argv)
    parser.error("started by hand: the harness runs only inside the sandbox")


if __name__ == "__main__":
    check_arguments(sys.argv[1:])
    main()
