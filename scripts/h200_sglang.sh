#!/usr/bin/env bash
# The seeds' campaign on SGLang 0.5.17 on the lent H200 (examples/sglang-h200.toml; docs/gpu.md).
#
#   bash scripts/h200_sglang.sh stage N     # copy part N (.sglang/NN, carried) to /tmp/sgstage
#   bash scripts/h200_sglang.sh run check   # join + unpack the parts, pre-flight imports, the
#                                           # FP8 model; no server (seconds: run it first)
#   bash scripts/h200_sglang.sh run part1   # recon, baseline and A (tuned FP8 GEMM from the
#                                           # baseline's log), profiled at C=1 and C=32
#   bash scripts/h200_sglang.sh run part2   # ngram, graph-oom, graph-oom-995 (fail), graph-oom-fix:
#                                           # resumed from the store
#   bash scripts/h200_sglang.sh run lossy   # examples/sglang-h200-fp8.toml: block FP8 against its
#                                           # bf16 twin, gated through the stepwise scorer
#
# Here, first: python3 scripts/h200_sglang_wheels.py build  (→ .sglang/01 …).
# The calls go back to back (a machine is given back after ~30 s idle, and /tmp with it):
# `stage 1` … `stage N-1` carrying .sglang/01 …, then `run check` carrying the last part, then
# `run part1` and `run part2` (nothing carried: the site is unpacked in /tmp/sgl-site).
# A later part resumes from the store the last one left in /tmp/h200s, or from
# .gpu-run/h200-sglang.db when the machine is a fresh one (carry .gpu-run and stage again).
# Each part gives `inferlab run` what is left of H200_BUDGET_S (540 s) and interrupts it (Ctrl-C:
# the server's process group is stopped, every finished point is kept).
# H200_LOCAL_TEST=1: check the script's steps on a CPU machine (no SGLang: stops after the model).
set -uo pipefail
export COLUMNS=${COLUMNS:-160}
CMD=${1:-}
ARG=${2:-}
usage() { echo "usage: $0 stage N | run check|part1|part2|lossy" >&2; exit 2; }
case "$CMD" in
  stage) [[ "$ARG" =~ ^[0-9]+$ ]] || usage ;;
  run) case "$ARG" in check | part1 | part2 | lossy) ;; *) usage ;; esac ;;
  *) usage ;;
esac

T0=$(date +%s)
BUDGET_S=${H200_BUDGET_S:-540}
OUTDIR=${OUT:-/tmp/h200s-out}
WORK=${H200_WORK:-/tmp/h200s}
STAGE=${H200_STAGE:-/tmp/sgstage}
SITE=${H200_SITE:-/tmp/sgl-site}
mkdir -p "$OUTDIR" "$WORK" "$STAGE"
LOG="$OUTDIR/run.log"
say() { echo "[$(($(date +%s) - T0)) s] $*" | tee -a "$LOG"; }
left() { echo $((BUDGET_S - ($(date +%s) - T0))); }
part_dir() { printf '.sglang/%02d' "$1"; }

if [ "$CMD" = stage ]; then
  d=$(part_dir "$ARG")
  [ -f "$d/site.tar.xz.part" ] || { say "stage $ARG: $d/site.tar.xz.part not carried"; exit 1; }
  cp "$d/site.tar.xz.part" "$STAGE/$(printf %02d "$ARG").part" && cp "$d/SHA256SUMS" "$STAGE/"
  say "staged part $ARG: $(ls "$STAGE" | tr '\n' ' ')"
  exit 0
fi

