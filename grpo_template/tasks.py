"""Task types: the default dataset, prompt, rewards and lengths each one bakes into the recipe."""

from __future__ import annotations

from dataclasses import dataclass

FORMAT_INSTRUCTIONS = (
    "First think step by step inside <think> </think> tags. Then write only the final answer "
    "inside <answer> </answer> tags."
)
WRITTEN_HERE = "written for grpo-template"
WRITTEN_LICENSE = "CC0-1.0 (public domain dedication)"


@dataclass(frozen=True)
class Reward:
    name: str
    weight: float
    why: str  # one-line comment placed next to it in the recipe
    kind: str = "format"  # correctness, format or length: the staged recipe trains format first


@dataclass(frozen=True)
class Argument:
    """A task-specific recipe field (a field of the task's TaskArguments dataclass)."""

    key: str
    value: object
    why: str


@dataclass(frozen=True)
class TaskSpec:
    name: str
    label: str
    dataset_name: str
    dataset_config: str | None
    train_split: str
    test_split: str
    prompt_column: str
    answer_column: str
    system_prompt: str
    rewards: tuple[Reward, ...]
    completion_tokens: int  # typical answer length; tiers scale it
    prompt_tokens: int  # longest prompt kept by default
    dataset_note: str  # for the generated README
    example_prompt: str  # used by `make smoke` / `make infer`
    sample_what: str  # the shipped sample file: what it holds
    sample_source: str  # where it comes from
    sample_license: str
    metric_note: str = ""  # the evaluation metrics (the task file's TASK.metrics), in words
    arguments: tuple[Argument, ...] = ()
    extra_dependencies: tuple[str, ...] = ()
    # Agent tasks: the cap on tool-calling turns per rollout (GRPOConfig's
    # max_tool_calling_iterations); 0 for single-turn tasks.
    tool_iterations: int = 0

    @property
    def sample_data(self) -> str:
        return f"data/sample_{self.name}.jsonl"


# The code sandbox's recipe fields (sandbox/arguments.py), shared by the tasks that run programs.
SANDBOX_ARGUMENTS = (
    Argument("sandbox_workers", 2, "programs run in parallel when scoring a batch"),
    Argument("sandbox_timeout", 5.0, "wall-clock seconds per program, tests included"),
    Argument("sandbox_memory_mb", 512, "memory limit per program"),
    Argument(
        "sandbox_isolation",
        "auto",
        "auto: bubblewrap, else unshare, else refuse; `process` = weaker, warned",
    ),
    Argument("sandbox_python", None, "Python 3.11+ running the programs; null: this one"),
)


def agent_completion_tokens(turn_tokens: int, result_tokens: int, iterations: int) -> int:
    """An agent rollout's completion budget: TRL counts the whole exchange after the prompt
    (every assistant turn and every tool result appended to it) against max_completion_length,
    so it holds one turn per tool-calling iteration plus the final answer, and one tool result
    per iteration."""
    return turn_tokens * (iterations + 1) + result_tokens * iterations


STRICT = Reward("strict_format", 0.5, "1 for exactly <think>...</think><answer>...</answer>")
PARTIAL = Reward("partial_format", 0.5, "0.25 per tag, minus text after </answer>")
OVERLONG_WHY = "0 until the last quarter of max_completion_length, then down to -1"

MATH = TaskSpec(
    name="math",
    label="Math word problems (GSM8K / MATH-style answers, checked with math-verify)",
    dataset_name="openai/gsm8k",
    dataset_config="main",
    train_split="train",
    test_split="test",
    prompt_column="question",
    answer_column="answer",
    system_prompt=(
        "You solve math problems. " + FORMAT_INSTRUCTIONS + " The final answer is only the "
        "result, without units or words: a number such as 18 or 0.5, or a LaTeX expression "
        "such as \\frac{3}{4}, 2\\sqrt{2}, (1, 2) or \\text{Monday}."
    ),
    rewards=(
        Reward(
            "math_correctness", 2.0, "1 if the final answer equals the gold answer", "correctness"
        ),
        STRICT,
        PARTIAL,
        Reward("soft_overlong", 0.5, OVERLONG_WHY, "length"),
    ),
    completion_tokens=512,
    prompt_tokens=384,
    dataset_note=(
        "`openai/gsm8k` (config `main`): `question` is the prompt, `answer` is a worked "
        "solution ending in `#### <number>`; the reward compares that number."
    ),
    example_prompt="A shop sells pens at 3 dollars each. How much do 7 pens cost?",
    sample_what="first 32 rows of the GSM8K test split (`question`, `answer`)",
    sample_source="github.com/openai/grade-school-math, `grade_school_math/data/test.jsonl`",
    sample_license="MIT, Copyright (c) 2021 OpenAI",
    metric_note="`accuracy`, the final answer equals the gold answer (math-verify)",
)

