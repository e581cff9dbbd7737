"""`grpo launch`: training across the GPUs of this project's tier (`make train` runs this on the
multi-GPU and multi-node tiers).

* multi-GPU node: starts vLLM's server (through TRL's `vllm serve` command line) on the last
  GPU(s), waits until its `/health` endpoint answers, then runs `accelerate launch` with the
  DeepSpeed/DDP config on the remaining GPUs; the server is stopped when training ends.
* multi-node: run once per node (`scripts/multinode.sbatch` does it through SLURM): every GPU
  trains with its own colocated vLLM engine, and `accelerate launch` joins the nodes using
  SLURM's (or your) MASTER_ADDR / node rank.

`--dry-run` prints the commands instead of running them; arguments after `--` are recipe
overrides, applied to the training command and to the server alike (both are built from the same
resolved recipe). The launcher owns its children: SIGINT/SIGTERM reach the trainer (which saves a
checkpoint and stops) and then stop the server; a port already in use is refused before anything
starts (a stale server would answer `/health` for a model it does not serve).

SIGUSR1 (a scheduler's early warning before its time limit, see scripts/multinode.sbatch) goes on
to every process below the launcher (torchrun starts each worker in a session of its own, out of
reach of a process group). Every child starts with SIGUSR1 ignored until a trainer installs its
handler, so neither this nor a scheduler that signals every process of the job kills torchrun's
agent (or a process the trainer started before training). The trainers save a checkpoint and
stop; the launcher then exits with REQUEUE_EXIT_CODE (75) once the run
record confirms the stop, and the SLURM script requeues the job, which resumes from that
checkpoint. torchrun gives its workers `grace` seconds to stop after SIGINT/SIGTERM (its own
default is 30 s, too short to save a large model) through TORCH_ELASTIC_SHUTDOWN_TIMEOUT.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..callbacks.run_record import RECORD
from ..callbacks.stopping import REQUEUE_EXIT_CODE, REQUEUE_SIGNAL, REQUEUE_STATUS
from ..errors import UserError
from ..project import Project
from ..project import load as load_project
from ..recipe import DEFAULT_RECIPE, Recipe, parse_recipe
from ..runner import run

logger = logging.getLogger(__name__)


# What every training process runs (`python -m grpo_kit train`): the kit's training flow, which
# builds the trainer with the project's declared train script when it has one (`grpo eject`).
TRAIN_PROGRAM = ("grpo_kit", "train")


@dataclass
class Step:
    """One command of the launch, with the GPUs it may see."""

    name: str
    command: list[str]
    gpus: str | None = None  # CUDA_VISIBLE_DEVICES
    background: bool = False
    env: dict[str, str] = field(default_factory=dict)

    def render(self) -> str:
        prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.environment().items())
        return (prefix + " " if prefix else "") + shlex.join(self.command)

    def environment(self) -> dict[str, str]:
        env = dict(self.env)
        if self.gpus is not None:
            env["CUDA_VISIBLE_DEVICES"] = self.gpus
        return env


def server_command(recipe: Recipe, port: int) -> list[str]:
    """vLLM's server command line exactly as TRL builds it (`trl vllm-serve`), from the same
    resolved recipe as the trainer's (overrides included)."""
    from trl.scripts.vllm_serve import ScriptArguments, build_command

    length = recipe.script.max_prompt_tokens + recipe.training.max_completion_length
    arguments = ScriptArguments(
        model=recipe.model.model_name_or_path,
        tensor_parallel_size=recipe.project.tier.vllm_server_gpus,
        host="127.0.0.1",
        port=port,
        gpu_memory_utilization=0.9,
        max_model_len=length,
    )
    return build_command(arguments)


