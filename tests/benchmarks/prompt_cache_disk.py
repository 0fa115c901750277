"""Time to first token when an agent's prefix comes back from disk, against reading it anew (docs/speed.md).

    .venv/bin/python -m tests.benchmarks.prompt_cache_disk --target DIR [--tokens 4096] [--iterations 2]

An agent's A, B, A again: A is the recorded Claude Code request (its text, as plain token ids) cut to `--tokens`,
B its title request, the third request A plus a turn. Every pair has no memory for shelved prefixes
(`--prompt-cache-mb 0`), and the modes alternate in one process:

- spilled: a disk (`--prompt-cache-disk-mb`): B's request writes A to a file, the third reads it back;
- restarted: a fresh pair on that folder (as after a restart) answers the third request from A's file;
- re-read: no disk, so after B the third request reads A anew (A's own request is left out: with no disk and
  no memory budget, what it leaves is gone once B is read).

Time to first token is wall clock from the call to the first token (the disk read included). Also printed: the
files' bytes per token, and whether every mode answered the third request with the same tokens (greedy).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from engine.decoding.generation import generate_stream
from engine.decoding.pair import ModelPair
from engine.decoding.prompt_cache_disk import DiskCache
from engine.events import GenerationResult, TokenEvent
from engine.models.loading import LoadedModel, load_model
from engine.params import GenerationParams

FIXTURES = Path(__file__).resolve().parents[1] / "engine" / "serving" / "fixtures"
TURN = "Read README.md and tell me in two sentences what this project is for."
PARAMS = GenerationParams(mode="standard", temperature=0.0, max_tokens=8)
MODES = ("spilled", "restarted", "re-read")


def prompts(model: LoadedModel, tokens: int) -> tuple[list[int], list[int], list[int]]:
    """A (the Claude Code request cut to `tokens`), B (its title request), A plus a turn."""
    encode = model.tokenizer.encode
    a = encode((FIXTURES / "claude_code_messages.json").read_text())[:tokens]
    b = encode((FIXTURES / "claude_code_title.json").read_text())
    return a, b, a + encode(" " + TURN)


def first_token(pair: ModelPair, prompt: list[int]) -> tuple[float, list[int], int]:
    """Seconds from the call to the first token, the answer's tokens, and the prompt tokens found cached."""
    start, ttft = time.perf_counter(), 0.0
    for event in generate_stream(pair, prompt, PARAMS, chat=False):
        if isinstance(event, TokenEvent) and not ttft:
            ttft = time.perf_counter() - start
        if isinstance(event, GenerationResult):
            return ttft, event.tokens, event.stats.cached_prompt_tokens
    raise RuntimeError("generation ended without a result")


def one_iteration(model: LoadedModel, a: list[int], b: list[int], third: list[int]) -> dict[str, tuple[float, list[int], int]]:
    folder = Path(tempfile.mkdtemp(prefix="spill-"))
    results = {}
    for mode in MODES:
        pair = ModelPair(model)
        pair.prompt_cache.budget_bytes = 0
        if mode != "re-read":
            pair.prompt_cache.disk = DiskCache(folder, 8 << 30)
        for prompt in {"spilled": (a, b), "restarted": (), "re-read": (b,)}[mode]:
            first_token(pair, prompt)
        results[mode] = first_token(pair, third)
        if mode == "spilled":
            pair.prompt_cache.disk.flush()  # type: ignore[union-attr]  # set above; the files still being written
            files = list(folder.glob("*.safetensors"))
            entries = pair.prompt_cache.disk.entries()  # type: ignore[union-attr]  # set above
            per_token = sum(f.stat().st_size for f in files) / sum(len(e.tokens) for e in entries)
            print(f"   files: {len(files)}, {per_token / 1024:.1f} KB per token", flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", required=True)
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--iterations", type=int, default=2)
    args = parser.parse_args()
    model = load_model(args.target)
    a, b, third = prompts(model, args.tokens)
    print(f"A {len(a)} tokens, B {len(b)}, third request {len(third)}")
    ttfts: dict[str, list[float]] = {mode: [] for mode in MODES}
    answers = set()
    for i in range(args.iterations):
        results = one_iteration(model, a, b, third)
        for mode, (ttft, tokens, cached) in results.items():
            ttfts[mode].append(ttft)
            answers.add(json.dumps(tokens))
            print(f"{i}: {mode:9s} first token after {ttft:7.2f} s ({cached} tokens cached)", flush=True)
    reread = statistics.mean(ttfts["re-read"])
    for mode in MODES:
        mean = statistics.mean(ttfts[mode])
        print(f"{mode:9s} mean {mean:7.2f} s, {reread / mean:6.1f}x sooner than re-reading")
    print("same tokens in every mode:", len(answers) == 1)


if __name__ == "__main__":
    main()
