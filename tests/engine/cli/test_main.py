"""specchat-cli: the JSON contracts and a clear one-line error with a non-zero exit for each bad input."""

from __future__ import annotations

import io
import json
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from engine.cli.main import main

STATS_KEYS = {"rounds", "drafted", "accepted", "acceptance_rate", "tokens_per_pass", "generation_tps", "prompt_tps",
              "ttft_s", "total_s", "peak_memory_gb"}


def run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


def tiny_args(tiny_dirs, *extra: str) -> list[str]:
    return ["generate", "--target", str(tiny_dirs[0]), "--draft", str(tiny_dirs[1]), *extra]


def test_generate_json_contract(tiny_dirs) -> None:
    code, out = run(tiny_args(tiny_dirs, "--prompt", "Hello", "--chat", "--max-tokens", "12", "--json", "--no-adaptive"))
    assert code == 0
    data = json.loads(out)
    assert set(data) >= {"text", "tokens", "origins", "stats"}
    assert len(data["tokens"]) == len(data["origins"]) == 12
    # A round with one token of budget left drafts nothing: only the last token may come from the target alone.
    assert set(data["origins"][:-1]) <= {"accepted", "corrected", "bonus"}
    assert data["origins"][-1] in {"accepted", "corrected", "bonus", "target"}
    assert STATS_KEYS <= set(data["stats"])


def test_generate_streams_text_and_stats(tiny_dirs) -> None:
    code, out = run(tiny_args(tiny_dirs, "--prompt", "Hello", "--max-tokens", "8", "--stats", "--mode", "standard"))
    assert code == 0
    assert out.splitlines()[-1].endswith("8 tokens, first after " + out.splitlines()[-1].split("first after ")[-1])
    assert "standard decoding" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--target", "/no/such/model", "--prompt", "hi"], "No model at /no/such/model: the path does not exist"),
        (["--target", "{tmp}", "--prompt", "hi"], "is not a model folder"),
        (["--target", "{target}", "--draft", "{other}", "--prompt", "hi"], "cannot draft for"),
        (["--target", "{target}", "--num-draft", "0", "--prompt", "hi"], "Draft length (num_draft) must be at least 1"),
        (["--target", "{target}", "--temp", "-1", "--prompt", "hi"], "Temperature must be 0 (greedy) or more"),
        (["--target", "{target}", "--prompt", " "], "The prompt is empty"),
        (["--target", "{target}", "--prompt", "{long}"], "reads at most 1024. Shorten it"),
    ],
)
def test_bad_input_gives_one_line_and_a_non_zero_exit(argv, message, tiny_dirs, other_tokenizer_model, tmp_path, capsys) -> None:
    values = {"tmp": str(tmp_path), "target": str(tiny_dirs[0]), "other": str(other_tokenizer_model), "long": "word " * 1100}
    code, _ = run(["generate", *[a.format(**values) for a in argv]])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err


def test_benchmark_json_contract(tiny_dirs) -> None:
    code, out = run(["benchmark", "--target", str(tiny_dirs[0]), "--draft", str(tiny_dirs[1]), "--modes", "speculative",
                     "--prompt", "Hello", "--prompt", "def f(x):", "--max-tokens", "16", "--iterations", "2", "--json"])
    assert code == 0
    data = json.loads(out)
    assert {r["mode"] for r in data["runs"]} == {"standard", "speculative"}  # standard always runs as the baseline
    assert len(data["runs"]) == 2 * 2 * 2
    assert set(data["runs"][0]) >= {"mode", "prompt_index", "iteration", "tokens", "generation_tps", "acceptance_rate",
                                    "tokens_per_pass", "identical_to_standard"}
    assert all(r["identical_to_standard"] for r in data["runs"])
    for summary in data["summary"].values():
        assert set(summary) >= {"median_tps", "speedup_vs_standard", "acceptance_rate", "tokens_per_pass"}
    assert data["summary"]["standard"]["speedup_vs_standard"] == 1.0


def test_benchmark_refuses_unknown_modes_and_modes_needing_a_draft(tiny_dirs, capsys) -> None:
    assert run(["benchmark", "--target", str(tiny_dirs[0]), "--modes", "warp"])[0] == 1
    assert "Unknown benchmark mode 'warp'" in capsys.readouterr().err
    assert run(["benchmark", "--target", str(tiny_dirs[0]), "--modes", "speculative"])[0] == 1
    assert "needs a draft model" in capsys.readouterr().err


