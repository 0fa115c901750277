"""Prompt prefixes spilled to disk: taken back exactly, across pairs, within their budget, never trusted when bad."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from engine.decoding import prompt_cache_writer
from engine.decoding.pair import ModelPair
from engine.decoding.prompt_cache_disk import STALE_SECONDS, DiskCache, _versions, model_identity
from engine.params import GenerationParams
from tests.engine.decoding.test_prompt_cache import DRAFTERS, GREEDY, TURN, A, B, C, _answer

MB = 1 << 20
STANDARD = GREEDY.replace(mode="standard")


def _spilling(pair: ModelPair, folder: Path, budget: int = 64 * MB) -> DiskCache:
    """Give the pair no memory for shelved prefixes and a disk in `folder`, so that every prefix it throws away
    goes to disk; return the disk."""
    pair.prompt_cache.budget_bytes = 0
    pair.prompt_cache.disk = DiskCache(folder, budget)
    return pair.prompt_cache.disk


def _files(disk: DiskCache) -> list[Path]:
    """The disk's files, once those being written are written."""
    disk.flush()
    return sorted(disk.path.glob("*.safetensors"))


@pytest.mark.parametrize("drafter", DRAFTERS)
def test_a_prefix_spilled_to_disk_comes_back_with_the_output_of_a_fresh_read(tiny_target, tiny_draft, tmp_path,
                                                                             drafter: str) -> None:
    params = DRAFTERS[drafter]
    expected, _ = _answer(ModelPair(tiny_target, tiny_draft), A + TURN, params)
    pair = ModelPair(tiny_target, tiny_draft)
    disk = _spilling(pair, tmp_path)
    _answer(pair, A, params)
    _answer(pair, B, params)
    models = 2 if drafter == "draft model" else 1  # the draft model's prefix is spilled and taken back as well
    assert len(_files(disk)) == models and len(pair.prompt_cache) == 0
    tokens, cached = _answer(pair, A + TURN, params)
    assert cached >= len(A) and tokens == expected and disk.hits == models
    if models == 2:
        assert pair.draft_cache is not None and pair.draft_cache.tokens[: len(A)] == A


def _held_writes(monkeypatch) -> tuple[threading.Event, list[threading.Thread]]:
    """Hold every file's write back until the event is set; the threads that wrote are listed."""
    gate, writers = threading.Event(), []
    write = prompt_cache_writer.write

    def held(*args):
        writers.append(threading.current_thread())
        gate.wait(timeout=120)  # a write on the request's thread would hold the request here
        return write(*args)

    monkeypatch.setattr(prompt_cache_writer, "write", held)
    return gate, writers


def test_the_request_that_spills_a_prefix_does_not_wait_for_its_file(tiny_target, tmp_path, monkeypatch) -> None:
    gate, writers = _held_writes(monkeypatch)
    pair = ModelPair(tiny_target)
    disk = _spilling(pair, tmp_path)
    _answer(pair, A, STANDARD)
    _answer(pair, B, STANDARD)  # spills A: answered while A's file is still held back
    assert not gate.is_set() and list(tmp_path.glob("*.safetensors")) == [] and len(disk.entries()) == 1
    gate.set()
    assert len(_files(disk)) == 1 and disk.writes == 1
    assert writers and threading.current_thread() not in writers  # MLX's thread only handed the bytes over


def test_a_prompt_that_wants_a_prefix_still_being_written_waits_for_it(tiny_target, tmp_path, monkeypatch) -> None:
    expected, _ = _answer(ModelPair(tiny_target), A + TURN, STANDARD)
    gate, _ = _held_writes(monkeypatch)
    pair = ModelPair(tiny_target)
    disk = _spilling(pair, tmp_path)
    _answer(pair, A, STANDARD)
    _answer(pair, B, STANDARD)  # A's file held back
    waiting = disk._wait_for
    monkeypatch.setattr(disk, "_wait_for", lambda entry: (gate.set(), waiting(entry)))  # released once waited for
    tokens, cached = _answer(pair, A + TURN, STANDARD)
    assert gate.is_set() and tokens == expected and cached >= len(A) and disk.hits == 1


