"""A model folder's files as they are now: what the keys of what is kept about a model are made from."""

from __future__ import annotations

import os
from pathlib import Path

from engine.decoding.policy.memory import pair_identity
from engine.models.folder_files import FolderFile, folder_files


def test_a_folder_lists_its_own_files_by_name_with_size_and_modification_time(tmp_path: Path) -> None:
    (tmp_path / "weights.safetensors").write_bytes(b"12345")
    (tmp_path / "config.json").write_bytes(b"{}")
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "other.bin").write_bytes(b"not this folder's")
    os.utime(tmp_path / "config.json", ns=(1, 2_000_000_000))
    link = tmp_path.parent / f"{tmp_path.name}-link"
    link.symlink_to(tmp_path)
    mtime = (tmp_path / "weights.safetensors").stat().st_mtime_ns
    expected = [FolderFile("config.json", 2, 2_000_000_000), FolderFile("weights.safetensors", 5, mtime)]
    assert folder_files(tmp_path) == folder_files(link) == expected


def test_both_keys_change_with_a_file_and_the_policy_s_stays_readable(tiny_target, tmp_path: Path) -> None:
    """The spilled prefixes' key hashes every file; the policy memory's reads as the folder's total size and latest
    change (as it always has: the measurements kept under it stay found)."""
    from engine.decoding.prompt_cache_disk import model_identity

    folder = tiny_target.path.resolve()
    before = (model_identity(tiny_target), pair_identity([folder], None))
    config = folder / "config.json"
    stat = config.stat()
    latest = max(p.stat().st_mtime_ns for p in folder.iterdir())
    os.utime(config, ns=(stat.st_atime_ns, latest + 10 * 10**9))  # the latest change, by whole seconds
    try:
        after = (model_identity(tiny_target), pair_identity([folder], None))
        files = [p.stat() for p in folder.iterdir() if p.is_file()]
        readable = f"{folder} ({sum(s.st_size for s in files)} bytes, {max(int(s.st_mtime) for s in files)})"
    finally:
        os.utime(config, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert after[0] != before[0] and after[1] != before[1] and after[1] == readable
    assert pair_identity([tmp_path / "gone"], None) == f"{(tmp_path / 'gone').resolve()} (0 bytes, 0)"
