"""Tiny random-weight Llama models with a real tokenizer, built in a second without any download.

They exercise every code path real models do (loading, chat template, caches, drafting, verification,
multi-byte text) at a millisecond per forward pass. Tests build them as fixtures and the app's `--self-test`
uses them when no model is given. Their "draft" is the target cut to its first layer, so the two agree often
but not always, which is what a speculation test needs to see both accepted and corrected tokens.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


@dataclass(frozen=True)
class TinySpec:
    """Shape of a tiny model.

    `logit_scale` sharpens the random output distribution (real models are peaked); `block_scale` damps what
    each block adds to the residual stream, so that a truncated copy still agrees with the whole model often.
    """

    num_layers: int = 2
    hidden_size: int = 64
    num_heads: int = 4
    num_kv_heads: int = 2
    intermediate_size: int = 128
    context_length: int = 1024
    logit_scale: float = 6.0
    block_scale: float = 0.3


def corpus_text() -> str:
    """The text the tiny tokenizer is trained on (prose, code and multi-byte characters)."""
    return (Path(__file__).resolve().parent.parent / "resources" / "tiny_corpus.txt").read_text(encoding="utf-8")


def build_tokenizer(out: Path, vocab_size: int = 384) -> Path:
    """Train a byte-level BPE tokenizer on the corpus and save it with a ChatML chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator([corpus_text()], trainer=trainer)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=None,
        eos_token="<|im_end|>",
        unk_token="<|endoftext|>",
        pad_token="<|endoftext|>",
    )
    wrapped.chat_template = CHATML_TEMPLATE
    out.mkdir(parents=True, exist_ok=True)
    wrapped.save_pretrained(str(out))
    return out


def _config(spec: TinySpec, vocab_size: int, eos_id: int) -> dict:
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": spec.hidden_size,
        "intermediate_size": spec.intermediate_size,
        "num_hidden_layers": spec.num_layers,
        "num_attention_heads": spec.num_heads,
        "num_key_value_heads": spec.num_kv_heads,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "max_position_embeddings": spec.context_length,
        "vocab_size": vocab_size,
        "tie_word_embeddings": False,
        "eos_token_id": eos_id,
        "torch_dtype": "float32",
    }


def _copy_tokenizer(tokenizer_dir: Path, out: Path) -> None:
    """Copy the tokenizer files of a folder (which may be a whole model folder)."""
    for f in tokenizer_dir.iterdir():
        if f.is_file() and f.suffix != ".safetensors" and f.name != "config.json":
            (out / f.name).write_bytes(f.read_bytes())


def random_weights(spec: TinySpec, vocab_size: int, seed: int) -> dict:
    """Freshly initialised Llama weights (MLX's default init) with a sharpened output layer."""
    import mlx.core as mx
    from mlx.utils import tree_flatten
    from mlx_lm.models import llama

    mx.random.seed(seed)
    model = llama.Model(llama.ModelArgs.from_dict(_config(spec, vocab_size, 0)))
    weights = dict(tree_flatten(model.parameters()))
    weights["lm_head.weight"] = weights["lm_head.weight"] * spec.logit_scale
    for name in weights:
        if name.endswith(("o_proj.weight", "down_proj.weight")):
            weights[name] = weights[name] * spec.block_scale
    mx.eval(weights)
    return weights


def write_model(out: Path, weights: dict, spec: TinySpec, tokenizer_dir: Path, eos_id: int | None = None) -> Path:
    """Save weights as an MLX model folder with config and the tokenizer of `tokenizer_dir`.

    `eos_id` defaults to the id of "<|im_end|>" in that tokenizer.
    """
    import mlx.core as mx

    out.mkdir(parents=True, exist_ok=True)
    vocab_size = int(weights["model.embed_tokens.weight"].shape[0])
    if eos_id is None:
        eos_id = json.loads((tokenizer_dir / "tokenizer.json").read_text())["model"]["vocab"].get("<|im_end|>", 0)
    (out / "config.json").write_text(json.dumps(_config(spec, vocab_size, eos_id), indent=2))
    mx.save_safetensors(str(out / "model.safetensors"), weights, metadata={"format": "mlx"})
    _copy_tokenizer(tokenizer_dir, out)
    return out


def truncated(weights: dict, keep_layers: int) -> dict:
    """A copy of a model's weights keeping only its first `keep_layers` blocks (a cheap, related draft)."""
    kept = {}
    for name, value in weights.items():
        if name.startswith("model.layers."):
            if int(name.split(".")[2]) >= keep_layers:
                continue
        kept[name] = value
    return kept


def build_tiny_pair(root: Path, seed: int = 0, spec: TinySpec = TinySpec()) -> tuple[Path, Path]:
    """A tiny target and its one-layer draft under `root` (built once; reused if present)."""
    root = Path(root)
    target_dir, draft_dir = root / "tiny-target", root / "tiny-draft"
    if (target_dir / "config.json").exists() and (draft_dir / "config.json").exists():
        return target_dir, draft_dir
    tokenizer_dir = build_tokenizer(root / "tokenizer")
    vocab_size = len(json.loads((tokenizer_dir / "tokenizer.json").read_text())["model"]["vocab"])
    weights = random_weights(spec, vocab_size, seed)
    write_model(target_dir, weights, spec, tokenizer_dir)
    draft_spec = TinySpec(**{**spec.__dict__, "num_layers": 1})
    write_model(draft_dir, truncated(weights, 1), draft_spec, tokenizer_dir)
    return target_dir, draft_dir