def test_list_models_shows_the_catalog(isolated_home) -> None:
    code, out = run(["list-models"])
    assert code == 0
    assert "Qwen2.5-0.5B-Instruct-4bit -> Qwen2.5-7B-Instruct-4bit" in out and out.startswith("*")


def test_import_gguf_of_a_missing_file(tmp_path: Path, capsys) -> None:
    assert run(["import-gguf", str(tmp_path / "x.gguf"), str(tmp_path / "out")])[0] == 1
    assert "No GGUF file at" in capsys.readouterr().err


def test_python_dash_m_engine_runs_the_cli(tiny_dirs) -> None:
    done = subprocess.run([sys.executable, "-m", "engine", "generate", "--target", str(tiny_dirs[0]), "--prompt", "x",
                           "--max-tokens", "3", "--json", "--mode", "standard",
                           "--preset", "greedy"], capture_output=True, text=True, timeout=120)  # sampled, it may end early
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["tokens"]) == 3


def test_download_models_delete_round_trip(fake_hub, capsys) -> None:
    code, out = run(["download", "test/tiny-target"])
    assert code == 0 and "test/tiny-target is in " in out
    assert "100.0%" in capsys.readouterr().err  # the terminal progress bar finished
    code, out = run(["models"])
    assert "test/tiny-target" in out and " GB  " in out
    code, out = run(["delete", "test/tiny-target"])
    assert code == 0 and out.startswith("Deleted test/tiny-target, freeing ")
    assert "test/tiny-target" not in run(["models"])[1]


def test_download_errors_are_one_line(fake_hub, capsys) -> None:
    assert run(["download", "test/gated"])[0] == 1
    err = capsys.readouterr().err
    assert err.startswith("error: test/gated is gated") and err.count("\n") == 1


def test_check_pair_prints_the_verdict_and_reasons(tiny_dirs, other_tokenizer_model) -> None:
    code, out = run(["check-pair", "--target", str(tiny_dirs[0]), "--draft", str(tiny_dirs[1])])
    assert code == 0 and out.startswith("compatible: ")
    code, out = run(["check-pair", "--target", str(tiny_dirs[0]), "--draft", str(other_tokenizer_model)])
    assert code == 1 and out.startswith("incompatible: ") and "target tokens are missing from the draft" in out


def test_list_models_shows_download_state_and_fit(isolated_home) -> None:
    code, out = run(["list-models"])
    assert code == 0 and "GB to download" in out and "needs" in out and "this machine gives models about" in out


def test_options_left_out_come_from_the_preset() -> None:
    from engine.cli.main import _params, build_parser
    from engine.params import GenerationParams

    parser = build_parser()
    generate_args = parser.parse_args(["generate", "--target", "t", "--prompt", "p"])
    assert _params(generate_args) == GenerationParams.preset("default")
    benchmark_args = parser.parse_args(["benchmark", "--target", "t", "--draft", "d"])
    assert _params(benchmark_args) == GenerationParams.preset("greedy")
    given = parser.parse_args(
        ["generate", "--target", "t", "--prompt", "p", "--preset", "creative", "--max-tokens", "7", "--no-adaptive", "--temp", "0"]
    )
    assert _params(given) == GenerationParams.preset("creative").replace(max_tokens=7, adaptive=False, temperature=0.0)
    penalised = parser.parse_args(["serve", "--target", "t", "--presence-penalty", "0.5", "--frequency-penalty", "-0.25"])
    assert (_params(penalised).presence_penalty, _params(penalised).frequency_penalty) == (0.5, -0.25)


def test_generate_with_a_draft_and_no_drafter_runs_automatic_and_a_named_drafter_is_kept() -> None:
    """Issue 31: Automatic is the default with or without --draft; --drafter still pins one, and --mode ssd, which
    pre-drafts with a draft model, drafts with it."""
    from engine.cli.main import _params, build_parser

    parser = build_parser()
    generate = ["generate", "--target", "t", "--draft", "d", "--prompt", "p"]
    assert _params(parser.parse_args(generate)).drafter == "auto"
    assert _params(parser.parse_args(generate + ["--drafter", "lookup"])).drafter == "lookup"
    ssd = parser.parse_args(generate + ["--mode", "ssd"])
    assert _params(ssd, mode=ssd.mode).drafter == "model"


