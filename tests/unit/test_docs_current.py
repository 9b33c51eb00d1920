"""The docs are current: the generated pages match the code, every relative link resolves, every
page is reachable from docs/index.md, design.md names every command, and the commands the README
and docs/*.md show take the options they are shown with."""

from __future__ import annotations

import importlib.util
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from support import ROOT

DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _links(page: Path) -> list[str]:
    """The relative link targets of a page (outside code blocks), without their #anchor."""
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    return [
        t.split("#", 1)[0]
        for t in _LINK.findall(text)
        if not re.match(r"[a-z][a-z0-9+.-]*:", t) and not t.startswith("#")
    ]


@pytest.mark.parametrize("name", ["module_map", "cli_doc"])
def test_the_generated_pages_are_current(name: str) -> None:
    assert _script(name).main(["--check"]) == 0, f"run: python scripts/{name}.py"


def test_cli_doc_check_fails_on_a_stale_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli_doc = _script("cli_doc")
    page = tmp_path / "cli.md"
    page.write_text(cli_doc.render().replace("--concurrency", "--users"), encoding="utf-8")
    monkeypatch.setattr(cli_doc, "DOC", page)
    assert cli_doc.main(["--check"]) == 1
    assert cli_doc.main([]) == 0 and cli_doc.main(["--check"]) == 0


def test_every_relative_link_points_to_an_existing_file() -> None:
    dead = [
        f"{page.relative_to(ROOT)}: {target}"
        for page in PAGES
        for target in _links(page)
        if target and not (page.parent / target).exists()
    ]
    assert not dead, "dead links:\n" + "\n".join(dead)


def test_every_docs_page_is_reachable_from_the_index() -> None:
    seen, todo = set(), [DOCS / "index.md"]
    while todo:
        page = todo.pop().resolve()
        if page in seen or page.suffix != ".md" or not page.exists():
            continue
        seen.add(page)
        todo += [page.parent / t for t in _links(page) if t]
    missing = [p.name for p in sorted(DOCS.glob("*.md")) if p.resolve() not in seen]
    assert not missing, f"not reachable from docs/index.md: {missing}"


def _commands() -> Callable[[list[str]], tuple[Any, list[str]] | None]:
    """A lookup: shown words after ``inferlab`` → (the click command, the rest of the words)."""
    from inferlab.cli.lazy import load_command
    from inferlab.cli.main import COMMANDS

    loaded: dict[str, Any] = {}

    def find(words: list[str]) -> tuple[Any, list[str]] | None:
        if not words or words[0] not in COMMANDS:
            return None
        name = words[0]
        cmd = loaded.get(name) or loaded.setdefault(name, load_command(name, COMMANDS[name].target))
        rest = words[1:]
        while getattr(cmd, "commands", None) and rest and rest[0] in cmd.commands:
            cmd, rest = cmd.commands[rest[0]], rest[1:]
        return cmd, rest

    return find


def _shown_commands(page: Path) -> list[list[str]]:
    """The command lines of a page's code (fenced or indented) that start with ``inferlab``, one
    per ``;``/``&``/``|``."""
    text = re.sub(r"\\\n\s*", " ", page.read_text(encoding="utf-8"))  # continued lines
    code = [line for block in _FENCE.findall(text) for line in block.splitlines()]
    code += re.findall(r"^(?: {4}|\t).*$", _FENCE.sub("", text), re.M)
    shown = []
    for line in code:
        found = re.match(r"\s*(?:\$ )?(inferlab .*)$", line)
        for part in re.split(r"[;&|]", found.group(1) if found else ""):
            words = shlex.split(part, comments=True) if part.strip() else []
            if words[:1] == ["inferlab"]:
                shown.append(words[1:])
    return shown


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_commands_shown_take_the_options_they_are_shown_with(page: Path) -> None:
    find, wrong = _commands(), []
    for words in _shown_commands(page):
        found = find(words)
        if found is None:
            wrong.append(f"inferlab {' '.join(words)}: no such command")
            continue
        cmd, rest = found
        known = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
        wrong += [
            f"inferlab {' '.join(words[: len(words) - len(rest)])}: no option {w}"
            for w in (w.strip("[]").split("=", 1)[0] for w in rest)
            if w.startswith("--") and " " not in w and w not in known
        ]
    assert not wrong, "\n".join(wrong)


def test_the_design_page_names_every_command() -> None:
    from inferlab.cli.main import COMMANDS

    text = (DOCS / "design.md").read_text(encoding="utf-8")
    section = text.split("## Commands (the user's view)", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"^\| [^|]+ \| (.*) \|$", section, re.M))
    shown = {m for row in named for m in re.findall(r"`([a-z-]+)`", re.sub(r"\([^()]*\)", "", row))}
    assert shown == set(COMMANDS), f"missing {set(COMMANDS) - shown}, extra {shown - set(COMMANDS)}"
