"""Scripted drafters: registered kinds whose acceptance a script fixes, Automatic's candidates in the benchmark."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from engine import drafter_kinds
from engine.cli import benchmark
from engine.cli.main import main
from engine.cli.scripted_drafters import Script, register_scripted, script_drafters
from engine.decoding.drafting.automatic import asked_drafters
from engine.decoding.generation import generate
from engine.decoding.pair import ModelPair
from engine.errors import SpecChatError
from engine.params import GenerationParams

GREEDY = GenerationParams(temperature=0.0, top_p=1.0, max_tokens=40, num_draft=4)
# Right on every token of code, never on chat; and a token drafter never right: on code Automatic must find the first.
GOOD_ON_CODE = {"name": "scripted-good", "block": True, "cost": 0.05, "acceptance": {"code": 1.0}, "seed": 3}
NEVER_RIGHT = {"name": "scripted-wrong", "block": False, "cost": 0.05, "acceptance": {}, "default": 0.0}


@pytest.fixture
def scripts(tmp_path: Path):
    """The two scripts as files; the kinds and modes they register are removed afterwards."""
    paths = []
    for script in (GOOD_ON_CODE, NEVER_RIGHT):
        paths.append(tmp_path / f"{script['name']}.json")
        paths[-1].write_text(json.dumps(script))
    yield paths
    for script in (GOOD_ON_CODE, NEVER_RIGHT):
        drafter_kinds.KINDS.pop(script["name"], None)
        benchmark.OUR_MODES.pop(script["name"], None)


def test_a_scripted_drafter_is_a_kind_automatic_asks_beside_the_others(scripts, tiny_pair: ModelPair) -> None:
    """One row and its module: the pair holds it, it hears no hidden states, and Automatic asks it."""
    for path in scripts:
        register_scripted(path)
    assert "scripted-good" in drafter_kinds.names() and "scripted-good" in benchmark.OUR_MODES
    assert not drafter_kinds.listens("scripted-good")
    script_drafters(tiny_pair, scripts, [tiny_pair.prompt_ids("def f(x):")], ["code"], GREEDY)
    assert {"scripted-good", "scripted-wrong"} <= set(tiny_pair.drafter_names())
    assert asked_drafters(tiny_pair, GREEDY) == ("lookup", "model", "scripted-good", "scripted-wrong")


def test_its_drafts_are_right_where_the_script_says_and_the_output_stays_exact(scripts, tiny_pair: ModelPair) -> None:
    """Right on every token: whole drafts accepted; never right: none accepted; greedy output standard's."""
    for path in scripts:
        register_scripted(path)
    prompt = tiny_pair.prompt_ids("def f(x):")
    script_drafters(tiny_pair, scripts, [prompt], ["code"], GREEDY)
    expected = generate(prompt, tiny_pair, GREEDY.replace(mode="standard")).tokens
    good = generate(prompt, tiny_pair, GREEDY.replace(drafter="scripted-good"))
    wrong = generate(prompt, tiny_pair, GREEDY.replace(drafter="scripted-wrong"))
    assert good.tokens == wrong.tokens == expected
    assert good.stats.drafted > 0 and good.stats.accepted == good.stats.drafted
    assert wrong.stats.drafted > 0 and wrong.stats.accepted == 0


def test_the_scripted_benchmark_keeps_greedy_output_and_automatic_picks_the_drafter_that_pays(
        scripts, tiny_dirs, tmp_path: Path) -> None:
    """`benchmark --scripted` on the tiny pair: every mode's output is standard's, the drafter always right on code
    has every draft accepted, and Automatic drafts with it more than with the one never right."""
    prompts = tmp_path / "prompts.json"
    prompts.write_text(json.dumps([{"prompt": "def f(x):", "category": "code"}]))
    out = io.StringIO()
    assert main(["benchmark", "--target", str(tiny_dirs[0]), "--draft", str(tiny_dirs[1]), "--prompt-file", str(prompts),
                 "--max-tokens", "48", "--iterations", "2", "--scripted", str(scripts[0]), "--scripted", str(scripts[1]),
                 "--modes", "standard,scripted-good,scripted-wrong,automatic", "--json"], out) == 0
    report = json.loads(out.getvalue())
    assert all(s["identical_to_standard"] for s in report["summary"].values())
    automatic = [run for run in report["runs"] if run["mode"] == "automatic"]
    good = sum(run["drafted_by"].get("scripted-good", 0) for run in automatic)
    wrong = sum(run["drafted_by"].get("scripted-wrong", 0) for run in automatic)
    assert report["summary"]["scripted-good"]["acceptance_rate"] == 1.0  # fixed by the script: no timing in it
    assert good > wrong  # the one never right drafts while it is measured, then only when probed


def test_a_bad_script_is_refused_with_what_to_fix(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('{"name": "model", "block": true, "cost": 0.1}')
    with pytest.raises(SpecChatError, match="needs a name like 'scripted-block'"):
        Script.read(path)
    path.write_text('{"name": "scripted-x", "cost": 0.1}')
    with pytest.raises(SpecChatError, match="needs an object with name, block, cost"):
        Script.read(path)
    with pytest.raises(SpecChatError, match="Cannot read the scripted drafter"):
        Script.read(tmp_path / "missing.json")


def test_scripted_drafters_need_greedy_decoding(scripts, tiny_pair: ModelPair) -> None:
    register_scripted(scripts[0])
    with pytest.raises(SpecChatError, match="greedy continuation"):
        script_drafters(tiny_pair, scripts[:1], [tiny_pair.prompt_ids("hi")], ["chat"], GREEDY.replace(temperature=0.7))