def test_the_prompt_comes_from_standard_input_or_a_file(tiny_dirs, tmp_path, monkeypatch) -> None:
    args = ["--max-tokens", "4", "--mode", "standard", "--json", "--preset", "greedy"]
    code, from_text = run(tiny_args(tiny_dirs, "--prompt", "Tell me a story", *args))
    monkeypatch.setattr("sys.stdin", io.StringIO("Tell me a story"))
    code_stdin, from_stdin = run(tiny_args(tiny_dirs, "--prompt", "-", *args))
    prompt_file = tmp_path / "prompt.txt"
    prompt_file.write_text("Tell me a story", encoding="utf-8")
    code_file, from_file = run(tiny_args(tiny_dirs, "--prompt-file", str(prompt_file), *args))
    assert code == code_stdin == code_file == 0
    assert json.loads(from_text)["tokens"] == json.loads(from_stdin)["tokens"] == json.loads(from_file)["tokens"]


def test_a_missing_prompt_file_and_damaged_weights_are_one_line_each(tiny_dirs, tmp_path, capsys) -> None:
    """A safetensors file cut short (an interrupted copy) used to end in MLX's traceback."""
    import shutil

    damaged = tmp_path / "damaged"
    shutil.copytree(tiny_dirs[0], damaged)
    weights = damaged / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    for argv, message in [
        (["generate", "--target", str(tiny_dirs[0]), "--prompt-file", str(tmp_path / "nope.txt")], "Cannot read the prompt file"),
        (["generate", "--target", str(damaged), "--prompt", "hi"], "damaged's weights are damaged: model.safetensors holds"),
        (["check-pair", "--target", str(tiny_dirs[0]), "--draft", str(damaged)], "download or copy it again"),
    ]:
        code, _ = run(argv)
        err = capsys.readouterr().err
        assert code == 1 and err.startswith("error: ") and err.count("\n") == 1 and message in err, err


def test_trace_writes_one_json_object_per_round_that_adds_up(tiny_dirs, tmp_path) -> None:
    trace = tmp_path / "trace.jsonl"
    code, out = run(tiny_args(tiny_dirs, "--prompt", "Hello", "--max-tokens", "40", "--json", "--no-adaptive",
                              "--preset", "greedy", "--trace", str(trace)))
    result = json.loads(out)
    rounds = [json.loads(line) for line in trace.read_text().splitlines()]
    assert code == 0 and [r["round"] for r in rounds] == list(range(result["stats"]["rounds"]))
    required = {"round", "drafter", "k", "draft", "accepted", "next", "p", "q", "draft_s", "verify_s"}
    assert all(required <= set(r) for r in rounds)
    emitted = [token for r in rounds for token in (r["draft"][: r["accepted"]] + [r["next"]])[: r["emitted"]]]
    assert emitted == result["tokens"]
    assert sum(r["k"] for r in rounds) >= result["stats"]["drafted"] and any(r["rejected"] is not None for r in rounds)


def test_benchmark_conversation_json_contract(tiny_dirs, tmp_path: Path) -> None:
    chats = tmp_path / "chat.json"
    chats.write_text(json.dumps([["Hello there", "Say it again"], ["Hello once more"]]))
    code, out = run(["benchmark", "--target", str(tiny_dirs[0]), "--modes", "prompt-lookup", "--conversation", str(chats),
                     "--max-tokens", "12", "--iterations", "2", "--json"])
    assert code == 0
    data = json.loads(out)
    assert len(data["runs"]) == 2 * 2 * 3 and all(r["identical_to_standard"] for r in data["runs"])
    assert [r["category"] for r in data["runs"][:3]] == ["chat 1 turn 1", "chat 1 turn 2", "chat 2 turn 1"]
    lookup = data["summary"]["prompt-lookup"]
    assert set(lookup) >= {"median_tps", "speedup_vs_standard", "acceptance_rate", "tokens_per_pass", "turns"}
    assert [t["category"] for t in lookup["turns"]] == ["chat 1 turn 1", "chat 1 turn 2", "chat 2 turn 1"]
    assert data["summary"]["standard"]["speedup_vs_standard"] == 1.0


