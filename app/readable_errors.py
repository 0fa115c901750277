"""What the window says when something fails: our own errors as they are said, anything else as one sentence in
plain words, with its traceback in the log file for a bug report (never on screen)."""

from __future__ import annotations

import time
import traceback

from engine.errors import SpecChatError
from engine.models.app_paths import data_dir


def readable_error(error: BaseException) -> str:
    """What the window shows: our own errors as they are; anything else as one sentence in plain words, with
    the traceback (and the exception's name) in the log file rather than on screen."""
    if isinstance(error, SpecChatError):
        return str(error)
    where = _log(error)
    if isinstance(error, OSError) and error.strerror:  # not "[Errno 5] Input/output error"
        detail = error.strerror + (f" ({error.filename})" if error.filename else "")
    else:
        detail = str(error).strip().rstrip(".") or "an internal error"
    return f"Something went wrong: {detail}. The details are in {where}; please include them in a bug report."


def _log(error: BaseException) -> str:
    """Append the traceback to specchat.log in the app-data folder; where it went (or why it could not)."""
    try:
        log_file = data_dir() / "specchat.log"
        with open(log_file, "a", encoding="utf-8") as f:
            f.write(f"--- {time.ctime()}\n{''.join(traceback.format_exception(error))}\n")
        return str(log_file)
    except OSError:
        return "the terminal's output (the log file cannot be written)"


def error_kind(error: BaseException) -> str:
    """Our error's kind ("PromptError", ...) for the session to act on; "" for anything else."""
    return type(error).__name__ if isinstance(error, SpecChatError) else ""
