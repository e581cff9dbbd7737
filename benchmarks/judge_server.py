"""What a judge reward costs per batch (figures, not tests): grpo-kit's judge against a real
OpenAI-compatible server on this machine, `transformers serve` on SmolLM2-135M-Instruct.

    python benchmarks/judge_server.py [--completions 8] [--workers 1 2 4] [--threads 1]

The server (grpo_kit/offline/judge_server.py) runs the model on `--threads` torch threads. For
each `--workers` a fresh judge (no cache) scores `--completions` distinct completions of one
prompt, a training step's batch; then the same batch again (every row a cache hit). It prints,
per setting: the batch's seconds, the mean request latency, the requests per second, how many
rows got a score (SmolLM2 often answers off the scale: a parse error, None), and the machine's
load. A step's judge time is about completions / (requests per second); a GPU judge (vLLM)
answers in tens of milliseconds and batches the requests of several workers together.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "kit" / "src"))

from grpo_kit.offline import judge_server, real_model  # noqa: E402
from grpo_kit.rewards.judge import Criterion, Endpoint, Example, Judge, Rubric  # noqa: E402

RUBRIC = Rubric(
    (Criterion("correct", "the answer to the question is right"),),
    task="short factual answers",
    examples=(
        Example("What is 2+2?", "2+2 is 5.", {"correct": 0}),
        Example("What is 3+3?", "3+3 = 6.", {"correct": 10}),
    ),
)
QUESTION = "What is the capital of France?"
CITIES = ["Paris", "Berlin", "Lyon", "Rome", "Madrid", "Marseille", "Nice", "Lille", "Vienna"]


def completions(count: int) -> list[str]:
    return [f"The capital of France is {CITIES[i % len(CITIES)]} ({i})." for i in range(count)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--completions", type=int, default=8)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--threads", type=int, default=1, help="the server's torch threads")
    args = parser.parse_args(argv)
    why = judge_server.serving_available()
    if why:
        print(f"judge benchmark: {why}")
        return 2
    folder = real_model.ensure_real_model()
    texts = completions(args.completions)
    start = time.monotonic()
    with judge_server.LocalJudgeServer(folder, threads=args.threads) as server:
        print(f"server up in {time.monotonic() - start:.1f} s ({server.model})")
        print("workers  batch s  latency s  requests/s  scored  again s  cache hits  load")
        for workers in args.workers:
            endpoint = Endpoint(server.base_url, server.model, request_timeout_s=120)
            with Judge(RUBRIC, endpoint, workers=workers, batch_budget_s=600) as judge:
                start = time.monotonic()
                scores, metrics = judge.score([QUESTION] * len(texts), texts)
                spent = time.monotonic() - start
                start = time.monotonic()
                _, again = judge.score([QUESTION] * len(texts), texts)
                second = time.monotonic() - start
            scored = sum(1 for s in scores if s is not None)
            print(
                f"{workers:7d}  {spent:7.1f}  {metrics.latency_s:9.2f}  "
                f"{metrics.requests / spent:10.2f}  {scored:3d}/{len(texts):<2d}  {second:7.3f}  "
                f"{again.cache_hits:10d}  {os.getloadavg()[0]:4.1f}"
            )
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
