"""The demo's quote-and-edit workload: chat prompts that ask the model to copy a given text with
one small change, so most of the answer is a span of the prompt (where n-gram drafting, which
proposes the tokens that followed the last n-gram seen in the context, should help).

``write_quote_prompts(path)`` writes them as a ``jsonl`` workload (one ``{"messages"}`` a line,
docs/workloads.md); ``examples/vllm-cpu-quote.toml`` reads it. Texts written for inferlab.
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["PASSAGES", "TASKS", "quote_prompts", "write_quote_prompts"]

PASSAGES = (
    "The lighthouse stood at the end of the harbour wall, painted white with a red band around "
    "its middle. Every evening the keeper climbed the ninety steps, trimmed the wick, polished "
    "the lens and wrote the weather in a thick book with a green cover. Ships passing in the "
    "night saw the light turn once every twelve seconds.",
    "To make bread, mix five hundred grams of flour with ten grams of salt and seven grams of "
    "dried yeast. Add three hundred and fifty millilitres of warm water and knead the dough for "
    "ten minutes, until it is smooth. Leave it to rise for an hour, shape it, let it rise again "
    "and bake it at two hundred and twenty degrees for thirty minutes.",
    "The meeting will take place on Tuesday at half past nine in the small room on the second "
    "floor. Please bring the budget for next year, the list of open positions and your notes "
    "from the last review. Coffee will be served at the start, and we expect to finish before "
    "lunch.",
    "Rivers carry water from the mountains to the sea. On the way they cut valleys, move sand "
    "and stones, and leave rich soil on their banks when they flood. Many of the oldest cities "
    "in the world were built beside rivers, because the water gave people something to drink, "
    "a way to travel and land that was easy to farm.",
    "Our library is open from Monday to Saturday, from nine in the morning until seven in the "
    "evening. Members may borrow up to eight books at a time for three weeks. Books can be "
    "renewed twice, online or at the front desk, unless another member has asked for them.",
    "The train to the coast leaves from platform four every hour, on the hour. The journey "
    "takes two hours and ten minutes and stops at six stations. Tickets bought on the day cost "
    "more than those bought in advance, and bicycles travel free in the last carriage.",
    "A good password is long, easy for you to remember and hard for anyone else to guess. Use "
    "a different password for every account, keep them in a password manager, and turn on a "
    "second step of sign-in wherever a service offers it.",
    "The garden has four beds. The first grows tomatoes and beans, the second potatoes, the "
    "third herbs such as mint, thyme and basil, and the fourth flowers for the bees. A wooden "
    "bench stands under the apple tree, and a path of flat stones runs between the beds.",
)

#: what to do to a passage: each keeps most of it word for word
TASKS = (
    "Copy the following text exactly, word for word:",
    "Rewrite the following text exactly as it is, but in the past tense where it fits:",
    "Repeat the following text, changing only the first sentence to a question:",
    "Copy the following text and put it in capital letters only in its first word:",
)


def quote_prompts() -> list[dict[str, object]]:
    """Every task on every passage: 32 chat requests, in a fixed order."""
    return [
        {"messages": [{"role": "user", "content": f"{task}\n\n{text}"}]}
        for text in PASSAGES
        for task in TASKS
    ]


def write_quote_prompts(path: Path) -> Path:
    """The prompts as a ``jsonl`` workload file at ``path`` (written only when it differs)."""
    body = "".join(json.dumps(p) + "\n" for p in quote_prompts())
    if not path.is_file() or path.read_text() != body:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    return path
