"""Test helper: an Nsight Systems SQLite export written here, in the real schema of
``nsys export --type sqlite`` (2024.6, schema 3.16) or, with ``old``, an older export's."""

from __future__ import annotations

import sqlite3
from pathlib import Path

# columns as `nsys export --type sqlite` (2024.6, schema 3.16) writes them
_KERNEL = """CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
 deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,
 streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
 demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER,
 launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL,
 gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL,
 blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,
 dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL,
 localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER,
 graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER)"""
_RUNTIME = """CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
 eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
 returnValue INTEGER NOT NULL, callchainId INTEGER)"""
_NVTX = """CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
 rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
 endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER, int64Value INTEGER,
 doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER,
 jsonText TEXT, binaryData TEXT)"""
_GPU = """CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT,
 busLocation TEXT, isDiscrete INTEGER, l2CacheSize INTEGER, totalMemory INTEGER,
 memoryBandwidth INTEGER, clockRate INTEGER, smCount INTEGER, pwGpuId INTEGER, uuid TEXT)"""

#: per decode step (µs from the step's first launch): name, grid, duration µs
_STEP = [
    (
        "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128>>(Flash_fwd_params)",
        (4, 8, 1),
        50.0,
    ),
    ("_w8a8_block_fp8_matmul", (66, 1, 1), 30.0),
    (
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
        (16, 1, 1),
        10.0,
    ),
    ("my_custom_op_kernel(float*, int)", (264, 1, 1), 10.0),
]


def nsys_db(path: Path, *, old: bool = False) -> Path:
    """Three NVTX ``decode_step_<i>`` ranges on the host, each launching the kernels of
    ``_STEP`` back to back on the GPU (ns). ``old``: names stored as text in a ``name``
    column and the SM count in TARGET_INFO_CUDA_DEVICE, as older exports have it."""
    db = sqlite3.connect(path)
    strings = ["decode_step", "cudaLaunchKernel", *(n for n, _, _ in _STEP)]
    db.execute("CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL)")
    db.executemany("INSERT INTO StringIds VALUES (?,?)", list(enumerate(strings)))
    if old:
        db.execute(
            "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, streamId INTEGER, "
            "correlationId INTEGER, name TEXT, gridX INTEGER, gridY INTEGER, gridZ INTEGER)"
        )
        db.execute("CREATE TABLE TARGET_INFO_CUDA_DEVICE (name TEXT, numMultiprocessors INTEGER)")
        db.execute("INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES ('NVIDIA H100 80GB HBM3', 132)")
    else:
        db.execute(_KERNEL)
        db.execute(_GPU)
        db.execute(
            "INSERT INTO TARGET_INFO_GPU (vmId, id, name, smCount) VALUES (0, 0, 'NVIDIA H200', 132)"
        )
    db.execute(_RUNTIME)
    db.execute(_NVTX)
    corr = 100
    for step in range(3):
        t0 = 1_000_000_000 + step * 2_000_000  # a step every 2 ms
        db.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (?,?,59,?,1)",
            (t0, t0 + 400_000, f"decode_step_{step}"),
        )
        gpu = t0 + 100_000
        for k, (name, (gx, gy, gz), dur) in enumerate(_STEP):
            launch = t0 + 10_000 * (k + 1)
            db.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,0,1,?,1,0,NULL)",
                (launch, launch + 5_000, corr),
            )
            end = gpu + int(dur * 1000)
            if old:
                db.execute(
                    "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,7,?,?,?,?,?)",
                    (gpu, end, corr, name, gx, gy, gz),
                )
            else:
                sid = strings.index(name)
                db.execute(
                    "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, "
                    "streamId, correlationId, demangledName, shortName, registersPerThread, gridX, "
                    "gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, "
                    "localMemoryPerThread, localMemoryTotal, gridId) "
                    "VALUES (?,?,0,1,7,?,?,?,32,?,?,?,128,1,1,0,0,0,0,?)",
                    (gpu, end, corr, sid, sid, gx, gy, gz, corr),
                )
            gpu = end + 2_000  # 2 µs launch gap
            corr += 1
    db.commit()
    db.close()
    return path
