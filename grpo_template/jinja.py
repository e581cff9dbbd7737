"""The cookiecutter Jinja extension: `grpo("name")` places a derived value, and a guard makes sure
no answer can execute template code.

Cookiecutter renders every answer given on the command line (`project_name=...`) as a Jinja
template, in an environment without a sandbox, so a payload such as
`{{ cycler.__init__.__globals__.os.system('...') }}` would run. The guard wraps `from_string`
(which cookiecutter uses for answers, defaults, file names and hooks): the template's own strings
(cookiecutter.json and the hooks) and plain `{{ cookiecutter.x }}` references (file names) render
as usual; any other string with template syntax renders as the literal text. The pre-generation
hook then refuses such an answer with one clear line.
"""

from __future__ import annotations

import importlib
import json
import sys
import zlib
from functools import lru_cache
from pathlib import Path

from jinja2 import nodes, pass_context
from jinja2.exceptions import TemplateSyntaxError, UndefinedError
from jinja2.ext import Extension

from . import derived

TEMPLATE_ROOT = Path(__file__).resolve().parent.parent
_DELIMITERS = ("{{", "{%", "{#")
# The Python the rendering runs on: this package and grpo-kit's source, in this template folder.
_SOURCES = (TEMPLATE_ROOT / "grpo_template", TEMPLATE_ROOT / "kit" / "src" / "grpo_kit")
_PACKAGES = ("grpo_template", "grpo_kit")


def source_fingerprint() -> int:
    """A checksum of the template's Python (grpo_template and grpo-kit's source)."""
    checksum = 0
    for folder in _SOURCES:
        for path in sorted(folder.rglob("*.py")):
            checksum = zlib.crc32(path.read_bytes(), zlib.crc32(str(path).encode(), checksum))
    return checksum


_LOADED_FROM = source_fingerprint()