install_site() {  # join the staged parts (and one carried now), check, unpack into $SITE
  [ -f "$SITE/sglang/__init__.py" ] && { say "site: $SITE already unpacked"; return 0; }
  for d in .sglang/[0-9][0-9]; do
    [ -f "$d/site.tar.xz.part" ] && cp "$d/site.tar.xz.part" "$STAGE/${d#.sglang/}.part" && cp "$d/SHA256SUMS" "$STAGE/"
  done
  [ -f "$STAGE/SHA256SUMS" ] || { say "no staged parts: run 'stage 1' … first"; return 1; }
  want=$(sed -n 's/^\([0-9]*\) parts$/\1/p' "$STAGE/SHA256SUMS")
  have=$(ls "$STAGE"/*.part 2>/dev/null | wc -l)
  [ "$have" = "$want" ] || { say "have $have of $want parts in $STAGE: stage the others"; return 1; }
  say "joining $have parts"
  sum=$(cat "$STAGE"/*.part | sha256sum | cut -d' ' -f1)
  [ "$sum" = "$(cut -d' ' -f1 "$STAGE/SHA256SUMS" | head -1)" ] || { say "checksum mismatch"; return 1; }
  mkdir -p "$SITE"
  cat "$STAGE"/*.part | xz -d -T0 | tar -x -C "$SITE" || { say "unpack failed"; return 1; }
  for f in "$SITE"/bin/*; do [ -f "$f" ] && sed -i '1s|^#!.*python.*$|#!/usr/bin/env python3|' "$f"; done
  rm -f "$STAGE"/*.part
  say "unpacked into $SITE ($(du -sh "$SITE" | cut -f1))"
}

LOCAL=${H200_LOCAL_TEST:-0}
if [ "$LOCAL" != 1 ]; then
  install_site || exit 1
fi
export PYTHONUNBUFFERED=1 PATH="$SITE/bin:$PATH"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false SGLANG_USE_SGL_FA3_KERNEL=1
# inferlab runs from the tree; the engine's own Python gets the carried site first
export PYTHONPATH="$SITE:$PWD/src"
export INFERLAB_SERVE_PYTHONPATH="$SITE" INFERLAB_ENGINE_PYTHONPATH="$SITE" INFERLAB_SGLANG_PYTHON="$(command -v python3)"
export INFERLAB_GPU_MODEL="$WORK/m1b-fp8ct"
DB="$WORK/h200-sglang.db"
IL=(python3 -m inferlab)
CAMPAIGN=src/inferlab/examples/sglang-h200.toml
NAME=sglang-h200

if [ ! -f "$INFERLAB_GPU_MODEL/model.safetensors" ]; then
  # compressed-tensors: SGLang 0.5.17's Llama loader drops weight_scale_inv (models/fp8.py)
  say "model: inferlab model random --preset 1b --quant fp8-block-ct (seed 0)"
  preset=1b; [ "$LOCAL" = 1 ] && preset=test
  "${IL[@]}" model random --preset "$preset" --quant fp8-block-ct "$INFERLAB_GPU_MODEL" 2>&1 | tee -a "$LOG" || exit 1
fi
[ "$LOCAL" = 1 ] && { say "local test: stopping before SGLang"; exit 0; }

preflight() {  # seconds, before the minutes of a launch: nvcc, the GPU, every module a dense Llama needs
  say "preflight: nvcc, GPU, imports"
  { ls -l /usr/local/cuda/bin/nvcc && /usr/local/cuda/bin/nvcc --version | tail -2; } >> "$LOG" 2>&1 \
    || say "no /usr/local/cuda/bin/nvcc: sglang's JIT kernels will fail (SGLANG-NOTES.md §4.3: the pip nvcc set)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv > "$OUTDIR/gpu.csv" 2>&1
  # ngram's corpus is a tvm-ffi JIT build of C++ sources: a host compiler must be there
  cxx=$(command -v c++ || command -v g++ || true)
  say "host C++ compiler: ${cxx:-none (the ngram config will fail at its first request)}"
  PYTHONPATH="$SITE" python3 - <<'PY' 2>&1 | tee -a "$LOG" || return 1
import importlib.metadata as md
import torch, sgl_kernel, flashinfer, sglang  # noqa: F401
import sglang.srt.entrypoints.http_server, sglang.srt.model_executor.model_runner  # noqa: F401
import sglang.srt.models.llama, sglang.srt.layers.attention.triton_backend  # noqa: F401
import sglang.srt.layers.quantization.fp8_utils  # noqa: F401
import sglang.kernels.ops.quantization.fp8_kernel as k
import os
print("torch", torch.__version__, "sglang", sglang.__version__, "sglang-kernel", md.version("sglang-kernel"),
      "flashinfer", md.version("flashinfer-python"), "transformers", md.version("transformers"),
      "GPU", torch.cuda.get_device_name(0))
print("fp8 configs:", os.path.join(os.path.dirname(os.path.realpath(k.__file__)), "configs"))
import json  # the checkpoint's quantization_config as SGLang parses it, before a launch does
from sglang.srt.layers.quantization.compressed_tensors.compressed_tensors import CompressedTensorsConfig
qc = json.load(open(os.path.join(os.environ["INFERLAB_GPU_MODEL"], "config.json")))["quantization_config"]
print("quant config:", CompressedTensorsConfig.from_config(qc).target_scheme_map)
PY
  python3 -c "import inferlab.cli.main, inferlab.config.campaign, pydantic" || return 1
}

if [ ! -f "$DB" ] && [ -f .gpu-run/h200-sglang.db ]; then
  cp .gpu-run/h200-sglang.db "$DB" && say "resuming from the carried .gpu-run/h200-sglang.db"
fi

finish() {  # the report from the store, and what comes back (at most 8 files)
  say "report (from the store)"
  "${IL[@]}" report "$NAME" --db "$DB" --out-dir "$WORK/report" >> "$LOG" 2>&1
  python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" "$DB"
  cp "$DB" "$OUTDIR/$(basename "$DB")"
  cp "$WORK/report/report.md" "$OUTDIR/" 2>/dev/null
  for f in inferlab-out/$NAME/logs/*.log; do  # the not-found / found / OOM lines, mined
    [ -f "$f" ] && "${IL[@]}" logs analyze "$f" >> "$OUTDIR/logs-analyze.txt" 2>&1
  done
  tar -czf "$OUTDIR/server-logs.tar.gz" -C "inferlab-out/$NAME" logs 2>/dev/null
  tar -czf "$OUTDIR/traces.tgz" -C "inferlab-out/$NAME" profiles 2>/dev/null
  [ -f "$OUTDIR/traces.tgz" ] && [ "$(stat -c %s "$OUTDIR/traces.tgz")" -gt 15000000 ] \
    && { say "traces over 15 MB: not brought back"; rm -f "$OUTDIR/traces.tgz"; }
  tar -czf "$OUTDIR/jit-caches.tgz" -C "$HOME" .cache/tvm-ffi .triton/cache 2>/dev/null
  say "done; files in $OUTDIR: $(ls "$OUTDIR" | tr '\n' ' ')"
}

run_campaign() {
  local run_s=$(($(left) - 45))
  [ "$run_s" -gt 60 ] || run_s=60
  say "run $*: interrupted after $run_s s if still running"
  timeout -s INT -k 30 "$run_s" "${IL[@]}" run "$CAMPAIGN" --db "$DB" "$@" >> "$LOG" 2>&1
  say "run exited with $?"
}

case "$ARG" in
  check)
    preflight || { say "preflight failed: see $LOG"; exit 1; }
    say "preflight passed"
    ;;
  part1)
    preflight || { say "preflight failed: see $LOG"; exit 1; }
    say "recon: GPU, driver, torch, CUDA, SGLang, its flags and config directories"
    "${IL[@]}" recon --engine sglang --python "$INFERLAB_SGLANG_PYTHON" --campaign "$NAME" --db "$DB" \
      > "$OUTDIR/recon.txt" 2>&1
    grep -iE "gpu|driver|torch|sglang|cuda|config" "$OUTDIR/recon.txt" | head -16 | tee -a "$LOG"
    run_campaign --config baseline --config A
    finish
    ;;
  part2)
    run_campaign --resume --config ngram --config graph-oom --config graph-oom-995 --config graph-oom-fix
    finish
    ;;
  lossy)  # the bf16 twin of the same seed, then the gate on its own store and campaign
    export INFERLAB_GPU_BF16="$WORK/m1b"
    [ -f "$INFERLAB_GPU_BF16/model.safetensors" ] \
      || "${IL[@]}" model random --preset 1b "$INFERLAB_GPU_BF16" 2>&1 | tee -a "$LOG" || exit 1
    CAMPAIGN=src/inferlab/examples/sglang-h200-fp8.toml NAME=sglang-h200-fp8 DB="$WORK/h200-sglang-fp8.db"
    run_campaign
    finish
    ;;
esac
