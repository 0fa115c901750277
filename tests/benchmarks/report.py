"""Print the speed report's tables from a results folder (see speed_report.sh)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from engine.cli.benchmark import format_table


def time_weighted(runs: list[dict]) -> str:
    """Each mode's speed over all its runs pooled: less sensitive than a median to a slow run or two."""
    tokens: dict[str, int] = {}
    seconds: dict[str, float] = {}
    for run in runs:
        if run["generation_tps"] > 0:
            tokens[run["mode"]] = tokens.get(run["mode"], 0) + run["tokens"]
            seconds[run["mode"]] = seconds.get(run["mode"], 0.0) + run["tokens"] / run["generation_tps"]
    standard = tokens["standard"] / seconds["standard"]
    return ", ".join(f"{mode} {tokens[mode] / seconds[mode] / standard:.2f}x" for mode in tokens)


def main(folder: Path) -> int:
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or "summary" not in data:
            continue  # not a benchmark result (a prompt file)
        print(f"== {path.stem}  ({', '.join(f'{k} {v}' for k, v in data['machine'].items())})")
        print(format_table(data["summary"]))
        for category, summary in data.get("categories", {}).items():
            print(f"-- {category}")
            print(format_table(summary))
        print("-- all runs pooled (total tokens / total seconds, vs standard): " + time_weighted(data["runs"]))
        if "follow_up" in data:
            f = data["follow_up"]
            print(f"-- follow-up turn: TTFT {f['second_turn_ttft_s']:.3f} s with the prompt cache "
                  f"({f['second_turn_cached_tokens']}/{f['second_turn_prompt_tokens']} tokens cached), "
                  f"{f['second_turn_uncached_ttft_s']:.3f} s without; first turn {f['first_turn_ttft_s']:.3f} s")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
