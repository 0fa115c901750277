"""SpecChat's engine: speculative decoding on MLX, with no Qt.

    from engine import ModelPair, GenerationParams, generate, generate_stream

    pair = ModelPair.load("mlx-community/Qwen2.5-7B-Instruct-4bit", draft="mlx-community/Qwen2.5-0.5B-Instruct-4bit")
    for event in generate_stream(pair, "Explain MLX", GenerationParams.preset("default")):
        ...
    print(generate("Explain MLX", pair).summary())
"""

import os as _os

# mlx-lm imports transformers only for tokenizers; without torch it would warn on every start.
_os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

from .decoding.generation import generate, generate_stream
from .decoding.pair import ModelPair
from .errors import SpecChatError
from .events import GenerationResult, GenerationStats, PrefillEvent, RoundEvent, TokenEvent
from .params import PRESETS, GenerationParams

__all__ = [
    "GenerationParams",
    "GenerationResult",
    "GenerationStats",
    "ModelPair",
    "PRESETS",
    "PrefillEvent",
    "RoundEvent",
    "SpecChatError",
    "TokenEvent",
    "generate",
    "generate_stream",
]
