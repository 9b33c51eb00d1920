#!/usr/bin/env bash
# The main job on the lent H200: install the carried wheels, generate the 1.1 B random model,
# recon, run examples/transformers-gpu.toml, write the report, and put at most 8 files in $OUT.
#
#   bash scripts/h200_campaign.sh smoke   # baseline + cb at C=1,8, 16 requests   (~3 min)
#   bash scripts/h200_campaign.sh part1   # baseline, cb                           (~5 min)
#   bash scripts/h200_campaign.sh part2   # the four cb configs, resumed from .gpu-run/h200.db
#   bash scripts/h200_campaign.sh part3   # what is left (eager), resumed likewise
#   H200_MAX_REQUESTS=60 (and H200_MIN_REQUESTS=30) caps a part's points lower
#   bash scripts/h200_campaign.sh all     # every config in one call: ~11 min estimated, so
#                                         # only if the smoke showed TPOT well under 10 ms
#
# Run from the repository root on the device, with `.whl` carried (scripts/h200_wheels.sh
# fills it) and, for part2, `.gpu-run` holding part1's h200.db. Every step prints the seconds
# since the start; `inferlab run` gets what is left of a 540 s budget and is interrupted
# (Ctrl-C: the server is stopped, everything measured is kept) when it runs out, so the
# report and the files still come back inside the 600 s limit of one call.
#
# H200_LOCAL_TEST=1 runs the same steps on a CPU machine to check the script itself: the "test"
# preset, --device cpu and a small continuous-batching cache; no wheel install unless
# H200_WHEELS=DIR names wheels for the local Python. Its numbers mean nothing.
set -uo pipefail
export COLUMNS=${COLUMNS:-160}  # rich wraps at 80 columns without a terminal
MODE=${1:-smoke}
BUDGET_S=${H200_BUDGET_S:-540}
T0=$(date +%s)
OUTDIR=${OUT:-/tmp/h200-out}
WORK=${H200_WORK:-/tmp/h200}
mkdir -p "$OUTDIR" "$WORK"
LOG="$OUTDIR/run.log"
say() { echo "[$(($(date +%s) - T0)) s] $*" | tee -a "$LOG"; }
left() { echo $((BUDGET_S - ($(date +%s) - T0))); }

case "$MODE" in smoke | part1 | part2 | part3 | all) ;; *) echo "usage: $0 smoke|part1|part2|part3|all" >&2; exit 2 ;; esac

LOCAL=${H200_LOCAL_TEST:-0}
WHEELS=${H200_WHEELS:-.whl}
SITE=${H200_SITE:-/tmp/site}
PRESET=1b
if [ "$LOCAL" = 1 ]; then
  PRESET=test
  say "local test: preset test, --device cpu"
fi
if [ "$LOCAL" = 1 ] && [ -z "${H200_WHEELS:-}" ]; then
  say "local test: no wheels installed (H200_WHEELS=DIR installs those)"
else
  say "wheels → $SITE"
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" "$WHEELS"/*.whl || { say "wheel install failed"; exit 1; }
fi
export PYTHONPATH="$SITE:$PWD/src" PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1 HF_HUB_DISABLE_UPDATE_CHECK=1 TOKENIZERS_PARALLELISM=false
export INFERLAB_SERVE_PYTHONPATH="$SITE"
INFERLAB_TRANSFORMERS_PYTHON="$(command -v python3)"
export INFERLAB_TRANSFORMERS_PYTHON INFERLAB_GPU_MODEL="$WORK/m1b"
DB="$WORK/h200.db"
IL=(python3 -m inferlab)

say "preflight: imports and the GPU"
python3 - <<'PY' 2>&1 | tee -a "$LOG" || exit 1
import fastapi, openai, pydantic, scipy, torch, transformers, uvicorn
import inferlab.cli.main  # noqa: F401  (the whole CLI imports here)
print("torch", torch.__version__, "CUDA", torch.version.cuda, "transformers", transformers.__version__,
      "pydantic", pydantic.__version__, "fastapi", fastapi.__version__, "scipy", scipy.__version__,
      "GPU", torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)
PY

