"""Classification rewards on golden completions, and the label set coming from the recipe."""

import pytest
from conftest import sample_recipe
from grpo_kit.errors import UserError
from grpo_kit.rewards import resolve
from grpo_kit.starters.classification.task import TASK, TaskArguments

LABELS = ["World", "Sports", "Business", "Sci/Tech"]


def score(name, completion, labels=LABELS, **columns):
    settings = TASK.reward_settings(TaskArguments(labels=labels))
    func = resolve([name], TASK.reward_table, settings)[0]
    return func([completion], **{k: [v] for k, v in columns.items()})[0]


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("<answer>Sports</answer>", 1.0),
        ("<think>a match</think>\n<answer> sports </answer>", 1.0),
        ("<answer>SPORTS</answer>", 1.0),
        ("<answer>World</answer>", 0.0),
        ("Sports", 0.0),  # no answer tag
        ("<answer>Sports</answer><answer>World</answer>", 0.0),  # the last answer counts
        # An answer inside the reasoning is reasoning: only what follows the last </think> counts.
        ("<think><answer>Sports</answer></think><answer>World</answer>", 0.0),
        ("<think><answer>Sports</answer></think> World", 0.0),
        ("<think><answer>World</answer></think><answer>Sports</answer>", 1.0),
    ],
)
def test_label_correctness(completion, expected):
    assert score("label_correctness", completion, answer="Sports") == expected


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("<answer>Business</answer>", 1.0),
        ("<answer>sci/tech</answer>", 1.0),
        ("<answer>Politics</answer>", 0.0),
        ("no tag", 0.0),
    ],
)
def test_label_in_set(completion, expected):
    assert score("label_in_set", completion) == expected


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("<answer>World</answer>", 1.0),
        ("Because of the election.\n<answer>World</answer>\n", 1.0),
        ("<think>x</think><answer>World</answer>", 1.0),
        ("<answer>World</answer> done", 0.5),
        ("<answer>World\nSports</answer>", 0.5),
        ("World", 0.0),
        ("<answer>World</answer><answer>World</answer>", 0.0),
    ],
)
def test_answer_tag_format(completion, expected):
    assert score("answer_tag_format", completion) == expected


@pytest.mark.parametrize(
    "written",
    [
        "Sports.",
        '"Sports"',
        "'sports'",
        "**Sports**",
        "*Sports*",
        "_Sports_",
        "`Sports`",
        "**Sports**.",
        "\u201cSports\u201d",
        "(Sports)",
        "Sports!",
        "\uff33\uff50\uff4f\uff52\uff54\uff53",  # full-width letters
        "Spo\u200brts",  # a zero-width space inside
        "\ufeffSports\u200d",
        "  SPORTS  ",
    ],
)
def test_decoration_around_the_label_is_ignored(written):
    """Quotes, markdown emphasis, punctuation, Unicode width and zero-width characters are not
    the label (normalise_label, shared with the custom task)."""
    completion = f"<think>a match</think><answer>{written}</answer>"
    assert score("label_correctness", completion, answer="Sports") == 1.0
    assert score("label_in_set", completion) == 1.0


@pytest.mark.parametrize(
    "written", ["Sports-ish", "not Sports", "Sportsman", "Sports World", "Sports/Tech", "S ports"]
)
def test_a_label_inside_other_words_is_not_the_label(written):
    completion = f"<answer>{written}</answer>"
    assert score("label_correctness", completion, answer="Sports") == 0.0
    assert score("label_in_set", completion) == 0.0


@pytest.mark.parametrize(
    ("written", "gold", "expected"),
    [
        ("not entailment", "entailment", 0.0),
        ("entailment", "not entailment", 0.0),
        ("**Entailment**", "entailment", 1.0),
        ("Not entailment.", "not entailment", 1.0),
        ("entailment-ish", "entailment", 0.0),
    ],
)
def test_nli_labels_that_share_a_word_stay_apart(written, gold, expected):
    labels = ["entailment", "not entailment"]
    completion = f"<answer>{written}</answer>"
    assert score("label_correctness", completion, labels, answer=gold) == expected


def test_labels_come_from_the_recipe():
    fact_check = ["SUPPORTED", "REFUTED"]
    assert score("label_in_set", "<answer>refuted</answer>", labels=fact_check) == 1.0
    assert score("label_in_set", "<answer>World</answer>", labels=fact_check) == 0.0
    assert score("label_in_set", "<answer>World</answer>") == 1.0  # no state left behind


def test_bad_label_sets_are_refused():
    with pytest.raises(UserError, match="repeat"):
        TASK.reward_settings(TaskArguments(labels=["Yes", "yes"]))
    with pytest.raises(UserError, match="repeat"):
        TASK.reward_settings(TaskArguments(labels=["Yes", "**Yes.**"]))
    with pytest.raises(UserError, match="at least one"):
        TASK.reward_settings(TaskArguments(labels=["Yes", "..."]))
    with pytest.raises(UserError, match="at least one"):
        TASK.reward_settings(TaskArguments(labels=[]))


def test_a_gold_label_outside_the_set_is_a_data_error(tmp_path, projects):
    from grpo_kit import data

    recipe = sample_recipe(projects("classification"))

    path = tmp_path / "d.jsonl"
    path.write_text('{"text": "a", "label": "World"}\n{"text": "b", "label": "Weather"}\n')
    script = type(recipe.script)(**{**vars(recipe.script), "dataset_name": str(path)})
    with pytest.raises(data.DataError, match="row 2: label 'Weather' is not in labels") as err:
        data.load_training_rows(script, recipe.task, TASK)
    # where the labels go, with the data's own (issue 41's walk: the fix was not named)
    assert "in configs/local.yaml, e.g. `labels: [World, Weather]` (2 found in" in str(err.value)
