"""What the history index costs: 1,000 saved conversations, indexed as the app does after loading a pair.

    python -m tests.benchmarks.suffix_index MODEL_DIR [CONVERSATIONS]

Conversations are made from the bundled prompts and their pieces, shuffled, with a made-up answer each (about
600 tokens a conversation), so that some material repeats across them as it does in real use. Prints the
indexing time (tokenizing and building, as `start_indexing` runs it), memory per token, the time to add a
finished answer (per token of the conversation it extends), and the time of one lookup.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

from engine.decoding.drafting.history_lookup import DraftHistory, start_indexing
from engine.models.app_paths import RESOURCES


def make_chats(count: int, seed: int = 0) -> list[list[dict[str, str]]]:
    rng = random.Random(seed)
    prompts = [p["prompt"] for p in json.loads((RESOURCES / "prompts" / "benchmark.json").read_text())]
    sentences = [s.strip() + "." for p in prompts for s in p.replace("\n", " ").split(".") if s.strip()]
    chats = []
    for _ in range(count):
        question = f"Conversation {len(chats) + 1}. " + rng.choice(prompts)  # distinct chats, distinct keys
        answer = " ".join(rng.choice(sentences) for _ in range(rng.randint(10, 30)))
        follow_up = " ".join(rng.sample(sentences, 3))
        chats.append([{"role": "user", "content": question}, {"role": "assistant", "content": answer},
                      {"role": "user", "content": follow_up}, {"role": "assistant", "content": answer[::-1][:400]}])
    return chats


def main(model_dir: str, count: int = 1000) -> None:
    chats = make_chats(count)
    history = DraftHistory()
    start = time.perf_counter()
    start_indexing(history, Path(model_dir), lambda: iter(chats)).join()
    indexing_s = time.perf_counter() - start
    tokens = history.tokens
    print(f"{history.documents} conversations, {tokens} tokens: indexed in {indexing_s:.2f} s "
          f"({indexing_s / tokens * 1e6:.1f} us a token, tokenizing included)")
    build_start = time.perf_counter()
    history.rebuild()
    build_s = time.perf_counter() - build_start
    print(f"suffix array alone: {build_s:.2f} s ({build_s / tokens * 1e6:.2f} us a token); "
          f"memory {history.nbytes / 1e6:.1f} MB ({history.nbytes / tokens:.1f} bytes a token)")
    from mlx_lm.utils import load_tokenizer

    from engine.decoding.prompt_ids import prompt_token_ids

    tokenizer = load_tokenizer(Path(model_dir))
    grown = prompt_token_ids(tokenizer, chats[7] + [{"role": "user", "content": "And once more, shorter."}])
    add_start = time.perf_counter()
    for _ in range(20):
        history.add(grown)
    add_s = (time.perf_counter() - add_start) / 20
    print(f"adding a finished answer: {add_s * 1e3:.2f} ms for its {len(grown)}-token conversation "
          f"({add_s / len(grown) * 1e6:.2f} us a token)")
    contexts = [prompt_token_ids(tokenizer, chat[:2]) for chat in chats[:200]]
    lookup_start = time.perf_counter()
    found = [history.continuation(context[: len(context) // 2], 8) for context in contexts]
    lookup_s = (time.perf_counter() - lookup_start) / len(contexts)
    matched = sum(1 for f in found if f.tokens)
    print(f"one lookup: {lookup_s * 1e6:.0f} us ({matched} of {len(contexts)} mid-answer contexts found a continuation)")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1000)
