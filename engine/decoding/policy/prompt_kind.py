"""What kind of text a prompt asks for, for the adaptive policy: a drafter agrees with its target far more on code
(boilerplate, syntax, names repeated) than on open chat, and which drafter pays differs between them (a block
drafter right 90% of the time writing code was right 30% in chat), so one acceptance estimate for both would keep
drafting through a chat on code's evidence, or give up on code after a chat. Each kind keeps a policy of its own
(`generation._settings_key`).
"""

from __future__ import annotations

import re

PROMPT_KIND_TOKENS = 2048  # the end of the prompt its kind is read from (a long chat's latest turns)

# Signs of code in a prompt: a fence, or lines that read as code in the common languages.
_CODE = re.compile(r"```|^\s*(def |class |import |from \S+ import |function |const |let |fn |#include|public )|[;{}]\s*$",
                   re.MULTILINE)
# A request for code: a verb of making it, then (in the same sentence) what is made or the language it is made in.
_ASKS_FOR_CODE = re.compile(
    r"\b(write|implement|code|create|generate|refactor|debug|fix|complete)\b[^.?!\n]{0,80}?"
    r"\b(functions?|methods?|scripts?|programs?|code|snippets?|regexp?|quer(y|ies)|unit tests?|python|"
    r"javascript|typescript|rust|golang|java|kotlin|swift|ruby|php|sql|bash|c\+\+|c#)(?!\w)", re.IGNORECASE)


def kind_of(text: str) -> str:
    """"code" when the prompt shows code or asks for some, else "chat"."""
    shows_code = len(_CODE.findall(text)) >= 2 or "```" in text
    return "code" if shows_code or _ASKS_FOR_CODE.search(text) else "chat"
