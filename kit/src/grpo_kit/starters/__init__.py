"""The starting points a project is generated with: one package per task type (its `task.py`
and `rewards.py`) and the sample data (`data/`), which grpo-template copies into a project; and
the `train.py`, `merge.py` and `infer.py` scripts (`scripts/`), which `grpo eject` copies into a
project that wants its own (the kit runs the same flow without them). From then on they are the
project's own. They are tested here, as the kit's tests import them like any project's, and
they import only the kit's public API (`grpo_kit.api`). The library never imports them.

`SAMPLES` records where each sample file comes from and its licence (a project's
data/SOURCES.md lists its own).
"""

WRITTEN_HERE = "written for grpo-template"
CC0 = "CC0-1.0 (public domain dedication)"

# file in data/ -> (what it holds, where it comes from, licence)
SAMPLES: dict[str, tuple[str, str, str]] = {
    "sample_math.jsonl": (
        "first 32 rows of the GSM8K test split (`question`, `answer`)",
        "github.com/openai/grade-school-math, `grade_school_math/data/test.jsonl`",
        "MIT, Copyright (c) 2021 OpenAI",
    ),
    "sample_code.jsonl": (
        "MBPP problems task_id 1-24 (`text`, `code`, `test_list`, `test_setup_code`)",
        "github.com/google-research/google-research, `mbpp/mbpp.jsonl`",
        "CC BY 4.0, Google (Austin et al. 2021, arXiv:2108.07732)",
    ),
    "sample_json.jsonl": (
        "20 extraction requests (`prompt` chat, `completion` JSON, `schema`)",
        WRITTEN_HERE,
        CC0,
    ),
    "sample_classification.jsonl": (
        "24 news-style sentences (`text`, `label`)",
        WRITTEN_HERE,
        CC0,
    ),
    "sample_custom.jsonl": ("20 short-answer questions (`question`, `answer`)", WRITTEN_HERE, CC0),
    "sample_tools.jsonl": (
        "24 rows alternating environments: 12 GSM8K test questions for the Python tool (rows "
        "36-106 of the test split; code that prints each answer) and 12 questions and claims "
        "about the fictional archipelago of `data/sample_corpus.jsonl` for the lookup tools",
        "github.com/openai/grade-school-math, `grade_school_math/data/test.jsonl` (python rows); "
        "written for grpo-template (lookup rows, every `ideal_calls`)",
        "MIT, Copyright (c) 2021 OpenAI (GSM8K questions); CC0-1.0 (the rest)",
    ),
    "sample_corpus.jsonl": (
        "31 short documents about the fictional Orvandine Archipelago (`id`, `title`, `text`): "
        "the lookup tools' knowledge base",
        WRITTEN_HERE,
        CC0,
    ),
    "sample_preferences.jsonl": (
        "47 preference pairs (`prompt`, `chosen`, `rejected`): math, code, labels and short "
        "answers; chosen is right and in the `<think>`/`<answer>` format, rejected is wrong or "
        "badly formatted",
        WRITTEN_HERE,
        CC0,
    ),
}
