"""Starting the local judge server where it cannot run: one clear error, no process left."""

from __future__ import annotations

import pytest
from grpo_kit.offline import judge_server


def test_a_folder_without_a_model_is_refused_before_anything_starts(tmp_path):
    if judge_server.serving_available():
        pytest.skip("FastAPI/uvicorn missing: the refusal below would be that one")
    server = judge_server.LocalJudgeServer(tmp_path)
    with pytest.raises(judge_server.JudgeServerUnavailable, match="no config.json"):
        server.start()
    assert server.process is None


def test_a_server_that_exits_is_reported_with_its_output(tmp_path):
    if judge_server.serving_available():
        pytest.skip("FastAPI/uvicorn missing")
    (tmp_path / "config.json").write_text('{"model_type": "no-such-architecture"}')
    server = judge_server.LocalJudgeServer(tmp_path, start_timeout_s=120)
    with pytest.raises(judge_server.JudgeServerUnavailable) as caught:
        server.start()
    message = str(caught.value)
    assert "exited with" in message or "did not answer" in message
    assert server.process is None  # stopped