@pytest.mark.parametrize(
    "content, message",
    [("{", "is not valid JSON"), ('{"a": 1}', "must hold a JSON list of user messages"), ("[[]]", "must hold a JSON list")],
)
def test_benchmark_conversation_refuses_bad_files(tiny_dirs, tmp_path: Path, capsys, content: str, message: str) -> None:
    path = tmp_path / "chat.json"
    path.write_text(content)
    assert run(["benchmark", "--target", str(tiny_dirs[0]), "--conversation", str(path)])[0] == 1
    assert message in capsys.readouterr().err
    assert run(["benchmark", "--target", str(tiny_dirs[0]), "--conversation", str(tmp_path / "none.json")])[0] == 1
    assert "Cannot read the conversation file" in capsys.readouterr().err
    path.write_text('["Hi"]')
    assert run(["benchmark", "--target", str(tiny_dirs[0]), "--conversation", str(path), "--modes", "mlx-lm-standard"])[0] == 1
    assert "take single prompts" in capsys.readouterr().err


def test_lenience_says_lossy_on_stderr_and_in_the_stats_line(tiny_dirs, capsys) -> None:
    code, out = run(tiny_args(tiny_dirs, "--prompt", "Hello", "--max-tokens", "8", "--stats", "--lenience", "0.5", "--temp", "1"))
    assert code == 0 and "LOSSY (lenience 0.5)" in out.splitlines()[-1]
    assert "lenience 0.5 is LOSSY" in capsys.readouterr().err
    assert run(tiny_args(tiny_dirs, "--prompt", "Hello", "--lenience", "1.5"))[0] == 1
    assert "lenience must be in [0, 1]" in capsys.readouterr().err


def test_the_benchmark_labels_the_lenient_mode_lossy(tiny_dirs) -> None:
    code, out = run(["benchmark", "--target", str(tiny_dirs[0]), "--draft", str(tiny_dirs[1]), "--modes", "lenient",
                     "--prompt", "Hello", "--max-tokens", "8", "--lenience", "0.25", "--json"])
    lenient = json.loads(out)["summary"]["lenient"]
    assert code == 0 and lenient["lossy"] is True and lenient["lenience"] == 0.25


def test_mode_ssd_pre_drafts_and_reports_its_hit_rate(tiny_dirs) -> None:
    code, out = run(tiny_args(tiny_dirs, "--prompt", "Hello", "--max-tokens", "24", "--mode", "ssd", "--fanout", "2",
                              "--preset", "greedy", "--no-adaptive", "--json"))
    stats = json.loads(out)["stats"]
    assert code == 0 and stats["predrafted"] > 0 and stats["fanout_hit_rate"] is not None
    _, standard = run(tiny_args(tiny_dirs, "--prompt", "Hello", "--max-tokens", "24", "--mode", "standard",
                                "--preset", "greedy", "--json"))
    assert json.loads(out)["tokens"] == json.loads(standard)["tokens"]


def test_the_benchmark_ssd_mode_adds_the_fanout_hit_rate(tiny_dirs) -> None:
    code, out = run(["benchmark", "--target", str(tiny_dirs[0]), "--draft", str(tiny_dirs[1]), "--modes", "ssd,adaptive-ssd",
                     "--prompt", "Hello", "--max-tokens", "16", "--json"])
    summary = json.loads(out)["summary"]
    assert code == 0 and 0 <= summary["ssd"]["fanout_hit_rate"] <= 1 and summary["ssd"]["identical_to_standard"]
    assert summary["ssd"]["predrafted_tokens"] > 0 and "fanout_hit_rate" not in summary["standard"]
    assert summary["adaptive-ssd"]["identical_to_standard"]