CODE = TaskSpec(
    name="code",
    label="Python code, checked by running unit tests in a local sandbox (MBPP, HumanEval)",
    dataset_name="google-research-datasets/mbpp",
    dataset_config="full",
    train_split="train",
    test_split="test",
    prompt_column="text",
    answer_column="test_list",
    system_prompt=(
        "You write Python. " + FORMAT_INSTRUCTIONS + " The answer is one ```python code "
        "block that defines the function the tests call, without tests or example usage."
    ),
    rewards=(
        Reward(
            "code_correctness",
            2.0,
            "fraction of the row's tests passed in the sandbox",
            "correctness",
        ),
        Reward("code_block_format", 0.5, "1 for exactly one ```python block in the answer"),
        PARTIAL,
        Reward("soft_overlong", 0.5, OVERLONG_WHY, "length"),
    ),
    completion_tokens=768,
    prompt_tokens=768,
    dataset_note=(
        "`google-research-datasets/mbpp` (config `full`): `text` is the problem, "
        "`test_list` the asserts the code must pass (shown in the prompt, since they name the "
        "function), `code` a reference solution, `test_setup_code` code run before the tests. "
        "HumanEval (`openai/openai_humaneval`, split `test`) works too: `prompt_column: prompt`, "
        "`answer_column: test`, `entry_point_column: entry_point`, `stub_column: prompt`, "
        "`solution_column: canonical_solution`, `setup_column: null`."
    ),
    example_prompt="Write a function to return the largest of three numbers.",
    sample_what="MBPP problems task_id 1-24 (`text`, `code`, `test_list`, `test_setup_code`)",
    sample_source="github.com/google-research/google-research, `mbpp/mbpp.jsonl`",
    sample_license="CC BY 4.0, Google (Austin et al. 2021, arXiv:2108.07732)",
    metric_note="`pass_rate`, the share of the row's tests the program passes",
    arguments=(
        *SANDBOX_ARGUMENTS,
        Argument("solution_column", "code", "reference solution (ideal completions only)"),
        Argument("setup_column", "test_setup_code", "code run before the tests; null if none"),
        Argument("entry_point_column", None, "HumanEval: column naming the checked function"),
        Argument("stub_column", None, "HumanEval: `prompt`, the code the solution completes"),
    ),
)

JSON = TaskSpec(
    name="json",
    label="Structured JSON output validated against each row's JSON Schema",
    dataset_name="NousResearch/json-mode-eval",
    dataset_config=None,
    train_split="train",
    test_split="train",
    prompt_column="prompt",
    answer_column="completion",
    system_prompt=(
        "You extract structured data. Reply with only a JSON object that follows the JSON "
        "Schema in the message: no explanation and no text before or after it (a ```json "
        "fence is allowed)."
    ),
    rewards=(
        Reward(
            "json_field_match",
            2.0,
            "fraction of the reference object's fields matched",
            "correctness",
        ),
        Reward("json_schema_valid", 1.0, "1 if the JSON validates against the row's schema"),
        Reward("json_only", 0.5, "1 for nothing but JSON, -1 for no JSON"),
        Reward("soft_overlong", 0.25, OVERLONG_WHY, "length"),
    ),
    completion_tokens=384,
    prompt_tokens=1024,
    dataset_note=(
        "`NousResearch/json-mode-eval` (100 rows, one `train` split): `prompt` is a chat whose "
        "user message is the request, `completion` the reference JSON, `schema` the JSON "
        "Schema (added to the prompt). Hold out rows of your own data for evaluation."
    ),
    example_prompt="Extract the name, age and city as JSON: Lena is 31 and lives in Graz.",
    sample_what="20 extraction requests (`prompt` chat, `completion` JSON, `schema`)",
    sample_source=WRITTEN_HERE,
    sample_license=WRITTEN_LICENSE,
    metric_note=(
        "`field_f1` (fields right vs. fields given and expected), `field_match` and `schema_valid`"
    ),
    arguments=(Argument("schema_column", "schema", "column with each row's JSON Schema"),),
    extra_dependencies=("jsonschema>=4.20,<5",),
)

CLASSIFICATION = TaskSpec(
    name="classification",
    label="Classification / fact-check: one label from a fixed set",
    dataset_name="fancyzhx/ag_news",
    dataset_config=None,
    train_split="train",
    test_split="test",
    prompt_column="text",
    answer_column="label",
    system_prompt=(
        "You classify texts. Choose exactly one of the labels listed in the message. You may "
        "reason first inside <think> </think> tags; then write only the label inside "
        "<answer> </answer> tags."
    ),
    rewards=(
        Reward(
            "label_correctness", 2.0, "1 if the answered label is the gold label", "correctness"
        ),
        Reward("label_in_set", 0.5, "1 if the answer is one of the labels"),
        Reward("answer_tag_format", 0.5, "1 for one single-line <answer> block at the end"),
        Reward("soft_overlong", 0.25, OVERLONG_WHY, "length"),
    ),
    completion_tokens=256,
    prompt_tokens=512,
    dataset_note=(
        "`fancyzhx/ag_news`: `text` is a news snippet, `label` one of World, Sports, "
        "Business, Sci/Tech (class ids become their names). For fact-checking, point the "
        "recipe at claims and set `labels`, e.g. [SUPPORTED, REFUTED, NOT ENOUGH INFO]."
    ),
    example_prompt="The striker signed a new contract. Labels: World, Sports, Business, Sci/Tech",
    sample_what="24 news-style sentences (`text`, `label`)",
    sample_source=WRITTEN_HERE,
    sample_license=WRITTEN_LICENSE,
    metric_note="`accuracy` (the gold label) and `valid_label` (one of the labels)",
    arguments=(
        Argument("labels", ["World", "Sports", "Business", "Sci/Tech"], "the allowed answers"),
    ),
)

