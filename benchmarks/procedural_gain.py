"""The held-out gain (figures, not tests): SmolLM2-135M-Instruct on the procedural task, offline, on
the CPU, through a generated project's own commands; base vs warm-up vs warm-up + GRPO.

    python benchmarks/procedural_gain.py [--steps 60] [--held-out 200] [--one-digit] [--keep DIR]

A project is baked for SmolLM2 (the catalog's entry), the cpu tier and task_type=procedural: its
problems are reasoning-gym's (the starter's mix of sums and differences), the training ones from
the task's seed, the held-out ones from seed + 1_000_000 (grpo_kit.procedural), scored by each
generator's own `score_answer`. `--one-digit` edits the baked project's task.py as its docstring
invites a user to (a generator's config): every `"max_digits": 2` becomes 1, nothing else changes
(with the starter's mix, the two-term one-digit problems are then few enough that training takes
nearly all of them, so the held-out problems are three-term chains: all 200 in the README's run;
the output says what was edited). configs/local.yaml gets the real model's folder (built offline,
`grpo real-model`) and a CPU-sized run. Then, each one the project's own command:

1. `preflight` on the base model (expected: refused, it never writes the format);
2. `warmup` on `--warmup-examples` training problems;
3. `preflight` on the warm-up's merged model (expected: the teaching rewards now vary);
4. `train` (GRPO) from the merged model for `--steps` steps, under a profiler that records where
   each step's time goes (benchmarks/step_profile.py: TRL's own phase timers and the backward);
5. `evaluate` on the same `--held-out` held-out problems, twice: greedy (`--greedy`: each model's
   likeliest answer), then sampled (one completion per problem at the GRPO run's own rollout
   sampling: the recipe's training temperature, top_p and top_k, read from its run record,
   seeded with `--seed`, the same for every model); each time base vs GRPO, then the warm-up
   alone;
6. bare TRL (run.py's floor) with the run's settings, model and rows for `--bare-steps` steps,
   under the same profiler.

Why both decodings: greedy shows the model's mode, which GRPO on a small model may leave in
place while it moves probability towards right answers (issue 40: training-time correctness
0.10 -> 0.23 while greedy stayed flat); sampled pass@1 at the training temperature scores the
policy GRPO actually optimised, the distribution its rewards were measured on. For each decoding
it prints the accuracies with their binomial standard errors, GRPO's gain over the warm-up in
standard errors, the paired McNemar count (problems GRPO newly solves / newly fails, exact
two-sided p) and its own "Beyond 2 SE" verdict; then the preflight verdicts, each GRPO step,
where a step's time goes (project and bare TRL) and the machine. Every command runs under
`nice` with `--threads` torch threads. The README's "A real model learns" section quotes its
output.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import grpo_kit  # noqa: E402
import real_model as rm  # noqa: E402  (the project's commands, each timed; steps table)
import run as bench  # noqa: E402  (bake, the bare TRL floor, machine)
import step_profile  # noqa: E402

KIT = str(Path(grpo_kit.__file__).resolve().parents[1])  # its src folder, for the commands

REWARDS = ("procedural_correctness", "strict_format", "partial_format", "soft_overlong")
OUTPUT_DIR = Path("outputs/smollm2-procedural-grpo")
METRIC = "accuracy"  # evaluate's metric of the procedural task (procedural_correctness)
SOLVED = 1.0 - 1e-9  # a problem counts as solved at the scorer's top score
# The project's `python -m grpo_kit`, with the step profiler installed first (same process).
PROFILED = (
    "import runpy, sys; sys.path.insert(0, {here!r}); import step_profile; "
    "step_profile.install(); sys.argv = ['grpo_kit', *sys.argv[1:]]; "
    "runpy.run_module('grpo_kit', run_name='__main__', alter_sys=True)"
)


def one_digit(project: Path) -> str:
    """Edit the project's task.py as a user would for easier problems: every generator config's
    `"max_digits": 2` becomes 1. Returns what was edited."""
    (path,) = (project / "src").glob("*/task.py")
    old, new = '"max_digits": 2', '"max_digits": 1'
    text = path.read_text(encoding="utf-8")
    count = text.count(old)
    assert count >= 1, f"--one-digit: no {old} in {path}"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return f"{path.relative_to(project)}: {old} -> {new} ({count} substitution(s))"


def binomial_se(p: float, n: int) -> float:
    return math.sqrt(p * (1 - p) / n) if n else float("nan")


def mcnemar(before: list[bool], after: list[bool]) -> tuple[int, int, float]:
    """(problems solved after only, solved before only, exact two-sided p on the discordant)."""
    gained = sum(1 for b, a in zip(before, after, strict=True) if a and not b)
    lost = sum(1 for b, a in zip(before, after, strict=True) if b and not a)
    n = gained + lost
    if n == 0:
        return 0, 0, 1.0
    tail = sum(math.comb(n, k) for k in range(min(gained, lost) + 1)) / 2**n
    return gained, lost, min(1.0, 2 * tail)


def solved(out: Path, model: str) -> dict[str, bool]:
    """prompt -> solved, from evaluate's per-row predictions of one model."""
    found = {}
    for line in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["model"] == model:
            value = row.get(METRIC)
            found[row["prompt"]] = value is not None and value >= SOLVED
    return found


