#!/usr/bin/env bash
# Fill the two carry folders of the 2×H200 Ray run (scripts/h200x2_ray.sh): `.ray1/` and
# `.ray2/` (ignored by git), each under 56 MiB (~39 MiB now) so that it travels with the working tree (~7 MiB)
# inside one device call's 64 MiB. Together they hold everything the GPU image lacks:
#   - the wheels of scripts/h200_wheels.sh (.whl/, 38 MiB: pydantic, fastapi, uvicorn, openai,
#     scipy …), downloaded first if .whl/ is missing;
#   - Ray 2.60.0 for CPython 3.12 (x86-64 manylinux), *pruned* of what `ray start`, actors,
#     placement groups and ray.util.ActorPool never import: the Java jar (ray/jars, 33 MiB),
#     rllib, data, serve, train, tune, llm and the dashboard's web build; RECORD and the
#     console scripts are rewritten to match, so pip installs it as any wheel. It is cut in
#     two (`head -c`/`tail -c`, where both folders come out the same size) into ray.whl.part-aa (in .ray1)
#     and -ab (in .ray2) and joined there with `cat`;
#     SHA256SUMS in .ray2 checks the join;
#   - Ray core's dependencies the image lacks (its METADATA's unconditional Requires-Dist:
#     click, filelock, pyyaml, requests are there; jsonschema with attrs, referencing,
#     jsonschema-specifications, rpds-py; msgpack; protobuf; packaging ≥ 24.2), at the
#     versions tests/e2e/test_cluster.py runs with.
# RAY_WHEEL=PATH uses a downloaded wheel (default: /tmp/raywhl/…, else pip download).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=python3
PLAT=(--only-binary=:all: --python-version 3.12 --implementation cp
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
RAY_NAME=ray-2.60.0-cp312-cp312-manylinux2014_x86_64.whl
RAY_WHEEL=${RAY_WHEEL:-/tmp/raywhl/$RAY_NAME}
DEPS=(msgpack==1.2.4 protobuf==7.36.2 jsonschema==4.26.0 attrs==26.1.0 referencing==0.37.0
  jsonschema-specifications==2025.9.1 rpds-py==2026.9.1 packaging==26.4)
LIMIT=$((56 * 1024 * 1024))

[ -d .whl ] && ls .whl/*.whl > /dev/null 2>&1 || bash scripts/h200_wheels.sh
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
if [ ! -f "$RAY_WHEEL" ]; then
  $PY -m pip download -q --no-deps "${PLAT[@]}" -d "$TMP" ray==2.60.0
  RAY_WHEEL=$TMP/$RAY_NAME
fi
$PY -m pip download -q --no-deps "${PLAT[@]}" -d "$TMP/deps" "${DEPS[@]}"

echo "pruning $RAY_WHEEL"
$PY - "$RAY_WHEEL" "$TMP/$RAY_NAME.pruned" <<'PY'
import sys, zipfile
DROP = ("ray/jars/", "ray/rllib/", "ray/data/", "ray/serve/", "ray/train/", "ray/tune/",
        "ray/llm/", "ray/dashboard/client/build/")
src, dst = sys.argv[1], sys.argv[2]
kept = dropped = 0
with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as zout:
    for info in zin.infolist():
        name = info.filename
        if name.startswith(DROP):
            dropped += info.file_size
            continue
        data = zin.read(info)
        if name.endswith(".dist-info/RECORD"):
            lines = data.decode().splitlines()
            data = ("\n".join(l for l in lines if not l.startswith(DROP)) + "\n").encode()
        elif name.endswith(".dist-info/entry_points.txt"):  # serve/tune CLIs are gone
            lines = data.decode().splitlines()
            data = ("\n".join(l for l in lines if not l.startswith(("serve ", "tune "))) + "\n").encode()
        zout.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=6)
        kept += info.file_size
print(f"kept {kept / 2**20:.0f} MiB, dropped {dropped / 2**20:.0f} MiB (uncompressed)")
PY

rm -rf .ray1 .ray2
mkdir -p .ray1/whl .ray2/whl
# .ray1: the h200 wheels and the first part of Ray; .ray2: the rest of Ray and its deps
cp .whl/*.whl .ray1/whl/
cp "$TMP"/deps/*.whl .ray2/whl/
size=$(stat -c %s "$TMP/$RAY_NAME.pruned")
# cut Ray where the two folders come out the same size (at least 1 MiB of Ray in each)
w1=$(du -sb .ray1 | cut -f1)
w2=$(du -sb .ray2 | cut -f1)
first=$(((size + w2 - w1) / 2))
[ "$first" -ge 1048576 ] || first=1048576
head -c "$first" "$TMP/$RAY_NAME.pruned" > .ray1/ray.whl.part-aa
tail -c +$((first + 1)) "$TMP/$RAY_NAME.pruned" > .ray2/ray.whl.part-ab
(cd "$TMP" && sha256sum "$RAY_NAME.pruned" | sed "s/$RAY_NAME.pruned/$RAY_NAME/") > .ray2/SHA256SUMS
echo "$RAY_NAME" > .ray2/RAY_WHEEL
for d in .ray1 .ray2; do
  n=$(du -sb "$d" | cut -f1)
  printf '%s: %s bytes (%.1f MiB)\n' "$d" "$n" "$(echo "$n / 1048576" | bc -l)"
  [ "$n" -lt "$LIMIT" ] || { echo "$d is over 56 MiB" >&2; exit 1; }
done
