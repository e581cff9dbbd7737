"""Model text is shown safely: report.md renders it literally (no remote image, no unclosed
`<details>` swallowing the report), and nothing printed to a terminal carries its escape
sequences (OSC 52 clipboard writes, clear-screen), newlines and tabs kept."""

import io
import json
from contextlib import redirect_stdout

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from grpo_kit import answering
from grpo_kit.commands import report
from grpo_kit.text import for_terminal, guard_trl_sample_print, markdown_code

OSC52 = "\x1b]52;c;cm0gLXJmIH4K\x07"  # writes `rm -rf ~` to the clipboard
CLEAR = "\x1b[2J\x1b[H"
HOSTILE = f"{OSC52}{CLEAR}\x9b2J\x1b]8;;http://x.test\x1b\\link\x1b]8;;\x1b\\ line 1\n\tline 2\r\n"
HTML = '<img src="https://tracker.test/p.png"> <details><summary>x</summary> `code` ``two``'


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (HOSTILE, "link line 1\n\tline 2\n"),
        ("plain text, unchanged: 18% <b> ```", "plain text, unchanged: 18% <b> ```"),
        ("bell\x07 back\x08space\r over", "bell backspace over"),
        ("\x1b]0;unterminated title\nnext line", "\nnext line"),
    ],
)
def test_for_terminal_drops_escape_sequences_and_controls(text, shown):
    assert for_terminal(text) == shown


def test_markdown_code_renders_literally():
    from markdown_it import MarkdownIt

    html = MarkdownIt().render(f"- completion: {markdown_code(HTML + HOSTILE)}\n\n## After\n")
    assert "<img" not in html and "<details" not in html and "<h2>After</h2>" in html
    assert "&lt;img src=" in html and "\x1b" not in html
    assert markdown_code("") == "(empty)" and markdown_code("`a`") == "`` `a` ``"


def test_report_md_escapes_logged_completions(tmp_path):
    run = tmp_path / "run"
    (run / "completions").mkdir(parents=True)
    (run / "trainer_state.json").write_text('{"log_history": [{"step": 1, "reward": 0.5}]}')
    rows = [
        {"step": 1, "prompt": "What is 2+2? <details>", "completion": HTML + HOSTILE,
         "math_correctness": 1.0},
        {"step": 1, "prompt": "What is 2+2?", "completion": "<script>x</script>",
         "math_correctness": 0.0},
    ]  # fmt: skip
    pq.write_table(pa.Table.from_pylist(rows), run / "completions" / "completions_00001.parquet")
    out = report.report([str(run), "--output-dir", str(tmp_path / "report")])
    text = (out / "report.md").read_text(encoding="utf-8")
    from markdown_it import MarkdownIt

    html = (
        MarkdownIt().render(text).split("<h2>Completions</h2>")[1]
    )  # the report's own images aside
    for tag in ("<img", "<details", "<script"):
        assert tag not in html
    assert "\x1b" not in text and "&lt;img src=" in html


def test_infer_prints_no_escape_sequences(capsys):
    answering.show([f"prompt {CLEAR}"], [HOSTILE], None)
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x9b" not in out and "link line 1\n\tline 2" in out


def test_trls_printed_sample_of_completions_has_no_escape_sequences():
    pytest.importorskip("rich")
    from trl.trainer import grpo_trainer

    guard_trl_sample_print()
    guard_trl_sample_print()  # idempotent
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        grpo_trainer.print_prompt_completions_sample(
            [[{"role": "user", "content": f"q {CLEAR}"}]], [f"a {OSC52}"], {"r": [1.0]}, [0.0], 1
        )
    out = buffer.getvalue()
    assert "\x1b]52" not in out and "\x1b[2J" not in out and "q" in out


def test_reward_debug_prints_given_completions_without_escape_sequences(
    projects, monkeypatch, tmp_path, capsys
):
    from grpo_kit.commands import reward_debug

    monkeypatch.chdir(projects("math"))
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps({"completion": f"<answer>18</answer> {HOSTILE}", "row": 0}) + "\n")
    assert reward_debug.main(["--completions", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x9b" not in out and "<answer>18</answer>" in out
