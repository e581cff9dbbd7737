"""The multi-GPU launcher: the commands it plans for the multi-GPU and multi-node tiers, and its
orchestration (a stand-in server and trainer replace vLLM and accelerate, so this runs on a
CPU)."""

import sys
from pathlib import Path

import pytest
from conftest import CPU_RECIPE, load, make_project
from grpo_kit.commands import launch
from grpo_kit.errors import UserError
from grpo_kit.recipe import SMOKE_DISTRIBUTED_OUTPUT_DIR

# The two launched tiers as the template writes them ([tool.grpo.tier]) and their recipes: one
# node of 8 GPUs, 2 of them serving vLLM to 6 DDP processes; 2 nodes of 8 GPUs, 16 ZeRO-3
# processes each with a colocated vLLM engine.
TIERS = {
    "multi-gpu": """\
name = "multi-gpu"
memory_gib = 79.1
gpus_per_node = 8
nodes = 1
processes = 6
distributed = "ddp"
accelerate_config = "configs/accelerate/ddp.yaml"
vllm_server_gpus = 2
estimated_peak_gib = 41.0""",
    "multi-node": """\
name = "multi-node"
memory_gib = 79.1
gpus_per_node = 8
nodes = 2
processes = 16
distributed = "zero3"
accelerate_config = "configs/accelerate/zero3.yaml"
vllm_server_gpus = 0
estimated_peak_gib = 52.0""",
}
RECIPES = {
    "multi-gpu": "use_vllm: true\nvllm_mode: server\n",
    "multi-node": "use_vllm: true\nvllm_mode: colocate\n",
}
# Minimal accelerate configs, as the template ships them in configs/accelerate/.
ACCELERATE = {
    "ddp.yaml": """\
compute_environment: LOCAL_MACHINE
distributed_type: MULTI_GPU
gpu_ids: all
machine_rank: 0
main_training_function: main
mixed_precision: bf16
num_machines: 1
num_processes: 2
rdzv_backend: static
same_network: true
use_cpu: false
""",
    "zero3.yaml": """\
compute_environment: LOCAL_MACHINE
deepspeed_config:
  deepspeed_multinode_launcher: standard
  offload_optimizer_device: none
  offload_param_device: none
  zero3_init_flag: true
  zero3_save_16bit_model: true
  zero_stage: 3
distributed_type: DEEPSPEED
machine_rank: 0
main_training_function: main
mixed_precision: bf16
num_machines: 1
num_processes: 2
rdzv_backend: static
same_network: true
use_cpu: false
""",
}


