"""Print the speed report's tables from a results folder (see speed_report.sh)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from engine.benchmark import format_table


def main(folder: Path) -> int:
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        print(f"== {path.stem}  ({', '.join(f'{k} {v}' for k, v in data['machine'].items())})")
        print(format_table(data["summary"]))
        for category, summary in data.get("categories", {}).items():
            print(f"-- {category}")
            print(format_table(summary))
        if "follow_up" in data:
            f = data["follow_up"]
            print(f"-- follow-up turn: TTFT {f['second_turn_ttft_s']:.3f} s with the prompt cache "
                  f"({f['second_turn_cached_tokens']}/{f['second_turn_prompt_tokens']} tokens cached), "
                  f"{f['second_turn_uncached_ttft_s']:.3f} s without; first turn {f['first_turn_ttft_s']:.3f} s")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