def test_a_new_pair_takes_back_what_an_earlier_one_spilled(tiny_target, tmp_path) -> None:
    """A restart: the files outlive the pair (and the process) that wrote them."""
    expected, _ = _answer(ModelPair(tiny_target), A + TURN, STANDARD)
    first, restarted = ModelPair(tiny_target), ModelPair(tiny_target)
    disk = _spilling(first, tmp_path)
    _answer(first, A, STANDARD)
    _answer(first, B, STANDARD)
    disk.flush()
    _spilling(restarted, tmp_path)
    tokens, cached = _answer(restarted, A + TURN, STANDARD)
    assert cached >= len(A) and tokens == expected


def test_a_restart_takes_back_prefixes_only_held_in_memory_before_the_pair_was_let_go(tiny_target, tmp_path) -> None:
    """Within the memory budget nothing is spilled; letting the pair go (the server stopping) writes the shelved
    prefix and the live one, which the next process takes back."""
    expected = [_answer(ModelPair(tiny_target), prompt + TURN, STANDARD)[0] for prompt in (A, B)]
    first = ModelPair(tiny_target)
    first.prompt_cache.disk = disk = DiskCache(tmp_path, 64 * MB)
    _answer(first, A, STANDARD)
    _answer(first, B, STANDARD)  # A shelved in memory, B live
    assert len(first.prompt_cache) == 1 and _files(disk) == []
    first.close()
    assert len(list(tmp_path.glob("*.safetensors"))) == 2
    for prompt, answer in zip((A, B), expected):
        restarted = ModelPair(tiny_target)
        _spilling(restarted, tmp_path)
        tokens, cached = _answer(restarted, prompt + TURN, STANDARD)
        assert cached >= len(prompt) and tokens == answer


def test_a_change_of_the_caches_precision_writes_what_memory_held_first(tiny_target, tmp_path) -> None:
    pair = ModelPair(tiny_target)
    pair.prompt_cache.disk = disk = DiskCache(tmp_path, 64 * MB)
    for prompt in (A, B):
        _answer(pair, prompt, STANDARD)
    pair.set_kv_bits(8)  # the shelved and live prefixes cannot serve quantized caches: kept on disk for later
    assert len(_files(disk)) == 2 and len(pair.prompt_cache) == 0
    pair.set_kv_bits(None)
    assert _answer(pair, A + TURN, STANDARD)[1] >= len(A)


class WrittenWhenWaitedFor:
    """A write the writer thread has not got to until someone waits for it: the slowest a writer can be."""

    def __init__(self, *args: object) -> None:
        self.args, self.written = args, None

    def done(self) -> bool:
        return self.written is not None

    def result(self) -> bool:
        if self.written is None:
            self.written = prompt_cache_writer.write(*self.args)
        return self.written


def test_letting_the_pair_go_writes_no_more_than_the_disk_budget_most_recent_kept(tiny_target, tmp_path,
                                                                                   monkeypatch) -> None:
    """Letting the pair go spills three prefixes at once, faster than the writer thread writes them (a fresh CI
    machine kept all three files when the first two were still being written as the third made room)."""
    monkeypatch.setattr(prompt_cache_writer.SpillWriter, "submit",
                        lambda self, spill, path, temporary: WrittenWhenWaitedFor(spill, path, temporary))
    pair = ModelPair(tiny_target)
    pair.prompt_cache.disk = disk = DiskCache(tmp_path, 64 * MB)
    for prompt in (A, B, C):
        _answer(pair, prompt, STANDARD)  # A and B shelved, C live
    disk.budget_bytes = pair.prompt_cache.nbytes * 5 // 4  # A's and B's keys and values: room for two files, not three
    pair.close()
    kept = [e.tokens[: len(C)] for e in disk.entries()]
    assert len(kept) == 2 and B in kept and C in kept and disk.nbytes <= disk.budget_bytes


