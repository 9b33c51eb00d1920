"""``python -m inferlab``: the ``inferlab`` command (where the console script is not installed)."""

from inferlab.cli.main import main

main()
