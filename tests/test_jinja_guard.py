"""Answers cannot execute template code: the guard renders them as plain text."""

import pytest
from cookiecutter.environment import StrictEnvironment

from grpo_template.jinja import renders_as_template

PAYLOADS = [
    "{{ cycler.__init__.__globals__.os.system('touch {sentinel}') }}",
    "{{ lipsum.__globals__['os'].popen('touch {sentinel}').read() }}",
    "{% for c in ().__class__.__base__.__subclasses__() %}{% endfor %}",
    "{{ self._TemplateReference__context }}",
    "{{ ''|attr('__class__') }}",
    "{{ '{0.__class__}'.format(1) }}",
    "{{ 7 * 7 }}",
    "{{ range(10**10)|list }}",
    "{% raw %}x{% endraw %}{{ namespace.__init__ }}",
]


def environment():
    context = {"cookiecutter": {"_extensions": ["grpo_template.jinja.GrpoExtension"]}}
    return StrictEnvironment(context=context)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_payloads_render_as_plain_text(payload, tmp_path):
    sentinel = tmp_path / "pwned"
    text = payload.replace("{sentinel}", str(sentinel))
    env = environment()
    assert not renders_as_template(env, text)
    assert env.from_string(text).render(cookiecutter={}) == text
    assert not sentinel.exists()


@pytest.mark.parametrize(
    "source",
    [
        "{{ cookiecutter.project_name | slugify }}",
        "{{ cookiecutter.project_slug | replace('-', '_') }}",
        "{{cookiecutter.project_slug}}/src/{{cookiecutter.package_name}}",
        "plain text",
    ],
)
def test_template_strings_still_render(source):
    assert renders_as_template(environment(), source)


def test_each_source_compiles_once_per_settings_and_renders_the_same(monkeypatch):
    """A process that generates many projects compiles each template source once; another
    source, or the same source under other settings, compiles on its own (no stale code)."""
    from grpo_template import jinja

    monkeypatch.setattr(jinja, "_COMPILED", {})
    compiled = []
    original = jinja.compiling_once

    def counting(environment):  # counts the compiles the cache does not answer
        compile_source = environment.compile

        def compile(source, *args, **kwargs):
            if isinstance(source, str):
                compiled.append(source)
            return compile_source(source, *args, **kwargs)

        environment.compile = compile
        return original(environment)

    monkeypatch.setattr(jinja, "compiling_once", counting)
    context = {"cookiecutter": {"project_slug": "a-b"}}
    source = "{{ cookiecutter.project_slug }}/src\n"
    first, second = environment(), environment()
    assert first.from_string(source).render(context) == "a-b/src"
    assert second.from_string(source).render(context) == "a-b/src"
    assert compiled.count(source) == 1
    assert second.from_string("{{ cookiecutter.project_slug }}").render(context) == "a-b"
    assert len(compiled) == 2
    kept = StrictEnvironment(
        context={"cookiecutter": {"_extensions": ["grpo_template.jinja.GrpoExtension"]}},
        keep_trailing_newline=True,
    )
    assert kept.from_string(source).render(context) == "a-b/src\n"  # its own settings' code
    assert compiled.count(source) == 2