def saved_chat(answer_of: str, tiny_dirs) -> str:
    """Save a chat in the app's database whose answer is the model's own greedy answer to `answer_of`."""
    from engine.conversations import ConversationStore, database_path

    code, out = run(tiny_args(tiny_dirs, "--prompt", answer_of, "--chat", "--max-tokens", "40", "--temp", "0",
                              "--mode", "standard", "--json"))
    answer = json.loads(out)["text"]
    store = ConversationStore(database_path())
    chat = store.create("Earlier")
    store.add_message(chat, "user", answer_of)
    store.add_message(chat, "assistant", answer)
    store.close()
    return answer


def test_generate_drafts_from_the_apps_saved_chats_unless_told_not_to(tiny_dirs, isolated_home) -> None:
    """The same question as a saved chat's is drafted from its answer, as the window drafts it; --no-history
    drafts from the prompt alone. Either way the text is the target's."""
    answer = saved_chat("Tell me a story", tiny_dirs)
    argv = ["generate", "--target", str(tiny_dirs[0]), "--drafter", "lookup", "--prompt", "Tell me a story", "--chat",
            "--max-tokens", "40", "--temp", "0", "--no-adaptive", "--num-draft", "6", "--json"]
    with_history, without = (json.loads(run(argv + extra)[1]) for extra in ([], ["--no-history"]))
    assert with_history["text"] == without["text"] == answer
    assert with_history["stats"]["tokens_per_pass"] > without["stats"]["tokens_per_pass"]


