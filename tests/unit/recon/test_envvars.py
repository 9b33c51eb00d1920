"""The environment in effect (``recon.envvars``): NCCL and engine groups, secrets redacted."""

from __future__ import annotations

from inferlab.recon.envvars import env_in_effect
from inferlab.secrets import REDACTED

# -- environment and server ------------------------------------------------------------------


def test_env_groups_and_secrets() -> None:
    got = env_in_effect(
        {
            "NCCL_IB_HCA": "mlx5_0",
            "NCCL_SOCKET_IFNAME": "eth0",
            "TORCH_NCCL_BLOCKING_WAIT": "1",
            "CUDA_VISIBLE_DEVICES": "0,1",
            "VLLM_API_KEY": "sk-live-123",
            "SGLANG_TOKEN": "hf_abc",
            "HOME": "/root",
            "MY_NCCL_NOTE": "x",
        }
    )
    assert got["nccl"] == {
        "NCCL_IB_HCA": "mlx5_0",
        "NCCL_SOCKET_IFNAME": "eth0",
        "TORCH_NCCL_BLOCKING_WAIT": "1",
    }
    assert got["cuda"] == {"CUDA_VISIBLE_DEVICES": "0,1"}
    assert got["engine"] == {"SGLANG_TOKEN": REDACTED, "VLLM_API_KEY": REDACTED}
