#!/usr/bin/env bash
# Issue 20 on the lent 2×H200 host, in two back-to-back device calls (docs/gpu.md, "2×H200 with
# Ray"); scripts/ray_wheels.sh fills the carry folders here first.
#
#   bash scripts/h200x2_ray.sh stage1   # carry [".ray1"]: copies it to /tmp/raystage (seconds)
#   bash scripts/h200x2_ray.sh stage2   # carry [".ray2"], while the machine is still warm:
#       joins and installs everything into /tmp/site, starts `ray start --head --num-gpus=2`,
#       generates the 1.1 B model, then inside one 540 s budget:
#       a. a 2-config campaign (cb, cb-bf16: gpus = 1 each) with `inferlab run … --ray auto`,
#          while a sampler writes nvidia-smi's per-process and per-GPU memory every 0.5 s;
#       b. the same configs run sequentially without Ray (wall-time ratio);
#       c. `inferlab tune fp8-gemm` for the 4 DeepSeek shapes: --ray over 2 GPUs, --devices 0,1,
#          one GPU (each with a cold Triton cache of its own), and benchmarks/ray_tune_check.py;
#       d. the store, report.md, checks.md (benchmarks/ray_gpu_check.py), smi.csv, run.log,
#          tune.tar.gz and server-logs.tar.gz in $OUT (7 files).
# Every step prints the seconds since the start; each long step gets `timeout -s INT` with what
# is left of the budget (interrupted runs keep what they measured).
#
# H200X2_LOCAL_TEST=1 runs stage1 and stage2 on a CPU machine: a local Ray head with 2 logical
# GPUs (on its own port; only that head is stopped), the sim engine instead of transformers,
# tune as --dry-run (no GPU), no sampler. It installs the wheels only when python3 is 3.12
# (H200X2_INSTALL=0 skips). Its numbers check the script, not the GPUs.
# Knobs: H200X2_PARTS (all; "campaign" = a+b, "tune" = c: a later stage2 call on the same warm
# machine does the rest if the budget ran out), H200X2_REQUESTS (32 a point), H200X2_TUNE_M (M list, "1,16,64,256,1024,4096"),
# H200X2_BUDGET_S (540), H200X2_STAGE (/tmp/raystage), H200X2_SITE (/tmp/site).
set -uo pipefail
export COLUMNS=${COLUMNS:-160}
MODE=${1:-}
LOCAL=${H200X2_LOCAL_TEST:-0}
STAGE=${H200X2_STAGE:-/tmp/raystage}
SITE=${H200X2_SITE:-/tmp/site}
BUDGET_S=${H200X2_BUDGET_S:-540}
REQUESTS=${H200X2_REQUESTS:-32}
TUNE_M=${H200X2_TUNE_M:-1,16,64,256,1024,4096}
PORT=${H200X2_RAY_PORT:-6399}
PARTS=${H200X2_PARTS:-all}  # all | campaign (a, b) | tune (c): a second stage2 call may finish
case "$PARTS" in all | campaign | tune) ;; *) echo "H200X2_PARTS: all, campaign or tune" >&2; exit 2 ;; esac
want() { [ "$PARTS" = all ] || [ "$PARTS" = "$1" ]; }
T0=$(date +%s)
OUTDIR=${OUT:-/tmp/h200x2-out}
WORK=${H200X2_WORK:-/tmp/h200x2}
mkdir -p "$OUTDIR" "$WORK"
LOG="$OUTDIR/run.log"
say() { echo "[$(($(date +%s) - T0)) s] $*" | tee -a "$LOG"; }
left() { echo $((BUDGET_S - ($(date +%s) - T0))); }
secs() { python3 -c "import time; print(f'{time.time():.3f}')"; }

case "$MODE" in
  stage1)
    [ -f .ray1/ray.whl.part-aa ] || { say "stage1 needs .ray1 carried (bash scripts/ray_wheels.sh here)"; exit 1; }
    rm -rf "$STAGE" && mkdir -p "$STAGE" && cp -r .ray1/. "$STAGE/" || { say "copy to $STAGE failed"; exit 1; }
    say "stage1: $(du -sh "$STAGE" | cut -f1) in $STAGE; call stage2 (carry .ray2) now, while warm"
    exit 0
    ;;
  stage2) ;;
  *) echo "usage: $0 stage1|stage2" >&2; exit 2 ;;
esac

