"""The multi-GPU launcher: the commands it plans for this tier, and its orchestration (a stand-in
server and trainer replace vLLM and accelerate, so this runs on a CPU)."""

import sys

import pytest

from {{ cookiecutter.package_name }} import project
from {{ cookiecutter.package_name }}.errors import UserError
from {{ cookiecutter.package_name }}.training import launch


def plan(env=None):
    return launch.plan(
        ["--max_steps", "5"], env or {"MASTER_ADDR": "10.0.0.1", "SLURM_NODEID": "1"}
    )


def test_plan_matches_the_tier():
    steps = plan()
    train = steps[-1]
    assert train.command[-2:] == ["--max_steps", "5"]
    config = train.command[train.command.index("--config_file") + 1]
    assert config == project.ACCELERATE_CONFIG
    from accelerate.commands.config.config_args import load_config_from_file

    assert load_config_from_file(config).num_processes is not None  # accelerate's own loader
    processes = train.command[train.command.index("--num_processes") + 1]
    assert int(processes) == project.TRAINING_PROCESSES
    if project.TIER_NODES > 1:
        assert len(steps) == 1
        assert train.command[train.command.index("--machine_rank") + 1] == "1"
        assert train.command[train.command.index("--main_process_ip") + 1] == "10.0.0.1"
    else:
        server = steps[0]
        assert server.background and server.environment()["VLLM_SERVER_DEV_MODE"] == "1"
        visible_train = train.environment()["CUDA_VISIBLE_DEVICES"].split(",")
        visible_server = server.environment()["CUDA_VISIBLE_DEVICES"].split(",")
        assert len(visible_server) == project.VLLM_SERVER_GPUS
        assert not set(visible_train) & set(visible_server)
        assert len(visible_train) + len(visible_server) == project.TIER_GPUS
        assert "serve" in server.command


def test_overrides_reach_the_vllm_server_as_well_as_the_trainer():
    """The server is built from the same resolved recipe as the trainer: a longer completion
    lengthens the server's context, another port moves the server."""
    if project.TIER_NODES > 1 or not project.VLLM_SERVER_GPUS:
        pytest.skip("no vLLM server in this plan")
    steps = launch.plan(["--max_completion_length", "4096", "--vllm_server_port", "8123"], {})
    server = steps[0].command
    recipe = launch.launch_recipe([])
    assert int(server[server.index("--max-model-len") + 1]) == (
        recipe.script.max_prompt_tokens + 4096
    )
    assert server[server.index("--port") + 1] == "8123"


def test_multi_node_needs_the_main_address():
    if project.TIER_NODES == 1:
        pytest.skip("single node")
    with pytest.raises(UserError, match="MASTER_ADDR"):
        launch.plan([], {})


def test_dry_run_prints_the_commands(capsys, monkeypatch):
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
from {{ cookiecutter.package_name }}.training import launch
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


@pytest.mark.slow
@pytest.mark.distributed
def test_smoke_distributed_goes_through_accelerate_with_the_plans_config(
    tiny_model_dir, tmp_path, capfd
):
    """`make smoke-distributed`: 2 CPU processes started by `accelerate launch` with this plan's
    accelerate config (DDP's where the plan's DeepSpeed needs CUDA), as a GPU run starts."""
    steps = launch.smoke_plan(["--model_name_or_path", str(tiny_model_dir)])
    command = steps[0].command
    config = command[command.index("--config_file") + 1]
    expected = project.ACCELERATE_CONFIG
    if project.DISTRIBUTED not in launch.CPU_STRATEGIES:
        expected = expected.rsplit("/", 1)[0] + "/ddp.yaml"
    assert config == expected and "accelerate.commands.launch" in command
    output = tmp_path / "run"
    code = launch.launch(["--smoke", "--", "--model_name_or_path", str(tiny_model_dir),
                          "--output_dir", str(output)])  # fmt: skip
    assert code == 0
    saved = {p.name for p in output.iterdir()}
    assert "adapter_model.safetensors" in saved or "model.safetensors" in saved
    assert "training processes: 2" in capfd.readouterr().err
