"""The multi-GPU launcher: the commands it plans for the multi-GPU and multi-node tiers, and its
orchestration (a stand-in server and trainer replace vLLM and accelerate, so this runs on a
CPU)."""

import sys
from pathlib import Path

import pytest
from conftest import CPU_RECIPE, load, make_project
from grpo_kit.commands import launch
from grpo_kit.errors import UserError

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


@pytest.fixture(scope="module")
def tier_projects(tmp_path_factory):
    """{tier: project root} of a math project on each launched tier."""
    roots = {}
    for tier, body in TIERS.items():
        root = make_project(
            tmp_path_factory.mktemp(tier), tier=body, recipe=CPU_RECIPE + RECIPES[tier]
        )
        (root / "configs" / "accelerate").mkdir()
        for name, text in ACCELERATE.items():
            (root / "configs" / "accelerate" / name).write_text(text, encoding="utf-8")
        roots[tier] = root
    return roots


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
