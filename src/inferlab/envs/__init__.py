"""Environments inferlab builds for real engines (cached under ``~/.cache/inferlab``)."""
