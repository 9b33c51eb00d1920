"""Planted secrets: a unique secret in every place a user might put one, then a grep of
everything inferlab wrote — the database and its WAL, server logs, reports, exports, the run
JSONL and what it printed. Zero hits; the non-secret flags keep their values in the same files.

Places: ``--api-key-env`` (the key goes out as a Bearer header), ``[engine] env``
(``HF_TOKEN``, ``OPENAI_API_KEY``), an argv ``--api-key X`` of the server, a URL with userinfo,
and the server's own log (the reference engine echoes its argv, as real servers do). A server
log file holds the server's own output verbatim (inferlab redirects it, it does not filter it):
there, only the lines inferlab writes itself (``# inferlab ...``) are checked; what inferlab
derives from the log (findings, tails, the report) is checked everywhere else.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from inferlab.sim.tokenizer import WordTokenizer
from support.campaign import write_campaign
from support.cli import run_cli
from support.simproc import start_sim

pytestmark = pytest.mark.timeout(300)

SECRETS = {
    "api-key-env": "plantedKeyEnv1a2b3c",
    "HF_TOKEN": "plantedHfTok4d5e6f",
    "OPENAI_API_KEY": "plantedOpenai7g8h9i",
    "argv --api-key": "plantedArgvKey0j1k2l",
    "url userinfo": "plantedUrlPass3m4n5o",
}
# non-secret flags whose names look like secrets to a substring match (the levers issue)
KEPT = ("--tokens-per-chunk", "2")


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """Run a campaign, a bench, the report and every export; returns (the directory holding
    everything inferlab wrote, everything it printed)."""
    tmp = tmp_path_factory.mktemp("secrets")
    out = tmp / "out"
    db = tmp / "s.db"
    env = {"INFERLAB_DB": str(db), "MY_KEY": SECRETS["api-key-env"]}
    env_secrets = {"HF_TOKEN": SECRETS["HF_TOKEN"], "OPENAI_API_KEY": SECRETS["OPENAI_API_KEY"]}
    camp = write_campaign(
        tmp / "c.toml",
        name="secrets",
        engine={
            "args": ["--ttft-ms", "2", "--itl-ms", "1", *KEPT],
            "env": {**env_secrets, "NCCL_PROTO": "LL"},
        },
        config=[
            {"name": "base"},
            {"name": "keyed", "args": ["--api-key", SECRETS["argv --api-key"]]},
        ],
        verify={"probes": [{"prompt": "hi", "expect": r"\w"}]},
    )
    printed = []
    tok = WordTokenizer().save_hf(tmp / "tok")
    runs = [["run", str(camp)]]
    with start_sim("--ttft-ms", "2", "--itl-ms", "1") as sim:
        url = sim.url.replace("://", f"://user:{SECRETS['url userinfo']}@")
        runs.append(
            ["bench", "--url", url, "-c", "1", "--requests", "4", "--input-tokens", "8",
             "--output-tokens", "4", "--engine", "sim", "--tokenizer", str(tok),
             "--api-key-env", "MY_KEY", "--out", str(out / "bench.jsonl"), "--format", "json"]
        )  # fmt: skip
        runs += [
            ["report", "secrets", "--out-dir", str(out / "report")],
            ["report", "bench", "--out-dir", str(out / "report-bench")],
            *(["export", "--out", str(out / f"runs.{f}")] for f in ("csv", "jsonl", "parquet")),
            *(
                ["export", "--out", str(out / f"req.{f}"), "--what", "requests"]
                for f in ("csv", "jsonl")
            ),
        ]
        for args in runs:
            r = run_cli(*args, env=env)
            printed += [r.stdout, r.stderr]
            assert r.exit_code in (0, 1), (args, r.stderr[-2000:])
    return tmp, "\n".join(printed)


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and p.suffix not in (".toml",)]


def _written_by_inferlab(p: Path) -> bytes:
    """A file's bytes; of a server log, only the lines inferlab wrote into it."""
    data = p.read_bytes()
    if p.suffix == ".log" and p.parent.name == "logs":
        return b"".join(ln for ln in data.splitlines(keepends=True) if ln.startswith(b"# inferlab"))
    return data


def test_something_was_written(written: tuple[Path, str]) -> None:
    root, printed = written
    names = {p.name for p in _files(root)}
    for want in ("s.db", "bench.jsonl", "report.md", "report.html", "runs.parquet", "req.csv"):
        assert want in names, sorted(names)
    assert any(p.suffix == ".log" for p in _files(root)), "no server log"
    assert "C=1" in printed


@pytest.mark.parametrize("place", sorted(SECRETS))
def test_secret_is_never_written(written: tuple[Path, str], place: str) -> None:
    root, printed = written
    secret = SECRETS[place].encode()
    hits = [str(p.relative_to(root)) for p in _files(root) if secret in _written_by_inferlab(p)]
    if secret.decode() in printed:
        hits.append("<terminal>")
    assert not hits, f"{place}: the secret was written to {hits}"


def test_non_secret_flags_keep_their_values(written: tuple[Path, str]) -> None:
    """``--tokens-per-chunk 2`` (a name with "token" in it) is kept as given in the store, the
    report and the server's log."""
    root, _ = written
    kept = f"{KEPT[0]} {KEPT[1]}".encode()
    kept_json = f'"{KEPT[0]}", "{KEPT[1]}"'.encode()
    db = (root / "s.db").read_bytes()
    assert kept_json in db or f'"{KEPT[0]}","{KEPT[1]}"'.encode() in db
    logs = [p for p in _files(root) if p.suffix == ".log"]
    assert all(kept in p.read_bytes() for p in logs), logs
    md = next(p for p in _files(root) if p.name == "report.md" and "report-bench" not in str(p))
    assert kept in md.read_bytes() or KEPT[0].encode() + b" " + KEPT[1].encode() in md.read_bytes()