def step_seconds(history: list[dict]) -> list[float]:
    return [row["step_time"] for row in history if "step_time" in row]


def profile_table(columns: dict[str, dict[str, float]]) -> str:
    names = list(next(iter(columns.values())))
    lines = ["| phase (s per step) | " + " | ".join(columns) + " |",
             "| --- |" + " ---: |" * len(columns)]  # fmt: skip
    for name in names:
        cells = [f"{phases[name]:.1f}" for phases in columns.values()]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    totals = [f"{sum(phases.values()):.1f}" for phases in columns.values()]
    lines.append("| TRL's step_time (mean) | " + " | ".join(totals) + " |")
    return "\n".join(lines) + "\n"


def bare_profiled(project: Path, run_dir: Path, folder: Path, steps: int, threads: int):
    """Bare TRL (real_model.py's driver of run.py's floor) with the run's settings, model and
    rows, profiled: (step times, phases per step), or ([], None) when it fails."""
    path = os.pathsep.join([str(project / "src"), KIT])
    profile = folder / "bare-profile.json"
    env = {**bench.ENV, "PYTHONPATH": path, "OMP_NUM_THREADS": str(threads),
           step_profile.ENV: str(profile)}  # fmt: skip
    prelude = f"import sys; sys.path.insert(0, {str(HERE)!r}); import step_profile; "
    prelude += "step_profile.install()\n"
    history = rm.bare_history(project, run_dir, folder, steps, env, prelude)
    if history is None:
        return [], None
    times = step_seconds(history)
    events = json.loads(profile.read_text())
    return times, step_profile.phases(events, len(times), statistics.mean(times))


def profiled_train(run, profile: Path, merged: str, *extra: str):
    """The project's `train` from the warm-up's merged model (its own command, `python -c
    PROFILED` in place of `python -m grpo_kit`, so the step profiler is installed in its process):
    (wall seconds, TRL's step times, phases per step)."""
    argv = ["train", "--model_name_or_path", merged, "--preflight", "false", *extra]
    command = ["nice", "-n", "10", sys.executable, "-c", PROFILED.format(here=str(HERE)), *argv]
    print(f"$ grpo_kit {' '.join(argv)}  (profiled)", file=sys.stderr, flush=True)
    start = time.perf_counter()
    env = {**run.env, step_profile.ENV: str(profile)}
    done = subprocess.run(command, cwd=run.project, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    with run.log.open("a", encoding="utf-8") as handle:
        handle.write(f"$ {' '.join(argv)}  (profiled, {elapsed:.0f} s, exit {done.returncode})\n")
        handle.write(done.stdout + done.stderr + "\n")
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(argv)}\n{done.stderr[-3000:]}")
    out = run.project / (extra[extra.index("--output_dir") + 1] if "--output_dir" in extra
                         else OUTPUT_DIR)  # fmt: skip
    history = json.loads((out / "trainer_state.json").read_text())["log_history"]
    times = step_seconds(history)
    events = json.loads(profile.read_text())
    return elapsed, times, step_profile.phases(events, len(times), statistics.mean(times))


