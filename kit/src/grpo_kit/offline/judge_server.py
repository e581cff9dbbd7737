"""A judge model served locally, offline: `transformers serve` (transformers' own OpenAI-compatible
server) on a model folder, for tests, smoke runs and trying a rubric on a laptop.

`LocalJudgeServer(folder)` starts `transformers serve FOLDER` on a free port of 127.0.0.1 (the
model pinned: every request is answered by it, whatever model name it gives), waits until
`/health` answers and the model answers a first chat request, and stops the server (SIGTERM, then
SIGKILL) when the `with` block ends. The judge then points at `server.base_url` with the model
name `server.model`. The server needs `pip install "grpo-kit[judge]"` (FastAPI, uvicorn:
`transformers[serving]`); where they are missing, or the server does not come up,
`JudgeServerUnavailable` says why.

On a CPU the server runs its model on `threads` threads (default 1): beside training or test
workers, a second thread per process made every request several times slower (measured on 2
cores: 16 tokens of SmolLM2-135M in about 1.5 s on one thread, 10 to 40 s on two under load).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import UserError
from ..rewards.judge import ENDPOINT_SETTINGS, is_judge

__all__ = [
    "EXTRA",
    "JudgeServerUnavailable",
    "LocalJudgeServer",
    "free_port",
    "ensure_tiny_judge",
    "local_judge_overrides",
    "local_judge_rewards",
    "serve_task_judges",
    "serving_available",
]

EXTRA = "judge"  # grpo-kit's extra with what `transformers serve` needs (kit pyproject.toml)
# The judge an offline run serves: a tiny random text-only chat model (its own: the policy's
# tiny model may be a vision-language one, which `transformers serve` loads with an image
# processor it does not have), built once per project in TINY_JUDGE_DIR.
TINY_JUDGE_DIR = Path("outputs/tiny-judge")
TINY_JUDGE_ARCH, TINY_JUDGE_TEMPLATE = "qwen2", "qwen2_5"
START_TIMEOUT_S = 180.0  # loading the model and answering a first request, on a busy CPU
STOP_TIMEOUT_S = 10.0  # uvicorn finishes the requests in flight before it exits


class JudgeServerUnavailable(UserError):
    """The local judge server cannot run here (the message says why and what to do)."""


def serving_available() -> str | None:
    """None when `transformers serve` can run here, else why not."""
    try:
        from transformers.utils.import_utils import is_serve_available
    except ImportError as err:  # pragma: no cover - transformers is a dependency
        return f"transformers cannot be imported: {err}"
    if not is_serve_available():
        return (
            "`transformers serve` needs FastAPI and uvicorn, which are not installed: "
            f'pip install "grpo-kit[{EXTRA}]"'
        )
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LocalJudgeServer:
    """`transformers serve` on `model_dir`, on 127.0.0.1, for the length of a `with` block."""

    def __init__(
        self,
        model_dir: Path | str,
        port: int | None = None,
        threads: int = 1,
        start_timeout_s: float = START_TIMEOUT_S,
    ) -> None:
        self.model_dir = Path(model_dir)
        self.port = port or free_port()
        self.threads = threads
        self.start_timeout_s = start_timeout_s
        self.model = str(self.model_dir)  # the id the server lists its pinned model under
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.process: subprocess.Popen | None = None
        self._log = None

    def command(self) -> list[str]:
        # transformers' own CLI, in this interpreter (whatever `transformers` is first on PATH)
        launcher = [sys.executable, "-c", "from transformers.cli.transformers import main; main()"]
        return launcher + [
            "serve", str(self.model_dir), "--host", "127.0.0.1", "--port", str(self.port),
            "--device", "cpu", "--dtype", "float32", "--log-level", "warning",
        ]  # fmt: skip

    def start(self) -> LocalJudgeServer:
        why = serving_available()
        if why:
            raise JudgeServerUnavailable(why)
        if not (self.model_dir / "config.json").is_file():
            raise JudgeServerUnavailable(f"{self.model_dir} is not a model folder (no config.json)")
        environ = dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS=str(self.threads))
        environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 (closed by stop())
        self.process = subprocess.Popen(
            self.command(),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=environ,
            start_new_session=True,  # its own process group: stopped whole, never signalled by ours
        )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise JudgeServerUnavailable(
                    f"`transformers serve` exited with {self.process.returncode}: {self.log_tail()}"
                )
            try:
                self.chat("Say OK.", max_tokens=2, timeout=deadline - time.monotonic())
                return
            except (OSError, urllib.error.URLError, ValueError, KeyError, IndexError, TypeError):
                time.sleep(0.5)
        raise JudgeServerUnavailable(
            f"`transformers serve` did not answer within {self.start_timeout_s:g} s: "
            f"{self.log_tail()}"
        )

    def chat(self, text: str, max_tokens: int = 16, timeout: float = 60.0) -> str:
        """One user message, the server's reply (for the start check and quick tries)."""
        body = {
            "model": self.model,
            "messages": [{"role": "user", "content": text}],
            "max_tokens": max_tokens,
            "temperature": 0.0,
        }
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions",
            data=json.dumps(body).encode("utf-8"),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=max(timeout, 0.1)) as answer:
            return json.loads(answer.read())["choices"][0]["message"]["content"]

    def log_tail(self, lines: int = 15) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        text = self._log.read().decode("utf-8", errors="replace").strip().splitlines()
        return "\n".join(text[-lines:]) or "(no output)"

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            except ProcessLookupError:
                pass
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> LocalJudgeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def local_judge_rewards(task) -> list[str]:
    """The task's judge rewards that read their server from the recipe (`ENDPOINT_SETTINGS`:
    `judge_base_url` and `judge_model` among their settings), which an offline run points at a
    local server."""
    return [
        r.name
        for r in task.rewards
        if is_judge(r.func) and set(ENDPOINT_SETTINGS[:2]) <= set(getattr(r.func, "settings", ()))
    ]