say "model: inferlab model random --preset $PRESET"
"${IL[@]}" model random --preset "$PRESET" "$INFERLAB_GPU_MODEL" 2>&1 | tee -a "$LOG" || exit 1

CAMPAIGN=src/inferlab/examples/transformers-gpu.toml
NAME=transformers-gpu
if [ "$LOCAL" = 1 ]; then
  sed -e 's/"cuda:0"/"cpu"/' \
    -e 's/^args = \["--continuous-batching"\]/args = ["--continuous-batching", "--cb-num-blocks", "16", "--cb-max-batch-tokens", "512"]/' \
    "$CAMPAIGN" > "$WORK/local.toml"
  CAMPAIGN="$WORK/local.toml"
fi
RUN_ARGS=()
case "$MODE" in
  smoke)
    NAME=transformers-gpu-smoke
    sed -e 's/^name = "transformers-gpu"/name = "transformers-gpu-smoke"/' \
      -e 's|inferlab-out/transformers-gpu|inferlab-out/transformers-gpu-smoke|' \
      -e 's/^concurrency = .*/concurrency = [1, 8]/' -e 's/^requests = .*/requests = 16/' \
      -e '/^precision = /d' -e '/^min_requests = /d' -e '/^max_requests = /d' \
      "$CAMPAIGN" > "$WORK/smoke.toml"
    CAMPAIGN="$WORK/smoke.toml"
    RUN_ARGS=(--config baseline --config cb)
    ;;
  part1) RUN_ARGS=(--config baseline --config cb) ;;
  part2 | part3)
    [ -f .gpu-run/h200.db ] || { say "$MODE needs .gpu-run/h200.db (the last part's store) carried"; exit 1; }
    cp .gpu-run/h200.db "$DB"
    RUN_ARGS=(--resume)
    [ "$MODE" = part2 ] && RUN_ARGS+=(--config cb --config cb-graphs --config cb-bf16 --config cb-eager-oom)
    ;;
esac
if [ -n "${H200_MAX_REQUESTS:-}" ]; then  # a lower cap for a later part (not part of comparability)
  sed -e "s/^max_requests = .*/max_requests = $H200_MAX_REQUESTS/" \
    -e "s/^min_requests = .*/min_requests = ${H200_MIN_REQUESTS:-30}/" "$CAMPAIGN" > "$WORK/capped.toml"
  CAMPAIGN="$WORK/capped.toml"
  say "cap: min_requests ${H200_MIN_REQUESTS:-30}, max_requests $H200_MAX_REQUESTS"
fi

if [ "$MODE" = smoke ] || [ "$MODE" = part1 ] || [ "$MODE" = all ]; then
  say "recon: GPU, driver, torch, CUDA, transformers and its flags"
  "${IL[@]}" recon --engine transformers --python "$INFERLAB_TRANSFORMERS_PYTHON" \
    --campaign "$NAME" --db "$DB" > "$OUTDIR/recon.txt" 2>&1
  grep -iE "gpu|driver|torch|transformers|cuda" "$OUTDIR/recon.txt" | head -20 | tee -a "$LOG"
fi

RUN_S=$(($(left) - 40))  # leave 40 s for the report and the copies
[ "$RUN_S" -gt 30 ] || RUN_S=30
say "run $MODE: ${RUN_ARGS[*]:-every config} (interrupted after $RUN_S s if still running)"
timeout -s INT -k 30 "$RUN_S" "${IL[@]}" run "$CAMPAIGN" --db "$DB" "${RUN_ARGS[@]}" >> "$LOG" 2>&1
say "run exited with $?"

say "report (from the store)"
"${IL[@]}" report "$NAME" --db "$DB" --out-dir "$WORK/report" >> "$LOG" 2>&1
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" "$DB"
cp "$DB" "$OUTDIR/h200.db"
cp "$WORK/report/report.md" "$WORK/report/report.html" "$OUTDIR/" 2>/dev/null
tar -czf "$OUTDIR/server-logs.tar.gz" -C "inferlab-out/$NAME" logs 2>/dev/null
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv > "$OUTDIR/gpu.csv" 2>&1
say "done; files in $OUTDIR: $(ls "$OUTDIR" | tr '\n' ' ')"
