"""Downloads through huggingface_hub against a loopback hub: progress, cancel, resume, offline, each error."""

from __future__ import annotations

import hashlib
import socket
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.errors import DownloadCancelled, DownloadError, ModelNotFoundError, NotAModelError, UnsupportedModelError
from engine.models.downloads import CHUNK_BYTES, DownloadProgress, download_model
from engine.models.loading import cached_repo_path, load_model, resolve_model_path
from engine.models.model_store import cached_models


def nothing_loadable(repo_id: str) -> None:
    """After a failed download, no half-downloaded model may look loadable."""
    assert cached_repo_path(repo_id) is None
    with pytest.raises(ModelNotFoundError, match="is not downloaded"):
        resolve_model_path(repo_id)


def test_downloads_only_what_a_model_needs_into_the_hf_cache(fake_hub, isolated_home: Path) -> None:
    path = download_model("test/tiny-target")
    assert sorted(p.name for p in path.iterdir()) == [
        "chat_template.jinja", "config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"]
    assert (isolated_home / "hf-cache") in path.parents
    requested = {p.rsplit("/", 1)[-1] for _, p, _ in fake_hub.requests if "/resolve/" in p}
    assert "README.md" not in requested and "pytorch_model.bin" not in requested
    assert load_model("test/tiny-target").path == path  # mlx-lm and we read it from the shared cache


def test_progress_counts_bytes_with_speed_and_time_left(fake_hub) -> None:
    """3 MB at 4 MB/s: progress reports come at most every 0.1 s, so at least 0.75 s of download gives the five
    this asks for, with room; slower cores only stretch the download (it ran at 2 MB/s, twice the wait)."""
    fake_hub.bytes_per_second = 4_000_000
    events: list[DownloadProgress] = []
    download_model("test/big", progress=events.append)
    total = sum(len(d) for n, d in fake_hub.repos["test/big"].files.items() if n != "README.md")
    assert len(events) >= 5
    assert all(e.total_bytes == total for e in events)
    assert [e.done_bytes for e in events] == sorted(e.done_bytes for e in events)
    assert events[-1].done_bytes == total and events[-1].fraction == 1.0
    middle = events[len(events) // 2]
    assert middle.bytes_per_s > 0 and middle.seconds_left is not None
    assert f" of {total / 1e6:.1f} MB, " in middle.describe() and "left" in middle.describe()


@dataclass
class CancelledDownload:
    """What a cancelled download did: the bytes it had when the cancel was asked for, how often it polled the
    cancel before and after that, and the last progress it reported."""

    bytes_at_cancel: int
    polls_before: int
    polls_after: int
    last_reported: int


def cancelled_download(fake_hub) -> CancelledDownload:
    """Start a throttled download and cancel it once 1 MB arrived. At 2 MB/s (it was 0.5 MB/s, four times the wait)
    the other 2 MB of the file take a second more, ten progress reports' time, so the cancel comes mid-file."""
    fake_hub.bytes_per_second = 2_000_000
    asked = threading.Event()
    at_cancel: list[int] = []
    polls = {"before": 0, "after": 0}
    seen: list[int] = []

    def progress(p: DownloadProgress) -> None:
        seen.append(p.done_bytes)
        if p.done_bytes > 1_000_000 and not asked.is_set():
            at_cancel.append(p.done_bytes)
            asked.set()

    def cancel() -> bool:
        polls["after" if asked.is_set() else "before"] += 1
        return asked.is_set()

    with pytest.raises(DownloadCancelled, match="resumes where it stopped"):
        download_model("test/big", progress=progress, cancel=cancel)
    return CancelledDownload(at_cancel[0], polls["before"], polls["after"], seen[-1])


def test_cancel_stops_at_the_next_chunk_and_leaves_the_cache_consistent(fake_hub) -> None:
    """docs/app.md promises a cancel within a second: the download polls the cancel every CHUNK_BYTES (256 KB, a
    fraction of a second on any connection a model download is usable over) and stops at the first poll after
    it. Both are checked by counting, not by a clock, so a busy machine cannot fail this."""
    cancelled = cancelled_download(fake_hub)
    assert cancelled.polls_after == 1  # it stopped at the first poll after the cancel
    assert cancelled.polls_before >= cancelled.bytes_at_cancel // CHUNK_BYTES  # and polled at least every chunk
    nothing_loadable("test/big")
    [listed] = [m for m in cached_models() if m.name == "test/big"]
    assert not listed.complete


def test_a_cancelled_download_resumes_where_it_stopped(fake_hub) -> None:
    cancelled_download(fake_hub)
    fake_hub.bytes_per_second = None
    fake_hub.requests.clear()
    seen: list[DownloadProgress] = []
    path = download_model("test/big", progress=seen.append)
    ranges = [r for m, p, r in fake_hub.requests if m == "GET" and p.endswith("model.safetensors")]
    assert len(ranges) == 1 and ranges[0] is not None and int(ranges[0].split("=")[1].rstrip("-")) > 1_000_000
    served = fake_hub.repos["test/big"].files["model.safetensors"]
    # The resumed bytes count once: the first report is what was on disk plus at most one chunk.
    on_disk = int(ranges[0].split("=")[1].rstrip("-")) + seen[0].total_bytes - len(served)
    assert on_disk < seen[0].done_bytes <= on_disk + CHUNK_BYTES
    assert hashlib.sha256((path / "model.safetensors").read_bytes()).digest() == hashlib.sha256(served).digest()


def test_offline_uses_only_what_is_cached(fake_hub, monkeypatch) -> None:
    path = download_model("test/tiny-target")
    fake_hub.requests.clear()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert download_model("test/tiny-target") == path
    assert fake_hub.requests == []
    with pytest.raises(DownloadError, match="is not downloaded, and SpecChat is offline"):
        download_model("test/tiny-draft")


def test_no_network(isolated_home, monkeypatch) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    with pytest.raises(DownloadError, match="Cannot reach the Hugging Face hub.*Check the internet connection"):
        download_model("test/tiny-target")
    nothing_loadable("test/tiny-target")


def test_repo_not_found(fake_hub) -> None:
    with pytest.raises(ModelNotFoundError, match="There is no model test/nope on the Hugging Face hub"):
        download_model("test/nope")


def test_gated_repo_says_how_to_log_in(fake_hub) -> None:
    with pytest.raises(DownloadError, match="test/gated is gated: accept its terms.*hf auth login"):
        download_model("test/gated")
    nothing_loadable("test/gated")


def test_disk_full_is_refused_before_downloading(fake_hub, monkeypatch) -> None:
    import shutil
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**9, 10**9 - 1000, 1000))
    needed = sum(len(d) for n, d in fake_hub.repos["test/big"].files.items() if n != "README.md")
    with pytest.raises(DownloadError, match=f"The disk is full: test/big needs about {needed / 1e6:.1f} MB more"):
        download_model("test/big")
    assert not any("/resolve/" in p for _, p, _ in fake_hub.requests)
    nothing_loadable("test/big")