# --- join and install -------------------------------------------------------------------------
[ -f "$STAGE/ray.whl.part-aa" ] || { say "no $STAGE/ray.whl.part-aa: run stage1 first on this (warm) machine"; exit 1; }
[ -f .ray2/ray.whl.part-ab ] || { say "stage2 needs .ray2 carried"; exit 1; }
RAY_NAME=$(cat .ray2/RAY_WHEEL)
cat "$STAGE/ray.whl.part-aa" .ray2/ray.whl.part-ab > "$STAGE/$RAY_NAME"
(cd "$STAGE" && sha256sum --quiet -c -) < .ray2/SHA256SUMS ||
  { say "the joined Ray wheel does not match .ray2/SHA256SUMS"; exit 1; }
say "joined $RAY_NAME ($(du -h "$STAGE/$RAY_NAME" | cut -f1), sha256 checked)"
PYV=$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
if [ "${H200X2_INSTALL:-1}" = 1 ] && [ "$PYV" = 3.12 ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" "$STAGE"/whl/*.whl .ray2/whl/*.whl "$STAGE/$RAY_NAME" || { say "wheel install failed"; exit 1; }
  say "installed $(ls "$STAGE"/whl/*.whl .ray2/whl/*.whl | wc -l) wheels + Ray into $SITE"
elif [ "$LOCAL" != 1 ]; then
  say "no install (python3 $PYV, H200X2_INSTALL=${H200X2_INSTALL:-1}): the device run needs the carried CPython 3.12 wheels installed"
  exit 1
else
  say "no install (python3 is $PYV; the wheels are cp312): using python3's own packages"
  SITE=${H200X2_SITE:-$WORK/site-none}
fi
export PYTHONPATH="$SITE:$PWD/src" PATH="$SITE/bin:$PATH" PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1 HF_HUB_DISABLE_UPDATE_CHECK=1 TOKENIZERS_PARALLELISM=false
export INFERLAB_SERVE_PYTHONPATH="$SITE"
INFERLAB_TRANSFORMERS_PYTHON="$(command -v python3)"
export INFERLAB_TRANSFORMERS_PYTHON INFERLAB_GPU_MODEL="$WORK/m1b"
IL=(python3 -m inferlab)
DB="$WORK/h200x2.db"
want campaign && rm -f "$DB" "$DB"-wal "$DB"-shm  # a tune-only call keeps the campaign's store

# --- Ray ------------------------------------------------------------------------------------------
export RAY_ADDRESS="127.0.0.1:$PORT"
# Ray 2.60 turns token auth on when ~/.ray/auth_token exists (another Ray user's on a shared
# machine): clients that do not send that token are refused. This head listens for this call
# only, on an isolated host (or the local test): no token, for the head and every client.
export RAY_AUTH_MODE=disabled
RAY_CPUS=
[ "$LOCAL" = 1 ] && RAY_CPUS=4  # logical: both configs' bundles (2 CPUs each) fit at once
say "ray start --head --num-gpus=2 (port $PORT; Triton cache of the --ray tune: $WORK/triton-ray)"
want tune && rm -rf "$WORK"/triton-*
RAY_kill_child_processes_on_worker_exit_with_raylet_subreaper=true TRITON_CACHE_DIR="$WORK/triton-ray" \
  setsid ray start --head --block --node-ip-address 127.0.0.1 --port "$PORT" --num-gpus=2 \
  --disable-usage-stats ${RAY_CPUS:+--num-cpus "$RAY_CPUS"} > "$WORK/ray-start.log" 2>&1 &
RAY_PID=$!
SAMPLER= SMI=
cleanup() {
  [ -n "$SAMPLER" ] && kill "$SAMPLER" 2>/dev/null
  kill -TERM "$RAY_PID" 2>/dev/null  # --block: this head stops its own processes, no other
  wait "$RAY_PID" 2>/dev/null
}
trap cleanup EXIT
python3 - "$RAY_ADDRESS" <<'PY' 2>&1 | tail -3 | tee -a "$LOG" || { say "Ray did not come up"; tail -20 "$WORK/ray-start.log"; exit 1; }
import sys, time
import ray
t0 = time.time()
while True:
    try:
        ray.init(address=sys.argv[1], logging_level="ERROR")
        gpus = ray.cluster_resources().get("GPU", 0)
        if gpus >= 2:
            break
        ray.shutdown()
    except Exception as exc:  # not up yet
        if time.time() - t0 > 120:
            raise SystemExit(f"no Ray head at {sys.argv[1]} after 120 s: {exc}")
    time.sleep(1)
print(f"ray {ray.__version__}: {ray.cluster_resources()} after {time.time() - t0:.1f} s")
PY

# --- preflight, model, sampler --------------------------------------------------------------------
if [ "$LOCAL" = 1 ]; then
  say "local test: sim engine, logical GPUs, tune --dry-run"
else
  say "preflight: imports and the GPUs"
  python3 -c "import fastapi, openai, pydantic, scipy, torch, transformers, uvicorn, ray, inferlab.cli.main; \
print('torch', torch.__version__, 'transformers', transformers.__version__, 'ray', ray.__version__, \
[torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())])" 2>&1 | tee -a "$LOG" || exit 1
fi
if [ "$LOCAL" != 1 ] && want campaign; then
  say "model: inferlab model random --preset 1b"
  "${IL[@]}" model random --preset 1b "$INFERLAB_GPU_MODEL" >> "$LOG" 2>&1 || { say "model failed"; exit 1; }
  SMI="$OUTDIR/smi.csv"
  echo "t,kind,a,b,c" > "$SMI"
  (while :; do
    t=$(date +%s.%N)
    nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader 2>/dev/null | sed "s/^/$t,app,/"
    nvidia-smi --query-gpu=index,uuid,memory.used --format=csv,noheader 2>/dev/null | sed "s/^/$t,gpu,/"
    sleep 0.5
  done >> "$SMI") &
  SAMPLER=$!
  say "sampler: pid $SAMPLER → smi.csv every 0.5 s"
fi

# --- the campaign files ---------------------------------------------------------------------------
camp() {  # camp NAME → $WORK/NAME.toml: two configs, gpus = 1 each
  if [ "$LOCAL" = 1 ]; then
    cat > "$WORK/$1.toml" <<EOF
[campaign]
name = "$1"
description = "SIMULATED: the 2×H200 script's local test"
output = "$WORK/out/$1"
[engine]
kind = "sim"
args = ["--ttft-ms", "20", "--itl-ms", "5", "--startup-s", "5"]
ready_timeout_s = 120
stop_grace_s = 5
gpus = 1
[engine.env]
PYTHONPATH = "$PYTHONPATH"   # the sim server is inferlab itself, run from this checkout
[[config]]
name = "cb"
[[config]]
name = "cb-bf16"
extends = "cb"
set = { "--itl-ms" = "4" }
lossless = false
[verify]
probes = [{ prompt = "Capital of France in one word?", expect = '\w' }]
equivalent_to = "cb"
[load]
workload = { kind = "random", input_tokens = 256, output_tokens = 32 }
concurrency = [1, 8, 32]
requests = $REQUESTS
EOF
    return
  fi
  python3 - "$1" "$WORK" "$REQUESTS" <<'PY'
import re, sys
name, work, requests = sys.argv[1], sys.argv[2], sys.argv[3]
text = open("src/inferlab/examples/transformers-gpu.toml", encoding="utf-8").read()
head, _, rest = text.partition("[[config]]")
rest = "[[config]]" + rest
configs = re.split(r"(?m)^(?=\[\[config\]\]|\[verify\])", rest)
keep = [c for c in configs if re.search(r'^name = "(cb|cb-bf16)"', c, re.M) or c.startswith("[verify]")]
body = "".join(keep)
body = body.replace('name = "cb"\nextends = "baseline"\n', 'name = "cb"\n')
body = re.sub(r'equivalent_to = "baseline"', 'equivalent_to = "cb"', body)
head = re.sub(r'(?m)^name = "transformers-gpu"', f'name = "{name}"', head)
head = head.replace('output = "inferlab-out/transformers-gpu"', f'output = "{work}/out/{name}"')
head = head.replace("stop_grace_s = 20\n", "stop_grace_s = 20\ngpus = 1                    # one GPU per server: Ray places them side by side\n")
body = re.sub(r"(?m)^concurrency = .*", "concurrency = [1, 8, 32]", body)
body = re.sub(r"(?m)^requests = .*", f"requests = {requests}", body)
body = re.sub(r"(?m)^(precision|min_requests|max_requests) = .*\n", "", body)
open(f"{work}/{name}.toml", "w", encoding="utf-8").write(head + body)
PY
}
run_timed() {  # run_timed LABEL SHARE CMD… → wall seconds in $WALL
  local label=$1 share=$2; shift 2
  local s=$(($(left) * share / 100)); [ "$s" -gt 30 ] || s=30
  say "$label (interrupted after $s s)"
  local t=$(secs)
  timeout -s INT -k 30 "$s" "$@" >> "$LOG" 2>&1
  local rc=$?
  WALL=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$t" "$(secs)")
  say "$label: exit $rc, $WALL s"
}
save_db() {
  python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" "$DB"
  cp "$DB" "$OUTDIR/h200x2.db"
}
WALL_RAY= WALL_SEQ=
if want campaign; then
camp h200x2-ray && camp h200x2-seq || { say "campaign files failed"; exit 1; }
"${IL[@]}" run "$WORK/h200x2-ray.toml" --db "$DB" --dry-run >> "$LOG" 2>&1 || { say "dry run failed"; tail -20 "$LOG"; exit 1; }

# --- a. with Ray, b. without ------------------------------------------------------------------
run_timed "a. inferlab run --ray auto (2 configs side by side)" 30 "${IL[@]}" run "$WORK/h200x2-ray.toml" --db "$DB" --ray auto
WALL_RAY=$WALL
run_timed "b. inferlab run (the same configs, one after the other)" 45 "${IL[@]}" run "$WORK/h200x2-seq.toml" --db "$DB"
WALL_SEQ=$WALL
say "wall: --ray $WALL_RAY s, sequential $WALL_SEQ s, ratio $(python3 -c "import sys; print(f'{float(sys.argv[1]) / float(sys.argv[2]):.3f}')" "$WALL_RAY" "$WALL_SEQ")"
[ -n "$SAMPLER" ] && kill "$SAMPLER" 2>/dev/null; SAMPLER=
save_db  # already in $OUT if the tune part overruns the call
fi

# --- c. tune three ways ---------------------------------------------------------------------------
SHAPES=(--shape 7168,2048 --shape 4096,7168 --shape 24576,1536 --shape 2112,7168)
TUNE=("${IL[@]}" tune fp8-gemm "${SHAPES[@]}" --batch-sizes "$TUNE_M" --server-args "--fp8-gemm-backend triton")
[ "$LOCAL" = 1 ] && TUNE+=(--dry-run --device-name "NVIDIA H200")
TW=()
want tune && for way in ray dev01 gpu0; do
  case $way in
    ray) extra=(--ray auto) ;;
    dev01) extra=(--devices 0,1) ;;
    gpu0) extra=(--devices 0) ;;
  esac
  share=$([ $way = gpu0 ] && echo 80 || echo 45)
  TRITON_CACHE_DIR="$WORK/triton-$way" run_timed "c. tune ${extra[*]}" "$share" \
    "${TUNE[@]}" --out "$WORK/tune-$way" "${extra[@]}"
  TW+=("$way=$WALL")
