"""Folders people keep next to their chat models, written as their publishers write them (tiny weights).

Each writer takes the folder to create and a folder whose tokenizer files to copy (a tiny model's), and returns
the folder. The configs carry the keys the real repos carry; only sizes are cut down.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mlx.core as mx

from engine.fixtures.tiny_models import copy_tokenizer


def _write(out: Path, files: dict[str, Any], weights: dict[str, tuple[int, ...]] | None = None,
           weights_file: str = "model.safetensors", tokenizer_from: Path | None = None) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (out / name).write_text(json.dumps(content, indent=2) if not isinstance(content, str) else content)
    if weights:
        mx.save_safetensors(str(out / weights_file), {k: mx.zeros(shape) for k, shape in weights.items()})
    if tokenizer_from is not None:
        copy_tokenizer(tokenizer_from, out)
    return out


# --- speculative drafters -----------------------------------------------------------------------------------

DFLASH_CONFIG = {  # z-lab/Qwen3-8B-DFlash-b16's keys (trust_remote_code model, no tie_word_embeddings)
    "architectures": ["DFlashDraftModel"],
    "attention_bias": False,
    "auto_map": {"AutoModel": "dflash.DFlashDraftModel"},
    "block_size": 16,
    "dflash_config": {"mask_token_id": 151669, "target_layer_ids": [1, 9, 17, 25, 33]},
    "dtype": "bfloat16",
    "head_dim": 16,
    "hidden_act": "silu",
    "hidden_size": 64,
    "intermediate_size": 128,
    "max_position_embeddings": 40960,
    "model_type": "qwen3",
    "num_attention_heads": 4,
    "num_hidden_layers": 1,
    "num_key_value_heads": 2,
    "num_target_layers": 36,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000,
    "vocab_size": 151936,
}


def dflash_drafter(out: Path) -> Path:
    """z-lab's DFlash drafter: fc over the tapped target layers, its own blocks, no embeddings or lm_head."""
    weights = {"fc.weight": (64, 320), "hidden_norm.weight": (64,), "norm.weight": (64,),
               "layers.0.self_attn.q_proj.weight": (64, 64)}
    return _write(out, {"config.json": DFLASH_CONFIG, "dflash.py": "# the published modelling code\n"}, weights)


def eagle3_speculator(out: Path) -> Path:
    """An EAGLE-3 drafter in vLLM's speculators format (RedHatAI/*-speculator.eagle3)."""
    config = {
        "architectures": ["Eagle3Speculator"],
        "speculators_model_type": "eagle3",
        "draft_vocab_size": 32000,
        "norm_before_residual": True,
        "speculators_config": {
            "algorithm": "eagle3",
            "default_proposal_method": "greedy",
            "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 5, "accept_tolerance": 0.0,
                                  "verifier_accept_k": 1}],
            "verifier": {"architectures": ["LlamaForCausalLM"], "name_or_path": "meta-llama/Llama-3.1-8B-Instruct"},
        },
        "speculators_version": "0.1.0.dev42",
        "transformer_layer_config": {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 1,
                                     "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 128256},
    }
    weights = {"d2t": (32,), "t2d": (128,), "fc.weight": (64, 192), "layers.0.hidden_norm.weight": (64,)}
    return _write(out, {"config.json": config}, weights)


def eagle3_original(out: Path, tokenizer_from: Path) -> Path:
    """An EAGLE-3 drafter as its authors publish it (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B): a llama config."""
    config = {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "draft_vocab_size": 32000,
              "hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2,
              "intermediate_size": 128, "vocab_size": 128256, "rms_norm_eps": 1e-05}
    return _write(out, {"config.json": config}, {"fc.weight": (64, 192), "d2t": (32,)}, tokenizer_from=tokenizer_from)


# --- adapters -----------------------------------------------------------------------------------------------


def mlx_lm_lora_adapter(out: Path) -> Path:
    """What `mlx_lm.lora --train` saves: its arguments (the base model under "model") and adapters.safetensors."""
    config = {"model": "mlx-community/Qwen2.5-0.5B-Instruct-4bit", "fine_tune_type": "lora", "num_layers": 16,
              "lora_parameters": {"rank": 8, "dropout": 0.0, "scale": 20.0}, "train": True, "iters": 600}
    weights = {"model.layers.23.self_attn.q_proj.lora_a": (64, 8), "model.layers.23.self_attn.q_proj.lora_b": (8, 64)}
    return _write(out, {"adapter_config.json": config}, weights, weights_file="adapters.safetensors")


def peft_lora_adapter(out: Path) -> Path:
    """A PEFT LoRA adapter as the Hugging Face hub holds them (adapter_model.safetensors)."""
    config = {"peft_type": "LORA", "base_model_name_or_path": "Qwen/Qwen2.5-0.5B-Instruct", "r": 8, "lora_alpha": 16,
              "lora_dropout": 0.05, "target_modules": ["q_proj", "v_proj"], "task_type": "CAUSAL_LM"}
    weights = {"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight": (8, 64)}
    return _write(out, {"adapter_config.json": config, "README.md": "# adapter\n"}, weights,
                  weights_file="adapter_model.safetensors")


# --- vision and embedding models ----------------------------------------------------------------------------


def idefics3_vision_model(out: Path, tokenizer_from: Path) -> Path:
    """SmolVLM (HuggingFaceTB/SmolVLM-256M-Instruct): a vision model of a type mlx-lm has no module for."""
    config = {"architectures": ["Idefics3ForConditionalGeneration"], "model_type": "idefics3", "image_token_id": 49190,
              "scale_factor": 4, "text_config": {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 1},
              "vision_config": {"model_type": "idefics3_vision", "hidden_size": 64, "image_size": 512}}
    processor = {"image_processor_type": "Idefics3ImageProcessor", "do_image_splitting": True, "image_mean": [0.5] * 3}
    return _write(out, {"config.json": config, "preprocessor_config.json": processor},
                  {"model.vision_model.embeddings.patch_embedding.weight": (64, 3, 16, 16)}, tokenizer_from=tokenizer_from)


def minilm_embedding_model(out: Path, tokenizer_from: Path) -> Path:
    """sentence-transformers/all-MiniLM-L6-v2: a BERT encoder with the sentence-transformers files."""
    config = {"architectures": ["BertModel"], "model_type": "bert", "hidden_size": 64, "num_hidden_layers": 1,
              "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 30522}
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    files = {"config.json": config, "modules.json": modules,
             "sentence_bert_config.json": {"max_seq_length": 256, "do_lower_case": False}}
    return _write(out, files, {"embeddings.word_embeddings.weight": (16, 64)}, tokenizer_from=tokenizer_from)


def qwen3_embedding_model(out: Path, tokenizer_from: Path) -> Path:
    """Qwen/Qwen3-Embedding-0.6B: a decoder mlx-lm would build, which only the sentence-transformers files tell
    apart from a chat model."""
    config = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 64, "num_hidden_layers": 1,
              "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 128,
              "vocab_size": 151669, "rms_norm_eps": 1e-6, "tie_word_embeddings": True}
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
               {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]
    files = {"config.json": config, "modules.json": modules,
             "config_sentence_transformers.json": {"prompts": {"query": "Instruct: ...\nQuery:"}}}
    return _write(out, files, {"embed_tokens.weight": (16, 64)}, tokenizer_from=tokenizer_from)
