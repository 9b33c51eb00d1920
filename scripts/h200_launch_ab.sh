# Sourced by scripts/h200_vllm.sh for `run ab` (issue 42): fresh interleaved launches of the FP8
# A/B of examples/vllm-h200.toml, each read by `inferlab bench` and `vllm bench serve`
# (benchmarks/h200_launch_ab.py), into one store that the next call on the same machine extends.
#   H200_ORDER=baseline,A      the configs, one fresh launch each, in this order
#   H200_REPEATS_ON=-1         which launch of H200_ORDER gets the client question's repeats
#   H200_REPEATS=3             vLLM's client then inferlab's, this many times each, at C=1
#   H200_HI=32                 inferlab bench's higher point (0: C=1 alone)
# Each config is served at a port of its own, the same at every launch (the driver writes the
# committed file with `[engine] port = 8431 + k` per config: `inferlab bench` keys its config rows
# by URL, not by flags). On a card other than the H200 the tuned tiles are renamed for it (vLLM
# reads the files by device name), and run.log says so.
AB_DB="$WORK/h200-vllm-ab.db"
AB_DIR="$WORK/ab"
mkdir -p "$AB_DIR"
if [ ! -f "$AB_DB" ] && [ -f .gpu-run/h200-vllm-ab.db ]; then
  cp .gpu-run/h200-vllm-ab.db "$AB_DB" && say "extending the carried .gpu-run/h200-vllm-ab.db"
  [ -f .gpu-run/ab.json ] && cp .gpu-run/ab.json "$AB_DIR/ab.json"
fi
ab_engine=vllm ab_vllm=() ab_src=src/inferlab/examples/vllm-h200.toml
if [ "$LOCAL" = 1 ]; then  # the reference engine (SIMULATED) in the campaign's place
  ab_engine=sim ab_vllm=(--no-vllm --served inferlab-sim)
  cat > "$WORK/sim-ab.toml" <<TOML
[campaign]
name = "vllm-h200"
output = "$WORK/out-sim"
[engine]
kind = "sim"
args = ["--preset", "dsv4-flash-8gpu", "--time-scale", "0.05"]
ready_timeout_s = 60
stop_grace_s = 5
[[config]]
name = "baseline"
[[config]]
name = "A"
extends = "baseline"
args = ["--tuned-fp8"]
[verify]
probes = [{ prompt = "hi", expect = '\w', max_tokens = 4 }]
[load]
workload = { kind = "random", input_tokens = 128, output_tokens = 64 }
concurrency = [1, 32]
TOML
  ab_src="$WORK/sim-ab.toml"
else
  python3 - "$INFERLAB_TUNED_FP8" "$WORK/tune-run.json" <<'PY' 2>&1 | tee -a "$LOG"
import json, sys, torch
name = torch.cuda.get_device_name(0).replace(" ", "_")
d = json.load(open(sys.argv[1]))
if d["device_name"] != name:
    print(f"tuned tiles: made on {d['device_name']}, renamed for this {name} (vLLM reads them by name)")
    d["device_name"] = name
json.dump(d, open(sys.argv[2], "w"))
PY
  export INFERLAB_TUNED_FP8="$WORK/tune-run.json"
fi
ab_s=$(($(left) - 40))
say "ab: launches ${H200_ORDER:-baseline,A}, repeats on ${H200_REPEATS_ON:--1}; $ab_s s"
timeout -s INT -k 60 $((ab_s + 60)) python3 benchmarks/h200_launch_ab.py --campaign "$ab_src" \
  --db "$AB_DB" --out "$AB_DIR" --tokenizer "$INFERLAB_GPU_MODEL" --engine "$ab_engine" \
  --order "${H200_ORDER:-baseline,A}" --repeats-on "${H200_REPEATS_ON:--1}" \
  --repeats "${H200_REPEATS:-3}" --hi "${H200_HI:-32}" --deadline-s "$ab_s" "${ab_vllm[@]}" 2>&1 | tee -a "$LOG"
say "ab exited with ${PIPESTATUS[0]}; stopping anything left up"
for f in "$AB_DIR"/campaign-*.toml; do [ -f "$f" ] && "${IL[@]}" down "$f" >> "$LOG" 2>&1; done
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" "$AB_DB"
cp "$AB_DB" "$AB_DIR/ab.json" "$OUTDIR/" 2>/dev/null
ab_out=$(sed -n 's/^output = "\(.*\)"$/\1/p' "$ab_src")
[[ "$ab_out" = /* ]] || ab_out="$PWD/$ab_out"
tar -czf "$OUTDIR/ab-logs.tar.gz" --exclude ab.json -C "$AB_DIR" . -C "$ab_out" logs 2>/dev/null
say "done; files in $OUTDIR: $(ls "$OUTDIR" | tr '\n' ' ')"
