"""`--attach FILE` of `specchat-cli generate` and `benchmark`: the files before the prompt, as the app sends them."""

from __future__ import annotations

import json
from pathlib import Path

from engine.attachments import read_attachment, token_counter, with_attachments
from tests.engine.cli.test_main import run

CODE = "".join(f"def scale_{i}(value):\n    return value * {i}\n\n" for i in range(6))


def files(folder: Path) -> tuple[Path, Path]:
    (folder / "scale.py").write_text(CODE, encoding="utf-8")
    (folder / "notes.md").write_text("# Notes\nKeep it short.\n", encoding="utf-8")
    return folder / "scale.py", folder / "notes.md"


def test_generate_reads_the_attached_files_before_the_prompt(tiny_dirs, tiny_pair, tmp_path: Path) -> None:
    code, notes = files(tmp_path)
    argv = ["generate", "--target", str(tiny_dirs[0]), "--prompt", "Rename scale to grow", "--chat", "--max-tokens", "8",
            "--json", "--attach", str(code), "--attach", str(notes)]
    status, out = run(argv)
    count = token_counter(tiny_pair.tokenizer)
    message = with_attachments("Rename scale to grow", [read_attachment(code, count), read_attachment(notes, count)])
    assert status == 0
    assert json.loads(out)["stats"]["prompt_tokens"] == len(tiny_pair.prompt_ids(message, chat=True))


def test_a_file_too_big_is_refused_with_the_numbers_unless_cut_to_fit(tiny_dirs, tmp_path: Path, capsys) -> None:
    big = tmp_path / "big.py"
    big.write_text("".join(f"row_{i} = {i} * {i}\n" for i in range(600)), encoding="utf-8")
    argv = ["generate", "--target", str(tiny_dirs[0]), "--prompt", "Sum the rows", "--chat", "--max-tokens", "8",
            "--attach", str(big)]
    assert run(argv)[0] == 1
    err = capsys.readouterr().err
    assert err.startswith("error: big.py is ") and err.count("\n") == 1
    assert "tokens, but tiny-target reads at most 1,024: with 72 kept for the question and the answer there is room " \
           "for 952. Pass --truncate-attachments to send it cut to fit" in err
    assert run([*argv, "--truncate-attachments"])[0] == 0


def test_a_file_that_is_not_text_is_one_line(tiny_dirs, tmp_path: Path, capsys) -> None:
    (tmp_path / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    status, _ = run(["generate", "--target", str(tiny_dirs[0]), "--prompt", "What is it?", "--attach",
                     str(tmp_path / "photo.png")])
    err = capsys.readouterr().err
    assert status == 1 and err.startswith("error: photo.png is an image") and err.count("\n") == 1


def test_the_benchmark_puts_the_attached_files_before_every_prompt(tiny_dirs, tmp_path: Path, capsys) -> None:
    """Read and checked as for generate: a missing file and one too big stop it with the reason."""
    code, _ = files(tmp_path)
    big = tmp_path / "big.py"
    big.write_text("".join(f"row_{i} = {i} * {i}\n" for i in range(600)), encoding="utf-8")
    argv = ["benchmark", "--target", str(tiny_dirs[0]), "--modes", "prompt-lookup", "--prompt", "Rename scale to grow",
            "--chat", "--max-tokens", "12", "--json"]
    report = json.loads(run([*argv, "--attach", str(code)])[1])
    assert {r["mode"] for r in report["runs"]} == {"standard", "prompt-lookup"}
    assert all(r["identical_to_standard"] for r in report["runs"] if r["mode"] != "standard")
    assert run([*argv, "--attach", str(tmp_path / "gone.txt")])[0] == 1
    assert "Cannot read gone.txt" in capsys.readouterr().err
    assert run([*argv, "--attach", str(big)])[0] == 1
    assert f"there is room for {1024 - 12 - 64}. Pass --truncate-attachments" in capsys.readouterr().err