def accelerate_command(
    project: Project,
    processes: int,
    machines: int,
    extra: list[str],
    rank: str = "0",
    main_ip: str | None = None,
    config: str | None = None,
    cpu: bool = False,
) -> list[str]:
    config = config or project.tier.accelerate_config
    command = [
        sys.executable, "-m", "accelerate.commands.launch",
        "--config_file", str(config),
        "--num_processes", str(processes),
        "--num_machines", str(machines),
    ]  # fmt: skip
    if cpu:  # full precision; the smoke recipe's use_cpu keeps the processes on the CPU (gloo)
        command += ["--mixed_precision", "no"]
    if machines > 1:
        command += ["--machine_rank", rank, "--main_process_ip", main_ip or "127.0.0.1",
                    "--main_process_port", os.environ.get("MASTER_PORT", "29500")]  # fmt: skip
    return [*command, "-m", *TRAIN_PROGRAM, "--config", str(DEFAULT_RECIPE), *extra]


# `make smoke-distributed`: the launch path of this tier on the CPU.
SMOKE_PROCESSES = 2
CPU_STRATEGIES = ("ddp", "fsdp2")  # DeepSpeed (zero2/zero3) needs CUDA


def smoke_arguments(extra: list[str]) -> list[str]:
    """The distributed smoke run's recipe arguments: the smoke layer that keeps the recipe's
    checkpointing and DDP settings (`--smoke-distributed`), the overrides last, so they win."""
    return ["--smoke-distributed", *extra]


def smoke_plan(project: Project, extra: list[str]) -> list[Step]:
    """Train `--smoke-distributed` in 2 CPU processes as this tier starts training: through
    `accelerate launch` with the plan's own accelerate config (a DeepSpeed plan uses the DDP
    config beside it, since DeepSpeed needs CUDA: the launch path is the same, the sharding is
    not); a tier without an accelerate config (one GPU, or the CPU) through torchrun, gloo."""
    tier = project.tier
    env = {"OMP_NUM_THREADS": "1"}
    if not tier.accelerate_config:
        command = [
            sys.executable, "-m", "torch.distributed.run", "--standalone",
            "--nproc_per_node", str(SMOKE_PROCESSES),
            "-m", *TRAIN_PROGRAM, "--config", str(DEFAULT_RECIPE), *smoke_arguments(extra),
        ]  # fmt: skip
        return [Step("train", command, env=env)]
    config = Path(tier.accelerate_config)
    if tier.distributed not in CPU_STRATEGIES:
        config = config.with_name("ddp.yaml")
        logger.info("smoke: %s needs GPUs; the CPU smoke run uses %s", tier.distributed, config)
    command = accelerate_command(
        project, SMOKE_PROCESSES, 1, smoke_arguments(extra), config=str(config), cpu=True
    )
    return [Step("train", command, env=env)]


def plan(project: Project, extra: list[str], environ: dict[str, str]) -> list[Step]:
    """The commands for this tier (pure: no GPU needed, so --dry-run and tests use it)."""
    recipe = launch_recipe(project, extra)
    tier = project.tier
    gpus = tier.gpus_per_node
    if tier.nodes > 1:
        rank = environ.get("SLURM_NODEID", environ.get("NODE_RANK", "0"))
        main_ip = environ.get("MASTER_ADDR")
        if not main_ip:
            raise UserError(
                "multi-node launch needs MASTER_ADDR (scripts/multinode.sbatch sets it)"
            )
        command = accelerate_command(project, gpus * tier.nodes, tier.nodes, extra, rank, main_ip)
        return [Step("train", command)]
    if gpus <= 1:
        train = [sys.executable, "-m", *TRAIN_PROGRAM, "--config", str(DEFAULT_RECIPE), *extra]
        return [Step("train", train)]
    if not recipe.training.use_vllm or recipe.training.vllm_mode != "server":
        return [Step("train", accelerate_command(project, gpus, 1, extra))]
    port = recipe.training.vllm_server_port
    server_gpus = tier.vllm_server_gpus
    devices = [str(i) for i in range(gpus)]
    train, serve = devices[:-server_gpus], devices[-server_gpus:]
    return [
        Step("vllm-server", server_command(recipe, port), ",".join(serve), background=True,
             env={"VLLM_SERVER_DEV_MODE": "1"}),
        Step("train", accelerate_command(project, len(train), 1, extra), ",".join(train)),
    ]  # fmt: skip


