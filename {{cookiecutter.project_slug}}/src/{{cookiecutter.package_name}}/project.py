"""The answers this project was generated with (also recorded in `.cookiecutter.json`), and what
the template derived from them for this machine size.

Code reads these instead of guessing: the smoke run builds a tiny model of the same architecture
as the real one, `doctor` compares the machine with the tier, `launch` spreads the tier's GPUs.
"""

MODEL_ID = {{ grpo("model_id") | tojson }}
TASK_TYPE = {{ cookiecutter.task_type | tojson }}
BACKEND = {{ cookiecutter.backend | tojson }}
GPU_TIER = {{ cookiecutter.gpu_tier | tojson }}
TINY_ARCH = {{ grpo("tiny_arch") | tojson }}
CHAT_TEMPLATE = {{ grpo("chat_template") | tojson }}  # trl/chat_templates/<name>.jinja ("": none)
# The reward-model recipe's base model (configs/reward_model.yaml): its offline tiny stand-in's
# architecture and chat template.
REWARD_TINY_ARCH = {{ grpo("reward_tiny_arch") | tojson }}
REWARD_CHAT_TEMPLATE = {{ grpo("reward_chat_template") | tojson }}
# The model card's recommended sampling for the chat mode the recipe renders [its source]: what
# evaluate and infer decode with by default (inference.Decoding); None: greedy.
RECOMMENDED_SAMPLING = {{ grpo("recommended_sampling") }}
SAMPLE_DATA = {{ grpo("sample_data") | tojson }}
EXAMPLE_PROMPT = {{ grpo("example_prompt") | tojson }}
GATED = {{ "True" if grpo("gated") else "False" }}  # the base model needs an accepted licence
TIER_MEMORY_GIB = {{ grpo("tier_memory_gib") }}  # per GPU (RAM for the cpu tier)
TIER_GPUS = {{ grpo("num_gpus") }}  # per node
TIER_NODES = {{ grpo("num_nodes") }}
TRAINING_PROCESSES = {{ grpo("processes") }}
DISTRIBUTED = {{ grpo("distributed") | tojson }}  # none (one process), ddp, zero2, zero3
ACCELERATE_CONFIG = {{ grpo("accelerate_config") | tojson }}  # for accelerate launch ("": unused)
VLLM_SERVER_GPUS = {{ grpo("vllm_server_gpus") }}
ESTIMATED_PEAK_GIB = {{ grpo("estimated_peak_gib") }}  # per device, from the template's model
