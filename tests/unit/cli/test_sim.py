"""``inferlab sim tokenizer`` in process."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.cli import Cli

pytestmark = pytest.mark.timeout(60)


def test_tokenizer_command(cli: Cli, tmp_path: Path) -> None:
    done = cli("sim", "tokenizer", str(tmp_path / "tok"), "--vocab-size", "100")
    assert done.exit_code == 0, done.stderr
    assert (tmp_path / "tok" / "tokenizer.json").is_file()
    done = cli("sim", "tokenizer", str(tmp_path / "bad"), "--vocab-size", "1")
    assert done.exit_code == 2 and "--vocab-size" in done.stderr
