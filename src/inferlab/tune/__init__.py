"""W8A8 block-FP8 GEMM tuning (``inferlab tune fp8-gemm``)."""
