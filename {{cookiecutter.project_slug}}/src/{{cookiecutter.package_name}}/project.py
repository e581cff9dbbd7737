"""The answers this project was generated with (also recorded in `.cookiecutter.json`).

Code reads these instead of guessing: the smoke run builds a tiny model of the same architecture
as the real one, and the checks compare the machine against the chosen tier.
"""

MODEL_ID = {{ grpo("model_id") | tojson }}
TASK_TYPE = {{ cookiecutter.task_type | tojson }}
BACKEND = {{ cookiecutter.backend | tojson }}
GPU_TIER = {{ cookiecutter.gpu_tier | tojson }}
TINY_ARCH = {{ grpo("tiny_arch") | tojson }}
SAMPLE_DATA = {{ grpo("sample_data") | tojson }}
EXAMPLE_PROMPT = {{ grpo("example_prompt") | tojson }}