def test_another_model_or_a_changed_file_never_takes_a_file(tiny_target, tiny_draft, tmp_path) -> None:
    first, other = ModelPair(tiny_target), ModelPair(tiny_draft)
    disk = _spilling(first, tmp_path)
    _spilling(other, tmp_path)
    for prompt in (A, B):
        _answer(first, prompt, STANDARD)
    disk.flush()
    assert _answer(other, A + TURN, STANDARD)[1] < len(A) // 10  # the same tokenizer, other weights
    before = model_identity(tiny_target)
    config = tiny_target.path / "config.json"
    os.utime(config, ns=(config.stat().st_atime_ns, config.stat().st_mtime_ns + 1))
    try:
        changed = ModelPair(tiny_target)
        _spilling(changed, tmp_path)
        assert model_identity(tiny_target) != before and _answer(changed, A + TURN, STANDARD)[1] < len(A) // 10
    finally:
        os.utime(config, ns=(config.stat().st_atime_ns, config.stat().st_mtime_ns - 1))
    assert model_identity(tiny_target) == before


@pytest.mark.parametrize("damage", ["truncated", "garbage", "a header that lies"])
def test_a_bad_file_is_deleted_and_the_prompt_read_anew(tiny_target, tmp_path, damage: str) -> None:
    expected, _ = _answer(ModelPair(tiny_target), A + TURN, STANDARD)
    pair = ModelPair(tiny_target)
    disk = _spilling(pair, tmp_path)
    _answer(pair, A, STANDARD)
    _answer(pair, B, STANDARD)
    (spilled,) = _files(disk)
    data = spilled.read_bytes()
    if damage == "truncated":
        spilled.write_bytes(data[: len(data) - 1000])
    elif damage == "garbage":
        spilled.write_bytes(b"not a safetensors file" * 10)
    else:
        _shorten_header(spilled)
    tokens, cached = _answer(pair, A + TURN, STANDARD)
    assert tokens == expected and cached < len(A) // 10
    assert spilled not in _files(disk) and disk.hits == 0


def _shorten_header(path: Path, by: int = 5) -> None:
    """Take `by` ids off the tokens a file's header lists (its tensors unchanged): a file that loads, but holds
    other positions than it says."""
    data = path.read_bytes()
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + length])
    ours = json.loads(header["__metadata__"]["0.specchat"])
    ours["tokens"] = ours["tokens"][:-by]
    header["__metadata__"]["0.specchat"] = json.dumps(ours)
    encoded = json.dumps(header).encode()
    path.write_bytes(len(encoded).to_bytes(8, "little") + encoded + data[8 + length :])


def test_files_stay_within_the_disk_budget_least_recently_used_going_first(tiny_target, tmp_path) -> None:
    pair = ModelPair(tiny_target)
    disk = _spilling(pair, tmp_path)
    _answer(pair, A, STANDARD)
    _answer(pair, B, STANDARD)  # spills A
    one_file = sum(f.stat().st_size for f in _files(disk))
    disk.budget_bytes = one_file * 3 // 2  # room for one file, not two
    _answer(pair, C, STANDARD)  # spills B: A goes
    assert len(_files(disk)) == 1 and disk.nbytes <= disk.budget_bytes
    assert _answer(pair, B + TURN, STANDARD)[1] >= len(B)  # kept: taken back
    assert _answer(pair, A + TURN, STANDARD)[1] < len(A) // 10  # deleted: read anew


def test_a_prefix_larger_than_the_whole_disk_budget_is_not_written(tiny_target, tmp_path) -> None:
    pair = ModelPair(tiny_target)
    disk = _spilling(pair, tmp_path, budget=1024)
    for prompt in (A, B):
        _answer(pair, prompt, STANDARD)
    assert _files(disk) == [] and disk.writes == 0


def test_a_longer_prefix_replaces_the_file_it_holds_and_one_held_writes_nothing(tiny_target, tmp_path) -> None:
    pair = ModelPair(tiny_target)
    disk = _spilling(pair, tmp_path)
    answer, _ = _answer(pair, A, STANDARD)
    _answer(pair, B, STANDARD)  # spills A and its answer
    chat = A + answer + TURN
    _answer(pair, chat, STANDARD)  # a chat's next turn: takes A back, spills B
    _answer(pair, C, STANDARD)  # spills the chat, which holds A's file: that goes
    assert len(_files(disk)) == 2 and disk.writes == 3  # B, the chat
    _answer(pair, chat, STANDARD)  # takes the chat back, spills C
    _answer(pair, B, STANDARD)  # takes B back; the chat, thrown away again, is on disk already
    assert len(_files(disk)) == 3 and disk.writes == 4