def speed_rerun(project: Path, steps: int, rounds: int, threads: int, option: str = "") -> None:
    """On a kept project: its profiled `train` and bare TRL (or, with `option`, its `train`
    again with those extra arguments: a candidate cpu-tier setting), `steps` steps each,
    alternated `rounds` times under the same load; prints the phases and the medians' ratio."""
    folder = project.parents[1]
    run = rm.Runner(project, threads, folder / "commands.log")
    run.env["PYTHONPATH"] += os.pathsep + KIT
    merged = str(OUTPUT_DIR.parent / f"{OUTPUT_DIR.name}-warmup" / "merged")
    other = f"project {option}" if option else "bare TRL"
    mine, theirs, phases = [], [], {}
    for index in range(rounds):
        out = f"outputs/speed-{index}"
        _, times, phases["project"] = profiled_train(
            run, folder / f"speed-profile-{index}.json", merged, "--max_steps", str(steps),
            "--output_dir", out,
        )  # fmt: skip
        mine += times
        if option:
            _, times, phases[other] = profiled_train(
                run, folder / f"speed-option-profile-{index}.json", merged, "--max_steps",
                str(steps), "--output_dir", f"{out}-option", *option.split(),
            )  # fmt: skip
        else:
            times, phases[other] = bare_profiled(project, project / out, folder, steps, threads)
        theirs += times
    print(profile_table(phases))
    ratio = statistics.median(mine) / statistics.median(theirs) if theirs else float("nan")
    load = os.getloadavg()[0]
    print(f"Seconds per GRPO step, median: project {statistics.median(mine):.1f} s, {other} "
          f"{statistics.median(theirs):.1f} s ({ratio:.2f}x), {len(mine)} steps each, "
          f"alternated in {rounds} round(s) of {steps}; load average {load:.1f} at the end. "
          f"Machine: {bench.machine()}.")  # fmt: skip


# evaluate's output folders (under the project) per decoding: (base vs GRPO, the warm-up alone)
EVALUATIONS = {
    "greedy": ("outputs/eval-base-vs-grpo", "outputs/eval-warmup"),
    "sampled": ("outputs/eval-sampled-base-vs-grpo", "outputs/eval-sampled-warmup"),
}


def rollout_sampling(run_dir: Path, seed: int) -> list[str]:
    """evaluate's options for the GRPO run's own rollout sampling (its run record's resolved
    temperature, top_p, top_k: what its rewards were measured on), seeded."""
    recipe = json.loads((run_dir / "run_record.json").read_text())["recipe"]
    temperature = recipe.get("temperature")
    temperature = 1.0 if temperature is None else temperature  # TRL's default
    top_p = recipe.get("top_p")
    return ["--temperature", f"{temperature:g}", "--top-p", f"{1.0 if top_p is None else top_p:g}",
            "--top-k", str(recipe.get("top_k") or 0), "--seed", str(seed)]  # fmt: skip


def evaluations(run, project: Path, model: Path, merged: Path, args) -> dict[str, float]:
    """The held-out evaluations each decoding needs (EVALUATIONS), skipping those a kept
    project already has (a summary.json): wall seconds per command run."""
    sampled = rollout_sampling(project / OUTPUT_DIR, args.seed)
    decodings = {"greedy": ["--greedy"], "sampled": sampled}
    times = {}
    for name, (both, warm_out) in EVALUATIONS.items():
        held = ["--limit", str(args.held_out), *decodings[name],
                "--max-new-tokens", str(args.max_completion_length)]  # fmt: skip
        if not (project / both / "summary.json").exists():
            times[f"evaluate base + GRPO, {name}"], _ = run(
                "evaluate", "--model", str(OUTPUT_DIR), "--base", str(model), *held,
                "--output-dir", both,
            )  # fmt: skip
        if not (project / warm_out / "summary.json").exists():
            times[f"evaluate warm-up, {name}"], _ = run(
                "evaluate", "--model", str(merged), "--no-base", *held, "--output-dir", warm_out
            )
    return times


def held_out_sections(project: Path) -> str:
    """The held-out table of each decoding whose evaluations the project has."""
    found = []
    for name, (both, warm_out) in EVALUATIONS.items():
        if (project / both / "summary.json").exists() and (
            project / warm_out / "summary.json"
        ).exists():
            found.append(held_out_section(project / both, project / warm_out, name))
    return "\n".join(found)