def test_an_architecture_mlx_lm_cannot_run_is_refused_before_the_weights(fake_hub) -> None:
    with pytest.raises(UnsupportedModelError, match="'quantum_llm' model, which this mlx-lm cannot run"):
        download_model("test/quantum")
    fetched = [p for m, p, _ in fake_hub.requests if m == "GET" and "/resolve/" in p]
    assert [p.rsplit("/", 1)[-1] for p in fetched] == ["config.json"]
    nothing_loadable("test/quantum")


@pytest.mark.parametrize(
    "repo, message",
    [("test/pytorch-only", "it has no model\\*.safetensors weights. It holds PyTorch weights"),
     ("test/gguf-only", "it has no config.json and no model\\*.safetensors weights. It holds GGUF files")],
)
def test_a_repo_that_is_not_an_mlx_model_names_what_is_missing(fake_hub, repo: str, message: str) -> None:
    with pytest.raises(NotAModelError, match=f"{repo} is not an MLX model: {message}"):
        download_model(repo)
    nothing_loadable(repo)


def test_an_mlx_target_with_mtplxs_sidecar_downloads_its_mtp_head(fake_hub, mtp_target) -> None:
    """mlx-lm's conversions drop the MTP head; MTPLX's repos carry it as mtp.safetensors beside the trunk, which
    the download used to leave behind (the built-in drafter then found no head)."""
    fake_hub.add_folder("Youssofal/Qwen3.5-4B-MTPLX-Optimized-Speed", mtp_target.folder("hybrid-sidecar"))
    download_model("Youssofal/Qwen3.5-4B-MTPLX-Optimized-Speed")
    assert (cached_repo_path("Youssofal/Qwen3.5-4B-MTPLX-Optimized-Speed") / "mtp.safetensors").is_file()