def launch_recipe(project: Project, extra: list[str]) -> Recipe:
    """The recipe the trainer will run: configs/grpo.yaml (+ local.yaml) and the overrides."""
    argv = ["--config", str(DEFAULT_RECIPE), *extra]
    return parse_recipe(argv, read_only=True, project=project)


def wait_healthy(url: str, timeout: float, server: subprocess.Popen | None = None) -> None:
    """Poll `url` until it answers 200; fail early if the server process died."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    deadline = time.monotonic() + timeout
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn()) as bar:
        bar.add_task(f"waiting for the vLLM server at {url}", total=None)
        while time.monotonic() < deadline:
            if server is not None and server.poll() is not None:
                raise UserError(
                    f"the vLLM server exited with code {server.returncode}; see its log"
                )
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(1)
    raise UserError(f"the vLLM server did not answer {url} within {timeout:.0f} s")


class Stopped(Exception):  # noqa: N818 - a stop, not an error
    """The launcher received SIGINT, SIGTERM or SIGUSR1."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def check_port_free(url: str) -> None:
    """Refuse a server port something already listens on (a stale server, another job)."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    with socket.socket() as probe:
        probe.settimeout(1)
        if probe.connect_ex((parts.hostname or "127.0.0.1", parts.port or 80)) == 0:
            raise UserError(
                f"port {parts.port} is already in use (a vLLM server left from an earlier run?): "
                "stop that process, or choose another with -- --vllm_server_port N"
            )


def _stop(process: subprocess.Popen, signum: int, grace: float) -> None:
    """Send `signum` to the process's group, then SIGKILL after `grace` seconds."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signum)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (children, grandchildren, ...), from /proc (Linux); [] where
    there is no /proc."""
    children: dict[int, list[int]] = {}
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # exited meanwhile
        # "pid (command) state ppid ...": the command may hold spaces and parentheses
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found, queue = [], [pid]
    while queue:
        below = children.get(queue.pop(), [])
        found += below
        queue += below
    return found


def notify_tree(process: subprocess.Popen, signum: int) -> None:
    """Send `signum` to a step's process and everything below it (torchrun's workers run in
    sessions of their own, out of reach of the step's process group)."""
    for pid in [process.pid, *descendants(process.pid)]:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            continue


def requeue_confirmed(code: int, record: Path | None) -> bool:
    """Whether the training step stopped for a requeue after SIGUSR1: a single process says so
    with its exit code; the processes of a distributed run exit 0 (see callbacks/stopping.py)
    and rank 0's run record says so (every run rewrites it when it starts, so an old record
    cannot answer for this run)."""
    if code == REQUEUE_EXIT_CODE:
        return True
    if code != 0 or record is None:
        return False
    try:
        status = json.loads(record.read_text(encoding="utf-8")).get("status")
    except (OSError, ValueError, AttributeError):
        return False
    return status == REQUEUE_STATUS


HANDLED = (signal.SIGINT, signal.SIGTERM, REQUEUE_SIGNAL)


def _child_setup() -> None:
    """In a child, before it runs its program: the launcher's signals unblocked (they are blocked
    while the child starts, and a blocked mask survives exec) and SIGUSR1 ignored (that survives
    exec too) until a trainer installs its own handler (callbacks/stopping.py)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED)
    signal.signal(REQUEUE_SIGNAL, signal.SIG_IGN)


def _start(step: Step, env: dict[str, str], into: list[subprocess.Popen]) -> None:
    """Start a step in its own session and add it to `into`, with signals blocked meanwhile: a
    signal arriving now is handled once the process is known (and can be stopped)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)
    try:
        process = subprocess.Popen(
            step.command, env=env, start_new_session=True, preexec_fn=_child_setup
        )
        into.append(process)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED)


