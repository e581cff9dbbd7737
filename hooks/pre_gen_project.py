"""Validate every answer before anything is written.

The answers arrive as JSON data (never as code), and the checks live in the template's tested
`grpo_template.answers`. On a bad answer this prints one line and exits 1; cookiecutter then
removes the project folder, so nothing half-made is left.
"""

import json
import sys

ANSWERS = json.loads(r'''{{ cookiecutter | tojson }}''')
TEMPLATE_ROOT = {{ grpo_template_root() | tojson }}

sys.path.insert(0, TEMPLATE_ROOT)
from grpo_template.answers import AnswerError, validate  # noqa: E402

try:
    validate(ANSWERS)
except AnswerError as err:
    print(f"ERROR: {err}", file=sys.stderr)
    sys.exit(1)