CUSTOM = TaskSpec(
    name="custom",
    label="Custom: a working short-answer example to edit (prompt builder + reward)",
    dataset_name="data/sample_custom.jsonl",
    dataset_config=None,
    train_split="train",
    test_split="test",
    prompt_column="question",
    answer_column="answer",
    system_prompt=(
        "Answer the question. " + FORMAT_INSTRUCTIONS + " The answer is a word or a short phrase."
    ),
    rewards=(
        Reward(
            "exact_answer", 2.0, "1 if the answer equals the gold answer (edit it)", "correctness"
        ),
        STRICT,
        PARTIAL,
    ),
    completion_tokens=256,
    prompt_tokens=256,
    dataset_note=(
        "no Hub dataset: the recipe trains on `data/sample_custom.jsonl` (`question`, "
        "`answer`). Replace it with your data and edit `tasks/custom_task.py` and "
        "`rewards/custom_rewards.py` (marked EDIT HERE)."
    ),
    example_prompt="What is the capital of Italy?",
    sample_what="20 short-answer questions (`question`, `answer`)",
    sample_source=WRITTEN_HERE,
    sample_license=WRITTEN_LICENSE,
    metric_note="`accuracy` of `exact_answer`; list your own in the task file's `TASK.metrics`",
)

TOOL_ITERATIONS = 3
TOOLS = TaskSpec(
    name="tools",
    label="Agent: multi-turn tool use (Python for math, lookup in a local knowledge base)",
    dataset_name="data/sample_tools.jsonl",
    dataset_config=None,
    train_split="train",
    test_split="test",
    prompt_column="question",
    answer_column="answer",
    system_prompt=(
        "You solve problems with tools. Call a tool whenever it helps instead of guessing: "
        "run_python to compute, search and open to look facts up in the knowledge base. When "
        "you know the answer, write only the final answer inside <answer> </answer> tags (a "
        "number, a short phrase, or SUPPORTED, REFUTED or NOT ENOUGH INFO for a claim)."
    ),
    rewards=(
        Reward(
            "tool_answer_correctness",
            2.0,
            "1 if the final answer equals the gold answer (math-verify for python rows)",
            "correctness",
        ),
        Reward("tool_call_format", 0.5, "0.5 for a well-formed tool call, 0.5 for a final answer"),
        Reward("tool_call_errors", 0.5, "minus the share of tool calls that failed"),
        Reward("tool_call_cost", 0.5, "-tool_call_cost per call past free_tool_calls", "length"),
    ),
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
    example_prompt="A box holds 12 eggs. How many eggs are in 17 boxes?",
    sample_what=(
        "24 rows alternating environments: 12 GSM8K test questions for the Python tool (rows "
        "36-106 of the test split; code that prints each answer) and 12 questions and claims "
        "about the fictional archipelago of `data/sample_corpus.jsonl` for the lookup tools"
    ),
    sample_source=(
        "github.com/openai/grade-school-math, `grade_school_math/data/test.jsonl` (python rows); "
        "written for grpo-template (lookup rows, every `ideal_calls`)"
    ),
    sample_license="MIT, Copyright (c) 2021 OpenAI (GSM8K questions); CC0-1.0 (the rest)",
    metric_note=(
        "`success` (the final answer is right), `tool_format` (well-formed calls and a final "
        "answer) and `calls` per episode"
    ),
    arguments=(
        Argument("environment_column", "environment", "each row's environment; null: default"),
        Argument("default_environment", "python", "for rows without one: python or lookup"),
        Argument("ideal_calls_column", "ideal_calls", "tool calls of an ideal rollout (debug)"),
        Argument("corpus", "data/sample_corpus.jsonl", "the lookup tools' documents (JSONL/CSV)"),
        Argument("corpus_id_column", "id", "document id column"),
        Argument("corpus_title_column", "title", "document title column"),
        Argument("corpus_text_column", "text", "document text column"),
        Argument("search_results", 3, "hits one search returns"),
        Argument("tool_output_chars", 600, "longest tool result the model sees"),
        Argument("tool_call_cost", 0.1, "reward cost of each call past free_tool_calls"),
        Argument("free_tool_calls", 2, "calls an answer may need at no cost"),
        *SANDBOX_ARGUMENTS,
    ),
    extra_dependencies=("bm25s>=0.3,<0.4",),
    tool_iterations=TOOL_ITERATIONS,
)

TASKS: dict[str, TaskSpec] = {t.name: t for t in (MATH, CODE, JSON, CLASSIFICATION, CUSTOM, TOOLS)}
DEFAULT_TASK = "math"


def lookup(name: str) -> TaskSpec:
    return TASKS[name]
