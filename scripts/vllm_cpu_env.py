"""Build (once) the vLLM CPU environment and print its python: ``python scripts/vllm_cpu_env.py``.

The code lives in ``inferlab.envs.vllm_cpu``; this file keeps the script entry point."""

from inferlab.envs.vllm_cpu import ensure_vllm_cpu

if __name__ == "__main__":
    print(ensure_vllm_cpu())
