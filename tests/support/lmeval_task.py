"""Test helper: a tiny local lm-evaluation-harness task (a YAML and its JSONL) whose answers
the reference engine's stated model knows (``sim_words``, docs/verify.md, "lm-eval").

Each of ``docs`` documents asks "which word follows number I?"; the target is the reference
engine's greedy next word after the prompt (seed ``seed``), except for the last ``wrong``
documents, whose target is a word the engine never says. So the engine of that seed scores
``(docs − wrong) / docs`` under exact_match, and one of another seed about 0.
"""

from __future__ import annotations

import json
from pathlib import Path

from inferlab.sim.lm import StatedModel
from inferlab.sim.tokenizer import WordTokenizer

__all__ = ["TASK", "write_task"]

TASK = "sim_words"
PROMPT = "Question: {{question}}\\nAnswer:"
YAML = """task: sim_words
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "{prompt}"
doc_to_target: "{{{{answer}}}}"
generation_kwargs:
  until: ["\\n"]
  max_gen_toks: 1
  do_sample: false
  temperature: 0.0
filter_list:
  - name: strip
    filter:
      - function: remove_whitespace
      - function: take_first
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1.0
"""


def write_task(folder: Path, *, docs: int = 20, wrong: int = 5, seed: int = 0) -> Path:
    """Write ``sim_words.yaml`` and ``sim_words.jsonl`` into ``folder``; returns ``folder``
    (the harness's ``include_path``)."""
    folder.mkdir(parents=True, exist_ok=True)
    tok = WordTokenizer(4096)
    lm = StatedModel(seed, tok)
    rows = []
    for i in range(docs):
        question = f"which word follows number {i}?"
        word = tok.decode(lm.greedy(f"Question: {question}\nAnswer:", 1))
        rows.append({"question": question, "answer": word if i < docs - wrong else "zzz"})
    data = folder / f"{TASK}.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / f"{TASK}.yaml").write_text(YAML.format(data=json.dumps(str(data)), prompt=PROMPT))
    return folder
