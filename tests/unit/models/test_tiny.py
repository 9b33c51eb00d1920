"""``inferlab model tiny``: a valid, deterministic Llama model that never emits special tokens."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from inferlab.models import TinySpec, write_tiny_model
from inferlab.models.tiny import CHAT_TEMPLATE
from support.llama_ref import forward as _forward
from support.llama_ref import load, load64, tokenizer

pytest.importorskip("safetensors")

FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "special_tokens_map.json",
    "tokenizer.json",
    "tokenizer_config.json",
)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tiny")
    write_tiny_model(out, seed=0)
    return out


def _digest(d: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


def test_files_and_config(model_dir: Path) -> None:
    assert sorted(p.name for p in model_dir.iterdir()) == sorted(FILES)
    cfg, _ = load(model_dir)
    assert cfg["architectures"] == ["LlamaForCausalLM"]
    assert cfg["model_type"] == "llama"
    assert cfg["torch_dtype"] == "float32"
    assert cfg["max_position_embeddings"] == 2048
    assert cfg["num_hidden_layers"] == 2
    assert cfg["num_attention_heads"] == 4 and cfg["num_key_value_heads"] == 2
    assert 64 <= cfg["hidden_size"] <= 128
    assert cfg["vocab_size"] == tokenizer(model_dir).get_vocab_size()
    gen = json.loads((model_dir / "generation_config.json").read_text())
    assert gen["eos_token_id"] == cfg["eos_token_id"]
    stm = json.loads((model_dir / "special_tokens_map.json").read_text())
    assert stm["eos_token"] == "</s>" and stm["bos_token"] == "<s>"


def test_safetensors_names_and_shapes(model_dir: Path) -> None:
    cfg, w = load(model_dir)
    d, inter, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    hd = cfg["head_dim"]
    nq, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    expected = {
        "model.embed_tokens.weight": (v, d),
        "model.norm.weight": (d,),
        "lm_head.weight": (v, d),
    }
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        expected |= {
            p + "self_attn.q_proj.weight": (nq * hd, d),
            p + "self_attn.k_proj.weight": (nkv * hd, d),
            p + "self_attn.v_proj.weight": (nkv * hd, d),
            p + "self_attn.o_proj.weight": (d, nq * hd),
            p + "mlp.gate_proj.weight": (inter, d),
            p + "mlp.up_proj.weight": (inter, d),
            p + "mlp.down_proj.weight": (d, inter),
            p + "input_layernorm.weight": (d,),
            p + "post_attention_layernorm.weight": (d,),
        }
    assert {k: a.shape for k, a in w.items()} == expected
    assert all(a.dtype == np.float32 for a in w.values())
    assert all(np.isfinite(a).all() for a in w.values())


def test_tokenizer_round_trip(model_dir: Path) -> None:
    tok = tokenizer(model_dir)
    for text in (
        "Capital of France in one word?",
        "Hello, world! 123",
        "héllo → ü 日本",
        "  a\n\tb",
    ):
        ids = tok.encode(text).ids
        assert ids[0] == tok.token_to_id("<s>")
        assert tok.decode(ids, skip_special_tokens=True) == text
    assert len(tok.encode("The capital of France is Paris.").ids) < 12  # merges were learned


def test_tokenizer_config_and_chat_template(model_dir: Path) -> None:
    sandbox = pytest.importorskip("jinja2.sandbox")
    tc = json.loads((model_dir / "tokenizer_config.json").read_text())
    assert (tc["bos_token"], tc["eos_token"], tc["unk_token"]) == ("<s>", "</s>", "<unk>")
    assert tc["chat_template"] == CHAT_TEMPLATE
    # rendered as transformers renders chat templates
    env = sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    text = env.from_string(tc["chat_template"]).render(
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Capital of France?"}]},
        ],
        add_generation_prompt=True,
        bos_token=tc["bos_token"],
    )
    assert text == "<s>system: Be brief.\nuser: Capital of France?\nassistant:"


def test_deterministic(tmp_path: Path, model_dir: Path) -> None:
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    write_tiny_model(a, seed=0)
    write_tiny_model(b, seed=0)
    write_tiny_model(c, seed=1)
    assert _digest(a) == _digest(b) == _digest(model_dir)
    assert _digest(a)["model.safetensors"] != _digest(c)["model.safetensors"]
    assert _digest(a)["tokenizer.json"] == _digest(c)["tokenizer.json"]


def test_bad_spec_is_config_error(tmp_path: Path) -> None:
    from inferlab.errors import ConfigError

    with pytest.raises(ConfigError):
        write_tiny_model(tmp_path, spec=TinySpec(hidden_size=100, num_attention_heads=3))


def test_kv_cache_matches_full_forward(model_dir: Path) -> None:
    cfg, w = load64(model_dir)
    ids = tokenizer(model_dir).encode("The capital of France is Paris.").ids
    cache: list[list[np.ndarray]] = []
    _forward(cfg, w, ids[:-3], cache)
    _forward(cfg, w, ids[-3:-1], cache)
    np.testing.assert_allclose(_forward(cfg, w, ids[-1:], cache), _forward(cfg, w, ids, []))


PROMPTS = ("Capital of France in one word?", "Hello", "The", "1 2 3 4 5", "!!!")


def test_greedy_never_emits_special_tokens(model_dir: Path) -> None:
    cfg, w = load64(model_dir)
    tok = tokenizer(model_dir)
    special = {tok.token_to_id(t) for t in ("<s>", "</s>", "<unk>")}
    outputs = []
    for prompt in PROMPTS:
        ids = tok.encode(prompt).ids
        out: list[int] = []
        cache: list[list[np.ndarray]] = []
        logits = _forward(cfg, w, ids, cache)
        for _ in range(64):
            nxt = int(np.argmax(logits))
            assert nxt not in special, (prompt, out)
            assert max(logits[sorted(special)]) < -500  # EOS is far below everything
            out.append(nxt)
            logits = _forward(cfg, w, [nxt], cache)
        text = tok.decode(out, skip_special_tokens=False)
        assert len(out) == 64
        assert text and text.isprintable() and "\ufffd" not in text, (prompt, text)
        outputs.append(text)
    assert len(set(outputs)) > 1  # the prompt matters
