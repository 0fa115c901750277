"""What kind of text a prompt asks for, for the adaptive policy: a draft model agrees with its target far more on
code (boilerplate, syntax, names repeated) than on open chat, so one acceptance estimate for both would keep
drafting through a chat on code's evidence, or give up on code after a chat.
"""

from __future__ import annotations

import re

# Signs of code in a prompt: a fence, or lines that read as code in the common languages.
_CODE = re.compile(r"```|^\s*(def |class |import |from \S+ import |function |const |let |fn |#include|public )|[;{}]\s*$",
                   re.MULTILINE)


def prompt_kind(text: str) -> str:
    """"code" when the prompt shows code, else "chat"."""
    return "code" if len(_CODE.findall(text)) >= 2 or "```" in text else "chat"


def draft_model_source(text: str) -> str:
    """The policy's name for a draft model drafting for this prompt: "model", or "model:code" on code."""
    return "model:code" if prompt_kind(text) == "code" else "model"