def execute(
    steps: list[Step],
    health_url: str,
    timeout: float,
    grace: float = 300.0,
    run_record: Path | None = None,
) -> int:
    """Run the steps: background ones first (waiting for health), then the rest in order.

    Every child runs in its own process group, owned here: on SIGINT/SIGTERM the running step
    gets the same signal (training saves a checkpoint and stops; after `grace` seconds it is
    killed), then the background steps are stopped; the exit code is 128 + the signal. On
    SIGUSR1 every process of the running step gets it (notify_tree) and the launcher waits for
    the step to end; REQUEUE_EXIT_CODE when `run_record` (or the step's exit code) confirms the
    stop, else the step's exit code. A signal that arrives while a stop is under way goes on to
    the running step (the trainer stops at once on a second SIGINT/SIGTERM)."""
    current: list[subprocess.Popen] = []  # the running foreground step, when there is one
    stopping: list[int] = []

    def on_signal(signum, frame):
        if stopping:
            if current and signum != REQUEUE_SIGNAL:
                os.killpg(current[0].pid, signum)
            return
        stopping.append(signum)
        raise Stopped(signum)

    previous = {s: signal.signal(s, on_signal) for s in HANDLED}
    background: list[subprocess.Popen] = []
    try:
        if any(step.background for step in steps):
            check_port_free(health_url)
        for step in steps:
            env = {**os.environ, **step.environment()}
            env.setdefault("TORCH_ELASTIC_SHUTDOWN_TIMEOUT", str(int(grace)))
            print(f"launch: {step.name}: {step.render()}", flush=True)
            if step.background:
                _start(step, env, background)
                wait_healthy(health_url, timeout, background[-1])
            else:
                _start(step, env, current)
                code = current[0].wait()
                current.clear()
                if code:
                    return code
        return 0
    except Stopped as stop:
        name = signal.Signals(stop.signum).name
        print(f"launch: {name}: stopping", file=sys.stderr, flush=True)
        if stop.signum != REQUEUE_SIGNAL:
            if current:
                _stop(current[0], stop.signum, grace)
            return 128 + stop.signum
        if not current:
            return REQUEUE_EXIT_CODE  # nothing trained yet: the requeued job starts over
        notify_tree(current[0], stop.signum)
        code = current[0].wait()
        if requeue_confirmed(code, run_record):
            print("launch: checkpoint saved; exit code for a requeue", file=sys.stderr, flush=True)
            return REQUEUE_EXIT_CODE
        return code
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        for process in background:
            _stop(process, signal.SIGTERM, 30)


def parse_args(argv: Sequence[str] | None):
    parser = argparse.ArgumentParser(
        prog="grpo launch",
        description="Launch training on this project's tier (see the module docstring).",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the commands only")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help=f"offline: {SMOKE_PROCESSES} CPU processes as this tier launches training (accelerate "
        "with the plan's config; torchrun without one), with the recipe's checkpointing and DDP "
        "settings on the tiny model (make smoke-distributed)",
    )
    parser.add_argument("extra", nargs="*", help="recipe overrides for train (after --)")
    return parser.parse_args(argv)


def launch(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    project = load_project()
    extra = list(args.extra)
    steps = smoke_plan(project, extra) if args.smoke else plan(project, extra, dict(os.environ))
    if args.dry_run:
        for step in steps:
            print(step.render())
        return 0
    recipe = launch_recipe(project, smoke_arguments(extra) if args.smoke else extra)
    if args.smoke:  # the tiny model, once, before the processes that would each build it
        from ..training import ensure_offline_model

        ensure_offline_model(recipe)
    training = recipe.training
    health = f"http://127.0.0.1:{training.vllm_server_port}/health"
    record = Path(training.output_dir) / RECORD
    return execute(steps, health, training.vllm_server_timeout, run_record=record)


def main(argv: Sequence[str] | None = None) -> int:
    code = {"value": 0}

    def body(arguments):
        code["value"] = launch(arguments)

    return run(body, argv) or code["value"]
