"""Commands around training: preflight (doctor, gpu_check), offline checks (smoke, tiny_model,
reward_debug) and the run report."""
