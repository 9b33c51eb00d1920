"""The host environment (``inferlab.environment``): CUDA_VISIBLE_DEVICES mapped to NVML devices."""

from __future__ import annotations

import os

from inferlab.environment import visible_gpus


def test_cuda_visible_devices_maps_to_nvml_devices() -> None:
    gpus = [{"index": i, "name": "NVIDIA H200", "uuid": f"GPU-{i}aaa-{i}"} for i in range(4)]
    got, notes = visible_gpus(gpus, "2,3")
    assert [g["index"] for g in got] == [2, 3] and notes == []
    got, _ = visible_gpus(gpus, "GPU-1aaa")
    assert [g["index"] for g in got] == [1]
    got, notes = visible_gpus(gpus, "1,7,2")  # CUDA stops at the first invalid entry
    assert [g["index"] for g in got] == [1] and "'7'" in notes[0]
    assert visible_gpus(gpus, None)[0] == gpus and visible_gpus(gpus, "")[0] == []
    mixed = [*gpus[:1], {"index": 1, "name": "NVIDIA L4", "uuid": "GPU-x"}]
    env = {k: v for k, v in os.environ.items() if k != "CUDA_DEVICE_ORDER"}
    os.environ.pop("CUDA_DEVICE_ORDER", None)
    try:
        assert "CUDA_DEVICE_ORDER" in visible_gpus(mixed, "1")[1][-1]
    finally:
        os.environ.clear()
        os.environ.update(env)