def launched_project(root: Path, tier: str, recipe: str = "") -> Path:
    """A math project on a launched tier, with its accelerate configs (`recipe`: more keys)."""
    root = make_project(root, tier=TIERS[tier], recipe=CPU_RECIPE + RECIPES[tier] + recipe)
    (root / "configs" / "accelerate").mkdir()
    for name, text in ACCELERATE.items():
        (root / "configs" / "accelerate" / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def tier_projects(tmp_path_factory):
    """{tier: project root} of a math project on each launched tier."""
    return {tier: launched_project(tmp_path_factory.mktemp(tier), tier) for tier in TIERS}


@pytest.fixture(params=list(TIERS))
def tier_project(request, tier_projects, monkeypatch):
    """The project of one launched tier, run from its folder."""
    root = tier_projects[request.param]
    monkeypatch.chdir(root)
    return load(root)


def plan(project, env=None):
    return launch.plan(
        project, ["--max_steps", "5"], env or {"MASTER_ADDR": "10.0.0.1", "SLURM_NODEID": "1"}
    )


def test_plan_matches_the_tier(tier_project):
    tier = tier_project.tier
    steps = plan(tier_project)
    train = steps[-1]
    assert train.command[-2:] == ["--max_steps", "5"]
    config = train.command[train.command.index("--config_file") + 1]
    assert config == tier.accelerate_config
    from accelerate.commands.config.config_args import load_config_from_file

    assert load_config_from_file(config).num_processes is not None  # accelerate's own loader
    processes = train.command[train.command.index("--num_processes") + 1]
    assert int(processes) == tier.processes
    if tier.nodes > 1:
        assert len(steps) == 1
        assert train.command[train.command.index("--machine_rank") + 1] == "1"
        assert train.command[train.command.index("--main_process_ip") + 1] == "10.0.0.1"
    else:
        server = steps[0]
        assert server.background and server.environment()["VLLM_SERVER_DEV_MODE"] == "1"
        visible_train = train.environment()["CUDA_VISIBLE_DEVICES"].split(",")
        visible_server = server.environment()["CUDA_VISIBLE_DEVICES"].split(",")
        assert len(visible_server) == tier.vllm_server_gpus
        assert not set(visible_train) & set(visible_server)
        assert len(visible_train) + len(visible_server) == tier.gpus_per_node
        assert "serve" in server.command


def test_overrides_reach_the_vllm_server_as_well_as_the_trainer(tier_projects, monkeypatch):
    """The server is built from the same resolved recipe as the trainer: a longer completion
    lengthens the server's context, another port moves the server."""
    monkeypatch.chdir(tier_projects["multi-gpu"])
    project = load(tier_projects["multi-gpu"])
    assert project.tier.nodes == 1 and project.tier.vllm_server_gpus
    steps = launch.plan(
        project, ["--max_completion_length", "4096", "--vllm_server_port", "8123"], {}
    )
    server = steps[0].command
    recipe = launch.launch_recipe(project, [])
    assert int(server[server.index("--max-model-len") + 1]) == (
        recipe.script.max_prompt_tokens + 4096
    )
    assert server[server.index("--port") + 1] == "8123"


def test_multi_node_needs_the_main_address(tier_projects, monkeypatch):
    monkeypatch.chdir(tier_projects["multi-node"])
    project = load(tier_projects["multi-node"])
    assert project.tier.nodes > 1
    with pytest.raises(UserError, match="MASTER_ADDR"):
        launch.plan(project, [], {})


def test_dry_run_prints_the_commands(tier_project, capsys, monkeypatch):
    monkeypatch.setenv("MASTER_ADDR", "10.0.0.1")
    assert launch.main(["--dry-run"]) == 0
    assert "accelerate.commands.launch" in capsys.readouterr().out


def fake_server(directory):
    """A stand-in for the vLLM server: serves a `health` file on a free port."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (directory / "health").write_text("ok")
    command = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
               "--directory", str(directory)]  # fmt: skip
    return command, f"http://127.0.0.1:{port}/health"


def test_execute_waits_for_the_server_then_trains_then_stops_it(tmp_path):
    command, url = fake_server(tmp_path)
    marker = tmp_path / "trained"
    steps = [
        launch.Step("vllm-server", command, background=True),
        launch.Step("train", [sys.executable, "-c", f"open({str(marker)!r}, 'w').write('x')"]),
    ]
    assert launch.execute(steps, url, timeout=30) == 0
    assert marker.exists()


def test_a_server_that_dies_is_reported(tmp_path):
    steps = [
        launch.Step("vllm-server", [sys.executable, "-c", "raise SystemExit(3)"], background=True)
    ]
    with pytest.raises(UserError, match="exited with code 3"):
        launch.execute(steps, "http://127.0.0.1:9/health", timeout=30)


def test_a_failing_training_step_returns_its_code():
    assert (
        launch.execute([launch.Step("train", [sys.executable, "-c", "raise SystemExit(4)"])], "", 1)
        == 4
    )


def test_a_port_already_in_use_is_refused_before_anything_starts(tmp_path):
    import subprocess

    command, url = fake_server(tmp_path)
    stale = subprocess.Popen(command)
    try:
        launch.wait_healthy(url, 30, stale)
        marker = tmp_path / "started"
        steps = [
            launch.Step("vllm-server", [sys.executable, "-c", f"open({str(marker)!r}, 'w')"],
                        background=True),
        ]  # fmt: skip
        with pytest.raises(UserError, match="already in use"):
            launch.execute(steps, url, timeout=30)
        assert not marker.exists()
    finally:
        stale.terminate()
        stale.wait()


LAUNCHER = """
import json, sys
from grpo_kit.commands import launch
server, url, trainer = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
steps = [
    launch.Step("vllm-server", server, background=True),
    launch.Step("train", [sys.executable, "-c", trainer]),
]
sys.exit(launch.execute(steps, url, timeout=30, grace=10))
"""

TRAINER = """
import os, signal, sys, time
def stop(signum, frame):
    open(sys.argv[1] if len(sys.argv) > 1 else {marker!r}, "w").write(str(signum))
    sys.exit(143)
signal.signal(signal.SIGTERM, stop)
open({ready!r}, "w").write(str(os.getpid()))
time.sleep(120)
"""


def test_sigterm_reaches_the_trainer_then_stops_the_server(tmp_path):
    """The launcher owns its children: a SIGTERM to it lets training checkpoint (the trainer
    sees SIGTERM) and then stops the server; nothing is left running."""
    import json
    import os
    import signal
    import subprocess
    import time

    command, url = fake_server(tmp_path)
    marker, ready = tmp_path / "trainer-stopped", tmp_path / "trainer-ready"
    trainer = TRAINER.format(marker=str(marker), ready=str(ready))
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, json.dumps(command), url, trainer],
        env={**os.environ}, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ready.exists(), "the trainer never started"
    launcher.send_signal(signal.SIGTERM)
    assert launcher.wait(timeout=60) == 128 + signal.SIGTERM
    assert marker.read_text() == str(int(signal.SIGTERM))  # the trainer got the signal
    with pytest.raises(OSError):  # and the server is gone
        import urllib.request

        urllib.request.urlopen(url, timeout=2)


# torchrun's shape: the launcher's child (the agent) starts each worker in a session of its own.
AGENT = """
import subprocess, sys
worker = subprocess.Popen([sys.executable, "-c", sys.argv[1]], start_new_session=True)
sys.exit(worker.wait())
"""

WORKER = """
import json, os, signal, sys, time
def stop(signum, frame):
    open({got!r}, "w").write(str(signum))
    json.dump({{"status": {status!r}}}, open({record!r}, "w"))
    sys.exit(0)  # as the workers of a distributed run do after SIGUSR1
signal.signal(signal.SIGUSR1, stop)
open({ready!r}, "w").write(str(os.getppid()))
time.sleep(120)
"""

REQUEUE_LAUNCHER = """
import sys
from pathlib import Path
from grpo_kit.commands import launch
agent, worker, record = sys.argv[1:]
steps = [launch.Step("train", [sys.executable, "-c", agent, worker])]
sys.exit(launch.execute(steps, "", timeout=30, grace=10, run_record=Path(record)))
"""


def test_the_early_warning_reaches_the_workers_and_asks_for_a_requeue(tmp_path):
    """SIGUSR1 (SLURM's early warning) sent to every process, as a scheduler does: the agent
    in between survives it (it starts with SIGUSR1 ignored), the launcher passes it on to the
    worker in its own session, and once the run record confirms the stop it exits with the
    requeue code."""
    import os
    import signal
    import subprocess
    import time

    from grpo_kit.callbacks.stopping import REQUEUE_EXIT_CODE, REQUEUE_STATUS

    got, ready, record = tmp_path / "worker-got", tmp_path / "ready", tmp_path / "run_record.json"
    worker = WORKER.format(got=str(got), ready=str(ready), record=str(record),
                           status=REQUEUE_STATUS)  # fmt: skip
    launcher = subprocess.Popen(
        [sys.executable, "-c", REQUEUE_LAUNCHER, AGENT, worker, str(record)],
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ready.exists(), "the worker never started"
    time.sleep(0.2)
    os.kill(int(ready.read_text()), signal.SIGUSR1)  # the agent: it must not die of it
    launcher.send_signal(signal.SIGUSR1)
    assert launcher.wait(timeout=60) == REQUEUE_EXIT_CODE
    assert got.read_text() == str(int(signal.SIGUSR1))


def test_a_requeue_needs_the_stop_confirmed(tmp_path):
    from grpo_kit.callbacks.stopping import REQUEUE_EXIT_CODE, REQUEUE_STATUS

    record = tmp_path / "run_record.json"
    assert launch.requeue_confirmed(REQUEUE_EXIT_CODE, None)  # a single process says so itself
    assert not launch.requeue_confirmed(0, record)  # no record
    record.write_text('{"status": "finished"}')
    assert not launch.requeue_confirmed(0, record)  # the run ended before the warning
    record.write_text(f'{{"status": "{REQUEUE_STATUS}"}}')
    assert launch.requeue_confirmed(0, record)
    assert not launch.requeue_confirmed(1, record)  # a crash is not a requeue
    record.write_text("{not json")
    assert not launch.requeue_confirmed(0, record)


def test_torchrun_gives_the_workers_the_launchers_grace(tmp_path, monkeypatch):
    """torchrun kills its workers 30 s after forwarding SIGTERM unless told otherwise: too short
    to save a large model. The launcher passes its own grace (a value you set wins)."""
    seen = tmp_path / "seen"
    step = launch.Step(
        "train",
        [
            sys.executable,
            "-c",
            "import os, sys; open(sys.argv[1], 'w')"
            ".write(os.environ['TORCH_ELASTIC_SHUTDOWN_TIMEOUT'])",
            str(seen),
        ],
    )
    monkeypatch.delenv("TORCH_ELASTIC_SHUTDOWN_TIMEOUT", raising=False)
    assert launch.execute([step], "", timeout=1, grace=123) == 0
    assert seen.read_text() == "123"
    monkeypatch.setenv("TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "900")
    assert launch.execute([step], "", timeout=1, grace=123) == 0
    assert seen.read_text() == "900"


def test_smoke_distributed_uses_the_plans_accelerate_config(tier_project, tiny_model_dir):
    """`make smoke-distributed` starts 2 CPU processes through `accelerate launch` with this
    plan's accelerate config (DDP's where the plan's DeepSpeed needs CUDA), as a GPU run
    starts."""
    tier = tier_project.tier
    steps = launch.smoke_plan(tier_project, ["--model_name_or_path", str(tiny_model_dir)])
    command = steps[0].command
    config = command[command.index("--config_file") + 1]
    expected = tier.accelerate_config
    if tier.distributed not in launch.CPU_STRATEGIES:
        expected = expected.rsplit("/", 1)[0] + "/ddp.yaml"
    assert config == expected and "accelerate.commands.launch" in command
    assert Path(config).is_file()
    assert command[command.index("--num_processes") + 1] == str(launch.SMOKE_PROCESSES)
    # issue 27: the recipe's checkpointing and DDP settings, not --smoke's (which turns
    # checkpointing off); the overrides last
    assert "--smoke-distributed" in command and "--smoke" not in command
    assert command[-2:] == ["--model_name_or_path", str(tiny_model_dir)]


def test_the_distributed_smoke_run_trains_with_the_recipes_checkpointing(tmp_path, monkeypatch):
    """What the launched processes parse: the recipe's activation checkpointing and DDP
    setting, the tiny model on the CPU, in outputs/smoke-distributed (no vLLM server)."""
    keys = "activation_checkpointing: true\nddp_find_unused_parameters: true\n"
    root = launched_project(tmp_path / "multi-gpu", "multi-gpu", keys)
    monkeypatch.chdir(root)
    project = load(root)
    (step,) = launch.smoke_plan(project, [])
    assert step.name == "train" and not step.background
    config = step.command.index("--config")
    assert step.command[config : config + 2] == ["--config", "configs/grpo.yaml"]
    parsed = launch.launch_recipe(project, step.command[config + 2 :])
    training = parsed.training
    assert training.activation_checkpointing and training.ddp_find_unused_parameters
    assert training.output_dir == str(SMOKE_DISTRIBUTED_OUTPUT_DIR) == "outputs/smoke-distributed"
    assert parsed.script.smoke and not training.use_vllm and training.use_cpu


def test_a_tier_without_a_launcher_runs_the_distributed_smoke_through_torchrun(
    tmp_path, monkeypatch
):
    """One GPU or the CPU: no accelerate config; `make smoke-distributed` still starts 2
    processes (torchrun, gloo) of the project's train script."""
    root = make_project(tmp_path / "single", recipe=CPU_RECIPE)
    monkeypatch.chdir(root)
    project = load(root)
    assert not project.tier.accelerate_config
    (step,) = launch.smoke_plan(project, ["--max_steps", "3"])
    command = step.command
    assert command[1:4] == ["-m", "torch.distributed.run", "--standalone"]
    assert command[command.index("--nproc_per_node") + 1] == str(launch.SMOKE_PROCESSES)
    start = command.index("--nproc_per_node") + 2
    assert command[start : start + 3] == ["-m", "grpo_kit", "train"]  # the kit's training flow
    assert command[-5:] == ["--config", "configs/grpo.yaml", "--smoke-distributed",
                            "--max_steps", "3"]  # fmt: skip
    assert step.environment() == {"OMP_NUM_THREADS": "1"}


def test_the_launcher_builds_the_tiny_model_before_the_processes_start(
    tier_projects, monkeypatch, capsys
):
    """Both processes would build outputs/tiny-model on first use, and one could read the
    other's half-written folder: the launcher builds it once, first (not for --dry-run)."""
    from grpo_kit import training

    monkeypatch.chdir(tier_projects["multi-gpu"])
    events = []
    monkeypatch.setattr(training, "ensure_offline_model", lambda r: events.append(("build", r)))
    monkeypatch.setattr(
        launch, "execute", lambda steps, *a, **k: events.append(("execute", steps)) or 0
    )
    assert launch.main(["--smoke", "--dry-run"]) == 0
    assert events == []
    assert launch.main(["--smoke"]) == 0
    assert [kind for kind, _ in events] == ["build", "execute"]
    built = events[0][1]
    assert built.script.smoke and built.model.model_name_or_path == "outputs/tiny-model"
    assert "--smoke-distributed" in events[1][1][0].command


@pytest.mark.slow
@pytest.mark.distributed
def test_smoke_distributed_trains_in_two_processes(
    tier_projects, tiny_model_dir, tmp_path, capfd, monkeypatch
):
    """The launch itself, on the multi-node tier's plan (ZeRO-3: DDP's config on the CPU): 2
    processes train, the model is saved."""
    monkeypatch.chdir(tier_projects["multi-node"])
    output = tmp_path / "run"
    code = launch.launch(["--smoke", "--", "--model_name_or_path", str(tiny_model_dir),
                          "--output_dir", str(output)])  # fmt: skip
    assert code == 0
    saved = {p.name for p in output.iterdir()}
    assert "adapter_model.safetensors" in saved or "model.safetensors" in saved
    assert "training processes: 2" in capfd.readouterr().err


WARN_LAUNCHER_AT_STEP = "GRPO_TEST_SIGUSR1_LAUNCHER_AT_STEP"  # "<step>:<launcher pid>"


def usr1_to_the_launcher(completions, trainer_state=None, **kwargs):
    """A reward that, on rank 0 at the given step, sends the launcher SIGUSR1 (as SLURM's early
    warning reaches it), and otherwise scores nothing in particular."""
    import os
    import signal

    step, _, pid = os.environ.get(WARN_LAUNCHER_AT_STEP, "-1:").partition(":")
    if trainer_state is not None and trainer_state.global_step == int(step):
        os.environ.pop(WARN_LAUNCHER_AT_STEP)
        if os.environ.get("RANK", "0") == "0":
            os.kill(int(pid), signal.SIGUSR1)
    return [float(len(c[0]["content"]) % 3) for c in completions]


@pytest.mark.slow
@pytest.mark.distributed
def test_the_early_warning_stops_a_distributed_run_for_a_requeue(
    tier_projects, tiny_model_dir, tmp_path, monkeypatch
):
    """The launch path of a multi-GPU plan (accelerate, torchrun's agent, 2 workers in sessions
    of their own) on the CPU: SIGUSR1 to the launcher stops both workers after the same step with
    a checkpoint, and the launcher exits with the requeue code."""
    import json
    import os

    from grpo_kit.callbacks.stopping import REQUEUE_EXIT_CODE, REQUEUE_STATUS

    monkeypatch.chdir(tier_projects["multi-node"])
    tests = str(Path(__file__).resolve().parent)
    path = os.pathsep.join(p for p in (tests, os.environ.get("PYTHONPATH")) if p)
    monkeypatch.setenv("PYTHONPATH", path)
    monkeypatch.setenv(WARN_LAUNCHER_AT_STEP, f"1:{os.getpid()}")
    output = tmp_path / "run"
    code = launch.launch(["--smoke", "--", "--model_name_or_path", str(tiny_model_dir),
                          "--output_dir", str(output), "--max_steps", "8",
                          "--reward_funcs", "test_launch.usr1_to_the_launcher",
                          "--reward_weights", "1.0"])  # fmt: skip
    assert code == REQUEUE_EXIT_CODE
    # The warning reaches the workers during step 2, or just after it on a loaded machine (the
    # launcher forwards it; a step takes well under a second here): they stop together after
    # that step, long before the run's last (8).
    record = json.loads((output / "run_record.json").read_text())
    step = record["global_step"]
    assert record["status"] == REQUEUE_STATUS and 2 <= step < 8, record
    assert [c.name for c in output.glob("checkpoint-*")] == [f"checkpoint-{step}"]


def test_a_failed_distributed_process_exits_without_the_teardown(monkeypatch, capsys):
    """A process of a distributed run whose step raised (DDP's "Expected to have finished
    reduction", say) prints the traceback and ends through `exit_now`, while the error still holds
    the trainer: letting the error unwind freed the DDP reducer, whose gloo teardown hung the
    process for the collective timeout (the other rank's `make smoke-distributed` hang)."""
    from grpo_kit import training

    def failing_step(build_trainer, argv):
        raise RuntimeError("Expected to have finished reduction in the prior iteration")

    exits = []

    def exit_now(code):
        exits.append((code, sys.exc_info()[0]))  # still inside the handler: frames alive
        raise SystemExit(code)

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setattr(training, "run", failing_step)
    monkeypatch.setattr(training, "exit_now", exit_now)
    with pytest.raises(SystemExit):
        training.main(None, ["--config", "configs/grpo.yaml"])
    assert exits == [(1, RuntimeError)]
    assert "Expected to have finished reduction" in capsys.readouterr().err
