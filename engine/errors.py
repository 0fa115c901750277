"""Errors a user can act on.

Every error the engine raises on purpose is a `SpecChatError` whose message is one line that names the problem
and the fix. The CLI prints it and exits non-zero; the GUI shows it in the window. Anything else that escapes
is a bug and is reported as one.
"""

from __future__ import annotations


class SpecChatError(Exception):
    """A problem with the user's input or environment, with a message that says what to do."""


class ModelNotFoundError(SpecChatError):
    """A model path does not exist and is not a downloaded hub repo."""


class NotAModelError(SpecChatError):
    """A path exists but does not hold a model we can load.

    Attributes:
        kind: what is wrong in a word or two ("damaged", "incomplete"), for lists of models.
    """

    def __init__(self, message: str, kind: str = "damaged") -> None:
        super().__init__(message)
        self.kind = kind


class NotAChatModelError(NotAModelError):
    """A model folder of another kind (a drafter, an adapter, a vision or embedding model) that mlx-lm cannot load
    as a chat model; `kind` names it ("DFlash drafter")."""


class UnsupportedModelError(SpecChatError):
    """A model mlx-lm cannot run, or cannot run the way speculation needs."""


class IncompatiblePairError(SpecChatError):
    """A draft whose tokenizer maps strings to different ids than the target's."""


class InvalidParameterError(SpecChatError):
    """A generation setting outside its valid range."""


class PromptError(SpecChatError):
    """An empty prompt, or one longer than the model's context."""


class PromptTooLongError(PromptError):
    """A prompt longer than the model's context; its counts let the server say so in the words each API's clients
    act on (Claude Code shortens the conversation and retries on Anthropic's)."""

    def __init__(self, message: str, tokens: int = 0, limit: int = 0) -> None:
        super().__init__(message)
        self.tokens, self.limit = tokens, limit


class DownloadError(SpecChatError):
    """A download that could not finish: no network, no such repo, gated, disk full."""


class DownloadCancelled(SpecChatError):
    """The user cancelled a download; the cache holds only complete files."""


class DistributedError(SpecChatError):
    """A Mac of a pipelined target that stopped, cannot be reached, or holds another model."""


class LoadCancelled(SpecChatError):
    """The user cancelled a model load (a GGUF import); the import kept nothing, the loaded pair stays."""
