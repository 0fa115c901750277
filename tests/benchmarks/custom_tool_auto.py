"""Does a real model, left to choose (tool_choice "auto"), call Codex's freeform apply_patch, and does the patch
follow Codex's grammar? Sent to a running `specchat-cli serve` (not run by the suite):

    PYTHONPATH=. .venv/bin/python -m tests.benchmarks.custom_tool_auto --base-url http://127.0.0.1:8080/v1 \
        --model-dir ~/.cache/specchat-weights/imported/qwen2.5-coder-0.5b-instruct

One Responses request, greedy: Codex's apply_patch tool exactly as `codex exec` sent it (its Lark grammar,
tests/engine/serving/fixtures/codex_apply_patch_tool.json) beside one function (a shell), tool_choice "auto", a
prompt asking to apply a patch. The server holds a call's input to the grammar once the model names apply_patch in
a `<tool_call>` (engine/serving/tool_grammar.py auto_grammar); whether the model opens a call at all is its own
choice. The input that comes back is checked against the grammar by llguidance alone, outside the server.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import openai

FIXTURE = Path(__file__).parents[1] / "engine" / "serving" / "fixtures" / "codex_apply_patch_tool.json"
PATCH_TOOL = json.loads(FIXTURE.read_text())["tool"]
SHELL = {"type": "function", "name": "exec_command", "description": "Run a shell command.",
         "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}}
INSTRUCTIONS = ("You are a coding agent. Edit files with the apply_patch tool; run commands with exec_command. "
                "A patch looks like this:\n*** Begin Patch\n*** Update File: path/to/file.py\n@@\n-old line\n+new line\n"
                "*** End Patch")
TASK = "app.py holds:\n\ndef f(x):\n    return x + 1\n\nprint(f(2))\n\nApply a patch to app.py that renames the function f to g."


def grammar_takes(text: str, model_dir: Path) -> bool:
    """Whether Codex's grammar takes `text` whole, by llguidance alone over the model's own tokenizer."""
    from llguidance import LLMatcher
    from llguidance.hf import from_tokenizer
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    matcher = LLMatcher(from_tokenizer(tokenizer), LLMatcher.grammar_from_lark(PATCH_TOOL["format"]["definition"]))
    tokens = tokenizer.encode(text, add_special_tokens=False)
    return matcher.try_consume_tokens(tokens) == len(tokens) and bool(matcher.is_accepting())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model-dir", type=Path, required=True, help="the served model's folder (its tokenizer)")
    parser.add_argument("--max-tokens", type=int, default=160)
    args = parser.parse_args()
    client = openai.OpenAI(base_url=args.base_url, api_key="unused", max_retries=0, timeout=3600)
    model = client.models.list().data[0].id
    start = time.monotonic()
    response = client.responses.create(model=model, instructions=INSTRUCTIONS, input=TASK, tools=[SHELL, PATCH_TOOL],
                                       tool_choice="auto", temperature=0, max_output_tokens=args.max_tokens)
    print(f"{time.monotonic() - start:.1f} s, usage {response.usage}, speculation {response.model_extra.get('speculation')}")
    for item in response.output:
        print(item.type, json.dumps(item.model_dump(), indent=1))
        if item.type == "custom_tool_call":
            print("Codex's grammar takes the input (llguidance):", grammar_takes(item.input, args.model_dir.expanduser()))


if __name__ == "__main__":
    main()