def held_out_section(both: Path, warm_out: Path, decoding: str = "greedy") -> str:
    """The held-out table from evaluate's outputs of one decoding (base vs GRPO in `both`, the
    warm-up alone in `warm_out`): per model, evaluate's accuracy (the mean score: reasoning-gym's
    scorers give partial credit, e.g. len(answer)/len(reply) when the reply contains it), the
    problems solved (score 1) with the binomial SE of that share, strict format; then GRPO's
    gain over the warm-up in solved problems, in SEs, and paired (McNemar)."""
    summary = json.loads((both / "summary.json").read_text())
    n = summary["prompts"]
    how = summary.get("decoding", decoding)
    how = decoding if how == decoding else f"{decoding}: {how}"
    results = {
        "base (SmolLM2-135M-Instruct)": (both, "base"),
        "after the warm-up": (warm_out, "trained"),
        "after warm-up + GRPO": (both, "trained"),
    }
    lines = [f"## Held-out problems ({n}, {how}; held out: {summary['held_out']})\n",
             "| model | accuracy (mean score) | solved | solved share | SE | strict_format |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    share = {}
    for label, (out, name) in results.items():
        found = json.loads((out / "summary.json").read_text())
        rows = solved(out, name)
        share[label] = sum(rows.values()) / n
        strict = found["format"].get(name, {}).get("strict_format")
        strict_text = "n/a" if strict is None else f"{strict:.3f}"
        lines.append(
            f"| {label} | {found['metrics'][name][METRIC]:.3f} | {sum(rows.values())}/{n} | "
            f"{share[label]:.3f} | {binomial_se(share[label], n):.3f} | {strict_text} |"
        )
    warm, grpo = share["after the warm-up"], share["after warm-up + GRPO"]
    se_warm = binomial_se(warm, n)
    se_diff = math.sqrt(se_warm**2 + binomial_se(grpo, n) ** 2)
    before, after = solved(warm_out, "trained"), solved(both, "trained")
    gained, lost, p = mcnemar([before[q] for q in before], [after.get(q, False) for q in before])
    gain = grpo - warm
    lines.append(
        f"\n{decoding.capitalize()}: GRPO's gain over the warm-up (solved share): {gain:+.3f} = "
        f"{gain / se_warm if se_warm else 0:+.1f} SE of the warm-up's share ({se_warm:.3f}), "
        f"{gain / se_diff if se_diff else 0:+.1f} SE of the difference ({se_diff:.3f}); paired "
        f"(McNemar): +{gained} / -{lost} problems, exact p = {p:.3g}. Beyond 2 SE: "
        f"{'yes' if gain > 2 * se_warm else 'NO'}.\n"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60, help="GRPO steps (default 60)")
    parser.add_argument("--held-out", type=int, default=200, help="held-out problems scored")
    parser.add_argument("--generations", type=int, default=8, help="completions per prompt")
    parser.add_argument("--prompts-per-step", type=int, default=2)
    parser.add_argument("--max-completion-length", type=int, default=128)
    parser.add_argument("--learning-rate", type=float, default=5e-5)
    parser.add_argument("--warmup-examples", type=int, default=64)
    parser.add_argument("--warmup-epochs", type=float, default=2.0)
    parser.add_argument("--preflight-prompts", type=int, default=8)
    parser.add_argument(
        "--bare-steps", type=int, default=5, help="bare TRL steps (0: skip the bare run)"
    )
    parser.add_argument(
        "--one-digit",
        action="store_true",
        help='easier problems: the baked task.py\'s "max_digits": 2 become 1',
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads per command")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it")
    parser.add_argument(
        "--held-out-from",
        type=Path,
        help="a kept project (its folder under projects/): run the held-out evaluations it "
        "lacks, then print the held-out tables",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="sampling seed of the sampled evaluation (default 0)"
    )
    parser.add_argument(
        "--speed-from",
        type=Path,
        help="only rerun the step comparison on a kept project: its profiled train and bare "
        "TRL, --bare-steps steps each, alternated --speed-rounds times",
    )
    parser.add_argument("--speed-rounds", type=int, default=2)
    parser.add_argument(
        "--speed-option",
        default="",
        help="with --speed-from: compare the project's train with and without these extra "
        'train arguments (a candidate cpu-tier setting, e.g. "--torch_compile true") '
        "instead of bare TRL",
    )
    args = parser.parse_args()
    if args.speed_from:
        speed_rerun(
            args.speed_from.resolve(), args.bare_steps, args.speed_rounds, args.threads,
            args.speed_option,
        )  # fmt: skip
        return
    from grpo_kit.offline.real_model import ensure_real_model

    if args.held_out_from:  # a kept project: run the evaluations it lacks, print the tables
        project = args.held_out_from.resolve()
        run = rm.Runner(project, args.threads, project.parents[1] / "commands.log")
        run.env["PYTHONPATH"] += os.pathsep + KIT
        merged = OUTPUT_DIR.parent / f"{OUTPUT_DIR.name}-warmup" / "merged"
        evaluations(run, project, ensure_real_model(), merged, args)
        print(held_out_sections(project))
        return

    started = time.perf_counter()
    model = ensure_real_model()
    holder = None if args.keep else tempfile.TemporaryDirectory()
    folder = args.keep or Path(holder.name)
    folder.mkdir(parents=True, exist_ok=True)
    project = bench.bake(
        folder / "projects", model=rm.HUB_ID, gpu_tier="cpu", task_type="procedural"
    )
    edited = one_digit(project) if args.one_digit else None
    if edited:
        print(f"--one-digit: edited {edited}", file=sys.stderr)
    (project / "configs" / "local.yaml").write_text(rm.run_recipe(model, args, OUTPUT_DIR))
    run = rm.Runner(project, args.threads, folder / "commands.log")
    run.env["PYTHONPATH"] += os.pathsep + KIT  # the kit this benchmark imported, not another
    print(f"project {project}; log {folder / 'commands.log'}", file=sys.stderr)

    prompts = ["--prompts", str(args.preflight_prompts)]
    times = {}
    times["preflight (base)"], _ = run(
        "preflight", *prompts, "--output", "outputs/preflight-base.md", allowed=(0, 2)
    )
    times["warm-up"], _ = run("warmup", "--examples", str(args.warmup_examples), "--epochs",
                              str(args.warmup_epochs))  # fmt: skip
    merged = OUTPUT_DIR.parent / f"{OUTPUT_DIR.name}-warmup" / "merged"
    times["preflight (warm-up)"], _ = run(
        "preflight", *prompts, "--model_name_or_path", str(merged), "--output",
        "outputs/preflight-warm.md", allowed=(0, 2),
    )  # fmt: skip
    # the preflight just ran on this model: `make train` need not sample it again
    times["GRPO train"], project_steps, project_phases = profiled_train(
        run, folder / "project-profile.json", str(merged)
    )
    state = json.loads((project / OUTPUT_DIR / "trainer_state.json").read_text())
    steps_text, _ = steps_table(state["log_history"])
    times.update(evaluations(run, project, model, merged, args))
    bare, bare_phases = [], None
    if args.bare_steps:
        bare, bare_phases = bare_profiled(
            project, project / OUTPUT_DIR, folder, args.bare_steps, args.threads
        )

    if edited:
        print(f"## Task edited (--one-digit)\n\n{edited}\n")
    print("## Preflight of the base model\n")
    print((project / "outputs/preflight-base.md").read_text())
    print("## Preflight after the format warm-up\n")
    print((project / "outputs/preflight-warm.md").read_text())
    print(f"## GRPO from the warm-up ({args.steps} steps)\n")
    print(steps_text)
    print(held_out_sections(project))
    print("## Where a GRPO step's time goes\n")
    columns = {"project": project_phases}
    if bare_phases:
        columns["bare TRL"] = bare_phases
    print(profile_table(columns))
    project_step = statistics.median(project_steps)
    bare_step = statistics.median(bare) if bare else None
    ratio = f" ({project_step / bare_step:.2f}x)" if bare_step else ""
    bare_text = f"{bare_step:.1f} s over {len(bare)} steps" if bare_step else "not run"
    print(f"Seconds per GRPO step (TRL's step_time), median: project {project_step:.1f} s over "
          f"{len(project_steps)} steps, bare TRL {bare_text}{ratio}.\n")  # fmt: skip
    print("## Wall time per command\n")
    for name, seconds in times.items():
        print(f"- {name}: {seconds / 60:.1f} min")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\nMachine: {bench.machine()}; {args.threads} torch thread(s), load average "
          f"{load:.1f} at the end; total {(time.perf_counter() - started) / 60:.0f} min. "
          f"`python benchmarks/procedural_gain.py {' '.join(sys.argv[1:])}`.")  # fmt: skip
    if holder is not None:
        holder.cleanup()


def steps_table(history: list[dict]):
    """real_model.py's table of the GRPO steps, with this task's rewards."""
    saved = rm.REWARDS
    rm.REWARDS = REWARDS
    try:
        return rm.steps_table(history)
    finally:
        rm.REWARDS = saved


if __name__ == "__main__":
    main()