def test_a_dflash_drafter_for_another_target_given_as_the_draft_is_one_line_naming_why(tiny_dirs, tmp_path, capsys) -> None:
    """z-lab's DFlash drafter as --draft used to end in mlx-lm's whole TypeError traceback; now it is read as a
    DFlash drafter, and one for another model is refused with the reason."""
    from tests.model_folders import dflash_drafter

    drafter = dflash_drafter(tmp_path / "Qwen3-8B-DFlash-b16")
    code, _ = run(["generate", "--target", str(tiny_dirs[0]), "--draft", str(drafter), "--prompt", "hi"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1, err
    assert err.startswith(f"error: Qwen3-8B-DFlash-b16 is a DFlash drafter and cannot draft for {tiny_dirs[0].name}: ")
    assert "its vocabulary has" in err and "Pick the target it was trained for" in err


def test_models_says_what_a_downloaded_drafter_is(fake_hub, tmp_path) -> None:
    """It was listed as "(incomplete: download again to resume)", which a new download would not change."""
    from engine.models.downloads import download_model
    from tests.model_folders import dflash_drafter

    fake_hub.add_folder("z-lab/Qwen3-8B-DFlash-b16", dflash_drafter(tmp_path / "published"))
    download_model("z-lab/Qwen3-8B-DFlash-b16")
    code, out = run(["models"])
    assert code == 0 and "z-lab/Qwen3-8B-DFlash-b16  (DFlash drafter, not a chat model)\n" in out


def test_a_thinking_models_reasoning_is_set_off_and_no_think_leaves_it_out(thinking_dirs) -> None:
    from engine.fixtures.tiny_thinking import ANSWER, REASONING

    target, draft = thinking_dirs(False)
    args = ["generate", "--target", str(target), "--draft", str(draft), "--prompt", "Capital of France?", "--chat",
            "--temp", "0"]
    code, out = run(args)
    assert code == 0 and out == f"<think>\n{REASONING}\n</think>\n\n{ANSWER}\n"
    code, out = run(args + ["--json"])
    assert (json.loads(out)["reasoning"], json.loads(out)["text"]) == (REASONING, ANSWER)
    code, out = run(args + ["--no-think"])
    assert code == 0 and out == f"{ANSWER}\n"


def _drafters_in_trace(target: str, drafter_options: list[str], trace: Path) -> set[str]:
    """The drafters a greedy answer's trace names, the answer checked against standard decoding's."""
    common = ["generate", "--target", target, "--prompt", "abcabd", "--preset", "greedy", "--max-tokens", "24", "--json"]
    code, out = run(common + drafter_options + ["--num-draft", "3", "--no-adaptive", "--trace", str(trace)])
    assert code == 0
    _, standard = run(common + ["--mode", "standard"])
    assert json.loads(out)["tokens"] == json.loads(standard)["tokens"]
    rounds = [json.loads(line) for line in trace.read_text().splitlines()]
    assert rounds
    return {r["drafter"] for r in rounds if r["verified"]}


def test_generate_drafts_with_a_targets_built_in_mtp_head(mtp_target, tmp_path: Path) -> None:
    """`--drafter mtp` needs no --draft: the target's own head drafts, and the trace names it."""
    assert _drafters_in_trace(str(mtp_target.folder("hybrid")), ["--drafter", "mtp"], tmp_path / "trace.jsonl") == {"mtp"}


def test_the_mtp_drafter_on_a_target_without_a_head_is_one_line(tiny_dirs, capsys) -> None:
    code, _ = run(["generate", "--target", str(tiny_dirs[0]), "--prompt", "Hi", "--drafter", "mtp"])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("error: ") and err.count("\n") == 1 and "no built-in MTP head" in err


def test_an_eagle3_folder_given_as_the_draft_drafts_with_eagle3(eagle3_pair, tmp_path: Path) -> None:
    """`--draft` names a speculators folder: no draft model loads, the EAGLE-3 drafter drafts (with lookup, under
    Automatic), the trace names it."""
    target, drafter = (str(folder) for folder in eagle3_pair.folders())
    assert _drafters_in_trace(target, ["--draft", drafter], tmp_path / "trace.jsonl") - {"lookup"} == {"eagle3"}


def test_a_dflash_folder_given_as_the_draft_drafts_with_dflash(dflash_pairs, tmp_path: Path) -> None:
    """`--draft` names a z-lab DFlash folder: no draft model loads, the DFlash drafter drafts, the trace names it."""
    target, drafter = (str(folder) for folder in dflash_pairs.folders("qwen3_5"))
    assert _drafters_in_trace(target, ["--draft", drafter], tmp_path / "trace.jsonl") - {"lookup"} == {"dflash"}


def test_a_dspark_folder_given_as_the_draft_drafts_with_dspark(dflash_pairs, tmp_path: Path) -> None:
    """`--draft` names a DeepSeek DSpark folder: no draft model loads, the DSpark drafter drafts, the trace names it."""
    target, drafter = (str(folder) for folder in dflash_pairs.dspark_folders("qwen3_5"))
    assert _drafters_in_trace(target, ["--draft", drafter], tmp_path / "trace.jsonl") - {"lookup"} == {"dspark"}


def test_the_eagle3_drafter_without_an_eagle3_draft_is_one_line(tiny_dirs, capsys) -> None:
    code, _ = run(["generate", "--target", str(tiny_dirs[0]), "--prompt", "Hi", "--drafter", "eagle3"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "needs an EAGLE-3 drafter: load its folder as the draft" in err


def test_serve_keeps_its_prompt_cache_within_the_memory_asked_for(tiny_dirs, monkeypatch, capsys) -> None:
    served = []
    monkeypatch.setattr("engine.serving.listener.RunningServer.run", lambda server: served.append(server))
    monkeypatch.setattr("engine.serving.server.create_app", lambda engine, *a, **k: served.append(engine.pair.prompt_cache))
    assert main(["serve", "--target", str(tiny_dirs[0]), "--port", "0", "--prompt-cache-mb", "3"]) == 0
    assert served[0].budget_bytes == 3 << 20
    with pytest.raises(SystemExit):
        main(["serve", "--target", str(tiny_dirs[0]), "--prompt-cache-mb", "-1"])
    assert "argument --prompt-cache-mb: invalid megabytes value: '-1'" in capsys.readouterr().err


def test_serve_spills_prompt_prefixes_to_the_app_data_folder_only_when_asked(tiny_dirs, monkeypatch,
                                                                              isolated_home) -> None:
    served = []
    monkeypatch.setattr("engine.serving.listener.RunningServer.run", lambda server: served.append(server))
    monkeypatch.setattr("engine.serving.server.create_app", lambda engine, *a, **k: served.append(engine.pair.prompt_cache))
    assert main(["serve", "--target", str(tiny_dirs[0]), "--port", "0"]) == 0
    assert served[0].disk is None  # off by default
    assert main(["serve", "--target", str(tiny_dirs[0]), "--port", "0", "--prompt-cache-disk-mb", "5"]) == 0
    disk = served[2].disk
    assert disk.budget_bytes == 5 << 20 and disk.path == isolated_home / "app-data" / "cache" / "prompts"


def test_serve_says_on_stderr_what_stopping_waits_for(tiny_dirs, monkeypatch, capsys) -> None:
    """The engine's stop gets a log that reaches the terminal (the wait itself: test_generation_queue.py)."""
    from engine.serving.generation_queue import EngineThread

    stop = EngineThread.stop
    monkeypatch.setattr("engine.serving.listener.RunningServer.run", lambda server: None)
    monkeypatch.setattr(EngineThread, "stop", lambda engine, log=None: (log("Waiting for the files"), stop(engine)))
    assert main(["serve", "--target", str(tiny_dirs[0]), "--port", "0"]) == 0
    assert "Waiting for the files\n" in capsys.readouterr().err


# `specchat-cli` as a terminal starts it: with Python's Ctrl-C handler. A process started in the background of a
# non-interactive shell (CI's) inherits SIGINT ignored, and Python then installs no handler of its own.
AS_FROM_A_TERMINAL = ("import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
                      "from engine.cli.main import entry_point; entry_point()")


def _serve_child(tiny_dirs) -> tuple[subprocess.Popen, int]:
    """A `serve` process on the tiny pair, and its port (free when asked for)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return subprocess.Popen([sys.executable, "-c", AS_FROM_A_TERMINAL, "serve", "--target", str(tiny_dirs[0]),
                             "--draft", str(tiny_dirs[1]), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), port


def _reach(child: subprocess.Popen, port: int, moment: str) -> None:
    """Wait for `moment` in the child's life: its port listening (it binds, then loads), its "Serving" line, or
    the answer to a request."""
    if moment == "while loading":
        while child.poll() is None:
            with socket.socket() as client:
                if client.connect_ex(("127.0.0.1", port)) == 0:
                    return
            threading.Event().wait(0.02)  # polling for the port, as waitUntil does
        raise AssertionError("serve ended before it listened")
    line = child.stdout.readline()
    assert line.startswith("Serving "), line
    if moment == "after an answer":
        body = {"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 4}
        assert httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body, timeout=120).status_code == 200


# Before the fix the abort came in 1 to 6 runs of 10 once serving, 2 to 4 of 10 after an answer, 1 of 10 while
# loading (fewer with the cores loaded): ten runs after an answer catch it nearly always. Eighteen child processes
# take about 50 s, so the test runs with the soak tests (`make test`), not in `make test-fast`.
@pytest.mark.soak
@pytest.mark.parametrize("moment, runs", [("while loading", 3), ("once serving", 5), ("after an answer", 10)])
def test_ctrl_c_ends_serve_with_status_130_whenever_it_comes(tiny_dirs, moment, runs) -> None:
    """Ctrl-C exits 130 saying "interrupted", never with libstdc++'s abort (134, "terminate called without an active
    exception") from the engine thread's MLX state torn down with the interpreter. The abort came in some runs
    only, so each moment runs several times.
    """
    for _ in range(runs):
        child, port = _serve_child(tiny_dirs)
        _reach(child, port, moment)
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=120)
        assert "terminate called" not in err
        assert child.returncode == 130 and err.rstrip().endswith("interrupted"), err


def test_generate_answers_about_an_image(vision_dir, vision_images) -> None:
    """`--image` shows the image to a vision target: the answer changes with the image, and greedy lookup speculation
    answers as standard decoding does."""
    def answer(image, mode: str) -> list[int]:
        code, out = run(["generate", "--target", str(vision_dir), "--image", str(image), "--prompt", "What is this?",
                         "--mode", mode, "--drafter", "lookup", "--temp", "0", "--max-tokens", "16", "--json"])
        assert code == 0
        return json.loads(out)["tokens"]

    first = answer(vision_images[0], "standard")
    assert answer(vision_images[0], "speculative") == first
    assert answer(vision_images[1], "standard") != first


def test_an_image_for_a_text_only_target_is_refused_in_one_line(tiny_dirs, vision_images, capsys) -> None:
    code, _ = run(tiny_args(tiny_dirs, "--image", str(vision_images[0]), "--prompt", "What is this?"))
    assert code != 0
    assert "tiny-target cannot see images; pick a vision model such as" in capsys.readouterr().err
