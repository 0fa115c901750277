"""Drafters that read the target's own hidden states (DFlash and DSpark; MTP heads and EAGLE-3 beside them).

Each module here holds one published drafter format: its network, its loader from the folder people download,
and the small API the speculative round calls. They sit between the round (`engine/decoding`) and the model
library (`engine/models`): they know mlx-lm's target models, never the round itself.
"""
