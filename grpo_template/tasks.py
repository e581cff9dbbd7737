"""Task types: what the template adds to each of grpo-kit's task starters.

The task's facts that the generated project also runs on (its data defaults and sample file, the
system prompt, the rewards with their weights and kinds, its recipe fields and their defaults,
an example prompt) live once, in the kit's starter (`grpo_kit/starters/<task>/task.py`, the file
the project's `task.py` is copied from); `TaskSpec` reads them from there. What is only the
template's stays here: the question's label, the lengths the tuning plans for, the README's
notes, the sample's provenance and the task's extra dependencies.
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass
from functools import cached_property

from . import kit


@dataclass(frozen=True)
class Argument:
    """A task-specific recipe field (a field of the task's arguments dataclass in the kit)."""

    key: str
    value: object
    why: str


@dataclass(frozen=True)
class TaskSpec:
    name: str
    label: str
    completion_tokens: int  # typical answer length; tiers scale it
    prompt_tokens: int  # longest prompt kept by default
    dataset_note: str  # for the generated README
    metric_note: str = ""  # the evaluation metrics (the task's Task.metrics), in words
    extra_dependencies: tuple[str, ...] = ()
    # grpo-kit's extras the task needs (the project pins `grpo-kit[<extras>]==<version>`): the
    # packages live in the kit's pyproject.toml, once.
    kit_extras: tuple[str, ...] = ()
    # Completions with reference scores written from the task's rubric, shipped in data/ beside
    # the sample: `make reward-debug` scores them and reports each reward's agreement.
    labelled: str = ""
    # Agent tasks: the cap on tool-calling turns per rollout (GRPOConfig's
    # max_tool_calling_iterations); 0 for single-turn tasks.
    tool_iterations: int = 0
    # The shortest max_completion_length a plan may lower the length to: below it the task's own
    # ideal completions (its shipped sample's) are punished by soft_overlong (its token estimate,
    # characters / 4, past the buffer's start at 3/4 of the limit) and the project's checks
    # fail; rounded up to 64 tokens. tests/test_tuning.py measures it from the sample.
    completion_floor: int = 64

    @cached_property
    def kit(self):
        """The kit's starter task (`grpo_kit.starters.<name>.task.TASK`)."""
        return importlib.import_module(f"{kit.STARTERS}.{self.name}.task").TASK

    @property
    def data(self):
        return self.kit.data

    @property
    def dataset_name(self) -> str:
        return self.kit.data.dataset_name

    @property
    def dataset_config(self) -> str | None:
        return self.kit.data.dataset_config

    @property
    def train_split(self) -> str:
        return self.kit.data.train_split

    @property
    def test_split(self) -> str:
        return self.kit.data.test_split

    @property
    def prompt_column(self) -> str:
        return self.kit.data.prompt_column

    @property
    def answer_column(self) -> str:
        return self.kit.data.answer_column

    @property
    def sample_data(self) -> str:
        return self.kit.data.sample

    @property
    def system_prompt(self) -> str:
        return self.kit.system_prompt

    @property
    def rewards(self) -> tuple:
        """The kit's `Reward`s: name, weight, why, kind."""
        return self.kit.rewards

    @property
    def example_prompt(self) -> str:
        return self.kit.example_prompt

    @property
    def arguments(self) -> tuple[Argument, ...]:
        """The task's recipe fields: the fields of its arguments dataclass, their defaults and
        help texts."""
        found = []
        for field in dataclasses.fields(self.kit.arguments):
            value = field.default
            if field.default_factory is not dataclasses.MISSING:
                value = field.default_factory()
            found.append(Argument(field.name, value, field.metadata.get("help", "")))
        return tuple(found)


def agent_completion_tokens(turn_tokens: int, result_tokens: int, iterations: int) -> int:
    """An agent rollout's completion budget: TRL counts the whole exchange after the prompt
    (every assistant turn and every tool result appended to it) against max_completion_length,
    so it holds one turn per tool-calling iteration plus the final answer, and one tool result
    per iteration."""
    return turn_tokens * (iterations + 1) + result_tokens * iterations


MATH = TaskSpec(
    name="math",
    label="Math word problems (GSM8K / MATH-style answers, checked with math-verify)",
    completion_tokens=512,
    prompt_tokens=384,
    dataset_note=(
        "`openai/gsm8k` (config `main`): `question` is the prompt, `answer` is a worked "
        "solution ending in `#### <number>`; the reward compares that number."
    ),
    metric_note="`accuracy`, the final answer equals the gold answer (math-verify)",
)

CODE = TaskSpec(
    name="code",
    label="Python code, checked by running unit tests in a local sandbox (MBPP, HumanEval)",
    completion_tokens=768,
    prompt_tokens=768,
    completion_floor=256,
    dataset_note=(
        "`google-research-datasets/mbpp` (config `full`): `text` is the problem, "
        "`test_list` the asserts the code must pass (shown in the prompt, since they name the "
        "function), `code` a reference solution, `test_setup_code` code run before the tests. "
        "HumanEval (`openai/openai_humaneval`, split `test`) works too: `prompt_column: prompt`, "
        "`answer_column: test`, `entry_point_column: entry_point`, `stub_column: prompt`, "
        "`solution_column: canonical_solution`, `setup_column: null`."
    ),
    metric_note="`pass_rate`, the share of the row's tests the program passes",
)

JSON = TaskSpec(
    name="json",
    label="Structured JSON output validated against each row's JSON Schema",
    completion_tokens=384,
    prompt_tokens=1024,
    dataset_note=(
        "`NousResearch/json-mode-eval` (100 rows, one `train` split): `prompt` is a chat whose "
        "user message is the request, `completion` the reference JSON, `schema` the JSON "
        "Schema (added to the prompt). Hold out rows of your own data for evaluation."
    ),
    metric_note=(
        "`field_f1` (fields right vs. fields given and expected), `field_match` and `schema_valid`"
    ),
)

CLASSIFICATION = TaskSpec(
    name="classification",
    label="Classification / fact-check: one label from a fixed set",
    completion_tokens=256,
    prompt_tokens=512,
    dataset_note=(
        "`fancyzhx/ag_news`: `text` is a news snippet, `label` one of World, Sports, "
        "Business, Sci/Tech (class ids become their names). For fact-checking, point the "
        "recipe at claims and set `labels`, e.g. [SUPPORTED, REFUTED, NOT ENOUGH INFO]."
    ),
    metric_note="`accuracy` (the gold label) and `valid_label` (one of the labels)",
)

CUSTOM = TaskSpec(
    name="custom",
    label="Custom: a working short-answer example to edit (prompt builder + reward)",
    completion_tokens=256,
    prompt_tokens=256,
    dataset_note=(
        "no Hub dataset: the recipe trains on `data/sample_custom.jsonl` (`question`, "
        "`answer`). Replace it with your data and edit `src/<package>/task.py` and "
        "`src/<package>/rewards.py` (marked EDIT HERE)."
    ),
    metric_note="`accuracy` of `exact_answer`; list your own in task.py's `TASK.metrics`",
)

TOOL_ITERATIONS = 3
TOOLS = TaskSpec(
    name="tools",
    label="Agent: multi-turn tool use (Python for math, lookup in a local knowledge base)",
    completion_tokens=agent_completion_tokens(
        turn_tokens=192, result_tokens=160, iterations=TOOL_ITERATIONS
    ),
    prompt_tokens=768,
    dataset_note=(
        "no Hub dataset: the recipe trains on `data/sample_tools.jsonl` (`environment` = "
        "`python` or `lookup`, `question`, `answer`, `ideal_calls`), the lookup tools search "
        "`data/sample_corpus.jsonl`. GSM8K works with the Python tool: "
        "`--dataset_name openai/gsm8k --dataset_config main --environment_column null "
        "--default_environment python`."
    ),
    metric_note=(
        "`success` (the final answer is right), `tool_format` (well-formed calls and a final "
        "answer) and `calls` per episode"
    ),
    extra_dependencies=("bm25s>=0.3,<0.4",),
    tool_iterations=TOOL_ITERATIONS,
)

PROCEDURAL = TaskSpec(
    name="procedural",
    label="Procedural: problems generated by reasoning-gym, scored by each generator (offline)",
    completion_tokens=256,
    prompt_tokens=256,
    dataset_note=(
        "no dataset to download: `PROBLEMS` in `src/<package>/task.py` generates the problems "
        "offline with reasoning-gym's generators (by default sums and differences of small "
        "numbers), the training ones from its seed and the held-out ones `make evaluate` scores "
        "from another, none of them a training problem. Each row carries its generator's entry "
        "(`rg_entry`), which the generator's own scorer reads; its curriculum raises the "
        "difficulty as the training accuracy crosses its threshold (`curriculum.jsonl` in the "
        "run's folder)."
    ),
    metric_note="`accuracy`, the generator's own score of the answer",
    kit_extras=(importlib.import_module("grpo_kit.procedural").EXTRA,),  # its home: the kit
)

JUDGE = TaskSpec(
    name="judge",
    label="Judge: answers no program can check, graded by a judge model against a rubric",
    completion_tokens=256,
    prompt_tokens=256,
    completion_floor=128,
    dataset_note=(
        "no Hub dataset: the recipe trains on `data/sample_judge.jsonl` (`question`, `answer`: "
        "a reference explanation, the ideal completion). A judge model grades each answer "
        "against `RUBRIC` in `src/<package>/rewards.py`; `data/labelled_judge.jsonl` holds "
        "completions with the scores a reader gave them from the rubric."
    ),
    metric_note="`rubric_grade`, the judge's grade",
    kit_extras=(importlib.import_module("grpo_kit.offline.judge_server").EXTRA,),
    labelled="data/labelled_judge.jsonl",
)

TASKS: dict[str, TaskSpec] = {
    t.name: t for t in (MATH, CODE, JSON, CLASSIFICATION, CUSTOM, TOOLS, PROCEDURAL, JUDGE)
}
DEFAULT_TASK = "math"


def lookup(name: str) -> TaskSpec:
    return TASKS[name]
