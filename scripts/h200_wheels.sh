#!/usr/bin/env bash
# Download the wheels the H200 campaign needs into .whl/ (ignored by git; ~42 MB), for Python 3.12
# on x86-64 Linux. Run it here, in the repository root, before the device calls, and carry
# `.whl` with them: scripts/h200_campaign.sh installs these into /tmp/site there.
#
# What the GPU image lacks (it has torch 2.11, transformers 5.17, accelerate, numpy, tokenizers,
# typer, rich, uvloop, pyyaml, prometheus-client, anyio, httpx, h11, click, tqdm, requests,
# nvidia-ml-py): `transformers serve` needs fastapi, starlette, uvicorn, openai (+ distro, jiter,
# sniffio); both it and inferlab need pydantic 2 (+ pydantic-core, annotated-types,
# typing-inspection, and a typing-extensions new enough for them); inferlab's sequential
# statistics need scipy (37 MB; the image's numpy serves it). One version of each.
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=(
  pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5
  typing-extensions==4.16.0
  fastapi==0.118.0 starlette==0.48.0 uvicorn==0.37.0
  openai==1.109.1 distro==1.9.0 jiter==0.11.0 sniffio==1.3.1
  scipy==1.16.3
)
mkdir -p .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
  -d .whl "${WHEELS[@]}"
ls .whl
du -sh .whl
