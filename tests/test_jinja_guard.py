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
