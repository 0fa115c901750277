"""Drafters that read the target's own hidden states (DFlash and DSpark; MTP heads and EAGLE-3 beside them).

Each module here holds one published drafter format: its network, its loader from the folder people download,
and the small API the speculative round calls. They sit between the round (`engine/decoding`) and the model
library (`engine/models`): they know mlx-lm's target models, never the round itself.
"""


def default_drafter(draft: str | None) -> str:
    """The drafter a `--draft` folder means when none is named: lookup without one, the EAGLE-3, DFlash or DSpark
    drafter its folder holds, a draft model otherwise (so a user never has to say twice what the folder is)."""
    from .draft_folder import hidden_drafter

    found = hidden_drafter(draft)
    return "lookup" if not draft else found[0] if found else "model"