def test_no_temporary_file_is_left_and_a_stale_one_is_deleted(tmp_path) -> None:
    fresh, stale = tmp_path / ".a.1.tmp", tmp_path / ".b.2.tmp"
    for path in (fresh, stale):
        path.write_bytes(b"half a file")
    os.utime(stale, (time.time() - STALE_SECONDS - 60,) * 2)
    assert DiskCache(tmp_path, MB).entries() == []
    assert fresh.exists() and not stale.exists()  # another process may be writing the fresh one


@pytest.mark.parametrize("family", ["qwen3_next", "gemma3_text"])
def test_caches_that_cannot_be_shelved_write_nothing_and_answer_exactly(family_models, tmp_path, family: str) -> None:
    """Recurrent state (Qwen3-Next) and sliding windows (Gemma 3) are never shelved, so never spilled either."""
    target, _ = family_models(family)
    expected, _ = _answer(ModelPair(target), A + TURN, STANDARD)
    pair = ModelPair(target)
    disk = _spilling(pair, tmp_path)
    for prompt in (A, B):
        _answer(pair, prompt, STANDARD)
    assert _answer(pair, A + TURN, STANDARD)[0] == expected and _files(disk) == []


def test_keys_quantized_with_kv_bits_write_nothing(family_models, tmp_path) -> None:
    """Quantized keys are never shelved (nor, so, spilled): a QuantizedKVCache cannot be forked."""
    pair = ModelPair(family_models("llama")[0])  # heads of 32: quantizable
    disk = _spilling(pair, tmp_path)
    for prompt in (A, B):
        _answer(pair, prompt, GenerationParams(mode="standard", temperature=0.0, max_tokens=8, kv_bits=8))
    assert _files(disk) == [] and {type(c).__name__ for c in pair.target_cache.cache} == {"QuantizedKVCache"}


def test_a_folder_that_cannot_be_written_keeps_nothing_and_answers_as_before(tiny_target, tmp_path) -> None:
    blocked = tmp_path / "a file, not a folder"
    blocked.write_text("")
    expected, _ = _answer(ModelPair(tiny_target), A + TURN, STANDARD)
    pair = ModelPair(tiny_target)
    disk = _spilling(pair, blocked)
    for prompt in (A, B):
        _answer(pair, prompt, STANDARD)
    disk.flush()
    assert _answer(pair, A + TURN, STANDARD)[0] == expected and disk.writes == 0 and disk.entries() == []


def test_the_code_versions_are_read_once_a_process(tiny_target, monkeypatch) -> None:
    """Each read parses three packages' metadata: at every model identity, that was 2,229 reads in the fast suite."""
    from importlib.metadata import version

    reads: list[str] = []
    monkeypatch.setattr("engine.decoding.prompt_cache_disk.version", lambda p: reads.append(p) or version(p))
    _versions.cache_clear()
    try:
        assert model_identity(tiny_target) == model_identity(tiny_target) and reads == ["mlx", "mlx-lm", "mlx-vlm"]
    finally:
        _versions.cache_clear()


@pytest.mark.parametrize("package", ["mlx", "mlx-lm", "mlx-vlm"])
def test_an_upgrade_of_the_code_that_computes_keys_changes_the_identity(tiny_target, monkeypatch, package: str) -> None:
    from importlib.metadata import version

    before = model_identity(tiny_target)
    monkeypatch.setattr("engine.decoding.prompt_cache_disk.version", lambda p: "99.0" if p == package else version(p))
    _versions.cache_clear()  # read once a process: the next process, after the upgrade, reads them again
    try:
        assert model_identity(tiny_target) != before
    finally:
        _versions.cache_clear()