def local_judge_overrides(task, server: LocalJudgeServer) -> list[str]:
    """The recipe overrides pointing the task's judge rewards at `server` (no API key)."""
    taken = {name for r in task.rewards for name in getattr(r.func, "settings", ())}
    base_url, model, key_env = ENDPOINT_SETTINGS
    overrides = [f"--{base_url}", server.base_url, f"--{model}", server.model]
    return overrides + ([f"--{key_env}", ""] if key_env in taken else [])


def ensure_tiny_judge(project) -> Path:
    """The project's tiny offline judge (TINY_JUDGE_DIR under its root), built on first use
    (a few seconds; under a lock, into a private folder renamed into place, as the tiny model
    is), its tokenizer trained on the task's sample."""
    import shutil

    from filelock import FileLock

    from .tiny_model import build_tiny_model

    folder = project.root / TINY_JUDGE_DIR
    if (folder / "config.json").is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder) + ".lock"):
        if not (folder / "config.json").is_file():
            building = folder.with_name(f"{folder.name}.building-{os.getpid()}")
            shutil.rmtree(building, ignore_errors=True)
            sample = project.root / project.task.data.sample
            build_tiny_model(building, TINY_JUDGE_ARCH, TINY_JUDGE_TEMPLATE, sample)
            building.rename(folder)
    return folder


@contextmanager
def serve_task_judges(
    project, model_dir: Path | str | None = None, threads: int = 1
) -> Iterator[list[str]]:
    """For the length of the block, a `LocalJudgeServer` on `model_dir` (default: the
    project's tiny offline judge, `ensure_tiny_judge`) when the project's task has judge
    rewards reading their server from the recipe; yields the recipe overrides that point them
    at it (`--judge_base_url ... --judge_model ...`), or [] (and starts and builds nothing) for
    other tasks. A server that cannot start raises `JudgeServerUnavailable` (an offline run of
    a judge task needs it: `pip install "grpo-kit[judge]"`)."""
    task = project.task
    names = local_judge_rewards(task)
    if not names:
        yield []
        return
    model_dir = model_dir if model_dir is not None else ensure_tiny_judge(project)
    with LocalJudgeServer(model_dir, threads=threads) as server:
        print(
            f"judge: {', '.join(names)} graded by a local `transformers serve` on {model_dir} "
            f"({server.base_url})",
            flush=True,
        )
        yield local_judge_overrides(task, server)