def _strings(value) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set().union(*(_strings(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(_strings(v) for v in value)) if value else set()
    return set()


@lru_cache(maxsize=1)
def trusted_sources() -> frozenset[str]:
    """Template strings the template itself owns: cookiecutter.json values and hook files."""
    owned = _strings(json.loads((TEMPLATE_ROOT / "cookiecutter.json").read_text(encoding="utf-8")))
    for hook in (TEMPLATE_ROOT / "hooks").glob("*.py"):
        owned.add(hook.read_text(encoding="utf-8"))
    return frozenset(owned)


def is_plain_reference(environment, source: str) -> bool:
    """True when the source only substitutes `cookiecutter.<name>` values (as file names do)."""
    try:
        tree = environment.parse(source)
    except TemplateSyntaxError:
        return False
    allowed = (nodes.Template, nodes.Output, nodes.TemplateData, nodes.Name, nodes.Getattr)
    for node in tree.find_all(nodes.Node):
        if not isinstance(node, allowed):
            return False
        if isinstance(node, nodes.Name) and node.name != "cookiecutter":
            return False
        if isinstance(node, nodes.Getattr) and node.attr.startswith("_"):
            return False
    return True


def renders_as_template(environment, source: str) -> bool:
    """Whether `from_string(source)` may execute as a template (else it renders as text)."""
    if not any(d in source for d in _DELIMITERS):
        return True
    return source in trusted_sources() or is_plain_reference(environment, source)


def _refuse(check, answers_so_far) -> str:
    """Run an answers check while cookiecutter asks its questions: a bad answer prints one line
    and stops there, before anything is written and without cookiecutter's traceback (which a
    failing pre-generation hook prints). Renders as nothing when the answers are fine."""
    import sys

    from .answers import AnswerError

    try:
        check(dict(answers_so_far))
    except AnswerError as err:
        print(f"ERROR: {err}", file=sys.stderr)
        raise SystemExit(1) from None
    return ""


def _check(question: str, answers_so_far) -> str:
    """Right after `question` is answered: its check (answers.CHECKS_AFTER)."""
    from .answers import check_answer

    return _refuse(lambda context: check_answer(question, context), answers_so_far)


def _validate(answers_so_far) -> str:
    """After the last question: every answer (answers.validate, as the pre-generation hook)."""
    from .answers import validate

    return _refuse(validate, answers_so_far)


@pass_context
def _grpo(context, name: str):
    try:
        return derived.lookup(context["cookiecutter"], name)
    except KeyError as err:  # an UndefinedError makes cookiecutter remove the half-made folder
        raise UndefinedError(f"grpo() has no value named {name!r}") from err


def current_module():
    """This module, or a fresh import of it when the template's Python changed on disk since it
    was loaded. `cruft update` renders the template at two commits in one process (checking the
    old one out, then the new one, in the same folder): without this the second render would
    compute its values with the first commit's code (its grpo-kit version, its tuning)."""
    if source_fingerprint() == _LOADED_FROM:
        return sys.modules[__name__]
    for name in [n for n in sys.modules if n.split(".")[0] in _PACKAGES]:
        del sys.modules[name]
    return importlib.import_module(__name__)


def _cruft_diff_render() -> bool:
    """Whether cruft renders this for its diff, into a temporary folder (new_project)."""
    from .new_project import rendering_for_cruft_diff

    return rendering_for_cruft_diff()


class GrpoExtension(Extension):
    """Adds `grpo(name)` and `grpo_template_root()`, and guards `from_string`."""

    def __init__(self, environment):
        super().__init__(environment)
        current_module().install(environment)


def install(environment) -> None:
    """Put the template's globals into a Jinja environment and guard its `from_string`."""
    environment.globals["grpo"] = _grpo
    environment.globals["grpo_check"] = _check
    environment.globals["grpo_validate"] = _validate
    environment.globals["grpo_template_root"] = lambda: str(TEMPLATE_ROOT)
    environment.globals["grpo_cruft_diff_render"] = _cruft_diff_render
    compile_string = environment.from_string

    def guarded_from_string(source, globals=None, template_class=None):
        if isinstance(source, str) and not renders_as_template(environment, source):
            literal = {"grpo_literal_text": source}
            return compile_string("{{ grpo_literal_text }}", literal, template_class)
        return compile_string(source, globals, template_class)

    environment.from_string = guarded_from_string
    environment.compile = compiling_once(environment)


# Compiled template code, by source and the settings that shape it. Cookiecutter builds a new
# environment for every project it generates and compiles every file and answer again; a process
# that generates many (the bake matrix, cruft's two renders) compiles each distinct source once.
_COMPILED: dict[tuple, object] = {}
_COMPILED_MAX = 4096
_COMPILE_SETTINGS = (
    "block_start_string", "block_end_string", "variable_start_string", "variable_end_string",
    "comment_start_string", "comment_end_string", "line_statement_prefix", "line_comment_prefix",
    "trim_blocks", "lstrip_blocks", "newline_sequence", "keep_trailing_newline", "optimized",
    "autoescape",
)  # fmt: skip


def compiling_once(environment):
    """`environment.compile`, reusing the code compiled for the same source under the same
    settings, extensions, filters and tests (a compiled template is Python code that looks
    everything else up when it renders)."""
    compile_source = environment.compile

    def settings() -> tuple:  # read when compiling: the environment is complete by then
        return (
            tuple(getattr(environment, name) for name in _COMPILE_SETTINGS),
            tuple(sorted(environment.extensions)),
            tuple(sorted(environment.filters)),
            tuple(sorted(environment.tests)),
        )

    def compile(source, name=None, filename=None, raw=False, defer_init=False):
        if raw or not isinstance(source, str) or callable(environment.autoescape):
            return compile_source(source, name, filename, raw, defer_init)
        key = (settings(), source, name, filename, defer_init)
        code = _COMPILED.get(key)
        if code is None:
            if len(_COMPILED) >= _COMPILED_MAX:
                _COMPILED.clear()
            code = _COMPILED[key] = compile_source(source, name, filename, raw, defer_init)
        return code

    return compile
