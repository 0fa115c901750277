"""The adaptive policy in a long-lived server (issue 27): a sequence of answers through `specchat-cli serve`.

One server process serves every mode, so the adaptive policy it keeps with the pair learns across the whole
sequence, as in a real session. Modes take turns on each prompt (standard, each fixed K, adaptive), the history
is off (no mode drafts another's answer), and each mode's figure is its tokens over its seconds; ratios are
within this one run.

    python -m tests.benchmarks.session_policy --target T [--draft D] --drafter model|lookup --ks 2,4,6 \
        --prompts resources/prompts/benchmark.json --answers 8 --max-tokens 64
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx


def start_server(target: str, draft: str | None) -> tuple[subprocess.Popen, str]:
    command = [sys.executable, "-m", "engine", "serve", "--target", target, "--port", "0", "--preset", "greedy"]
    command += ["--draft", draft] if draft else ["--drafter", "lookup"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=os.environ)
    line = process.stdout.readline()
    if not line.startswith("Serving "):
        raise SystemExit(f"the server did not start: {line!r}")
    return process, line.split(" on ")[1].split()[0]  # http://127.0.0.1:PORT/v1


def ask(client: httpx.Client, address: str, prompt: str, max_tokens: int, extra: dict) -> tuple[int, float, dict]:
    body = {"model": client.get(f"{address}/models").json()["data"][0]["id"], "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
            "temperature": 0, "history": False, **extra}
    start = time.perf_counter()
    response = client.post(f"{address}/chat/completions", json=body)
    seconds = time.perf_counter() - start
    response.raise_for_status()
    data = response.json()
    return data["usage"]["completion_tokens"], seconds, data["speculation"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True)
    parser.add_argument("--draft")
    parser.add_argument("--drafter", default="model")
    parser.add_argument("--ks", default="2,4,6")
    parser.add_argument("--prompts", default="resources/prompts/benchmark.json")
    parser.add_argument("--categories", default="")
    parser.add_argument("--answers", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()
    prompts = [p for p in json.loads(Path(args.prompts).read_text())
               if not args.categories or p["category"] in args.categories.split(",")]
    modes = {"standard": {"mode": "standard"}}
    modes.update({f"K={k}": {"adaptive": False, "num_draft": int(k), "drafter": args.drafter} for k in args.ks.split(",")})
    modes["adaptive"] = {"adaptive": True, "drafter": args.drafter}
    process, address = start_server(args.target, args.draft)
    totals = {name: [0, 0.0, 0, 0] for name in modes}
    try:
        with httpx.Client(timeout=600) as client:
            ask(client, address, "Hello", 8, {"mode": "standard"})  # warm-up
            for i in range(args.answers):
                prompt = prompts[i % len(prompts)]["prompt"]
                order = list(modes) if i % 2 == 0 else list(reversed(modes))
                for name in order:
                    tokens, seconds, spec = ask(client, address, prompt, args.max_tokens, modes[name])
                    totals[name][0] += tokens
                    totals[name][1] += seconds
                    totals[name][2] += spec["drafted"]
                    totals[name][3] += spec["accepted"]
                    if name == "adaptive":
                        reasons = [b["reason"] for b in spec["policy"]]
                        print(f"answer {i}: adaptive drafted {spec['drafted']}, {tokens / seconds:.2f} tok/s; {reasons}", flush=True)
    finally:
        process.terminate()
        process.wait(30)
    rate = {name: t[0] / t[1] for name, t in totals.items()}
    fixed = [n for n in modes if n.startswith("K=")]
    best = max(fixed, key=rate.get)
    for name, t in totals.items():
        print(f"{name:9s} {rate[name]:6.2f} tok/s  {rate[name] / rate['standard']:.3f}x standard  "
              f"drafted {t[2]:5d} accepted {t[3]:5d}")
    print(f"adaptive / best fixed ({best}): {rate['adaptive'] / rate[best]:.3f}; "
          f"adaptive / standard: {rate['adaptive'] / rate['standard']:.3f}")


if __name__ == "__main__":
    main()
