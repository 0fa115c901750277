"""A SpecChat session (no window) answering questions without end, printing after each batch the answer's id and
the length of the text it has shown so far; the test kills it with SIGKILL and checks the database.

A random tiny model can end an answer early (it samples EOS), so each finished answer is followed by another
question: the stream goes on however the sampling falls.

    python -m tests.app.scripts.stream_until_killed TARGET DRAFT
"""

from __future__ import annotations

import sys

from PySide6.QtCore import QCoreApplication

from app.session import ChatSession
from engine.params import GenerationParams


def main(target: str, draft: str) -> None:
    app = QCoreApplication(sys.argv[:1])
    session = ChatSession()
    session.load_pair(target, draft)
    while session.pair is None:
        app.processEvents()
    session.apply_settings(GenerationParams(temperature=1.0, top_p=1.0, max_tokens=4000, seed=1), "")
    conversation = session.new_conversation("A long story")
    session.answer_events.connect(lambda answer, events: print(answer.message_id, len(answer.text), flush=True))
    session.answer_finished.connect(lambda *_: session.send(conversation, "Go on."))
    session.send(conversation, "Tell me a very long story.")
    while True:
        app.processEvents()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