done
say "tune wall: ${TW[*]}"
TUNE_ARGS=()
for way in ray dev01 gpu0; do
  f=$(ls "$WORK/tune-$way"/tune-run-*.json 2>/dev/null | tail -1)
  [ -n "$f" ] && TUNE_ARGS+=("--$way" "$f")
done
if [ "${#TUNE_ARGS[@]}" -gt 0 ] && [ -n "${TUNE_ARGS[0]:-}" ]; then
  RETIME=(); [ "$LOCAL" = 1 ] || RETIME=(--retime)
  TRITON_CACHE_DIR="$WORK/triton-gpu0" timeout -s INT $(($(left) > 60 ? $(left) - 40 : 20)) python3 benchmarks/ray_tune_check.py "${TUNE_ARGS[@]}" "${RETIME[@]}" \
    > "$WORK/tune-check.md" 2>&1
  say "tune check: exit $? ($(tail -1 "$WORK/tune-check.md"))"
else
  echo "no tune-run files (dry run or failed runs)" > "$WORK/tune-check.md"
fi

# --- d. checks, report, files -----------------------------------------------------------------
python3 benchmarks/ray_gpu_check.py --db "$DB" --ray-campaign h200x2-ray --seq-campaign h200x2-seq \
  ${SMI:+--smi "$SMI"} ${WALL_RAY:+--wall-ray "$WALL_RAY"} ${WALL_SEQ:+--wall-seq "$WALL_SEQ"} \
  --tune-wall "${TW[*]:-}" > "$OUTDIR/checks.md" 2>&1
say "gpu checks: exit $?"
cat "$WORK/tune-check.md" >> "$OUTDIR/checks.md"
cat "$OUTDIR/checks.md" >> "$LOG"
"${IL[@]}" report h200x2-ray --db "$DB" --out-dir "$WORK/report" >> "$LOG" 2>&1
cp "$WORK/report/report.md" "$OUTDIR/report.md" 2>/dev/null
save_db
tar -czf "$OUTDIR/tune.tar.gz" -C "$WORK" $(cd "$WORK" && ls -d tune-ray tune-dev01 tune-gpu0 2>/dev/null) 2>/dev/null
tar -czf "$OUTDIR/server-logs.tar.gz" -C "$WORK/out" . 2>/dev/null
say "done; files in $OUTDIR: $(ls "$OUTDIR" | tr '\n' ' ')"
