"""A thinking model in the window (the tiny thinking fixture): its reasoning folded under the answer's header and
saved apart, the next turn's prompt without it, and the chat's Think switch."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from engine.fixtures.tiny_thinking import ANSWER, REASONING
from tests.app.conftest import send_and_wait
from tests.app.test_token_view import document_pieces

QUESTION = "What is the capital of France?"


@pytest.fixture
def thinking_window(make_window, thinking_dirs):
    """A window over the tiny thinking model (Qwen3-style: it writes "<think>" itself) and its draft. Not shown:
    visibility is read as "not hidden"."""
    return make_window(pair=tuple(str(folder) for folder in thinking_dirs(False)))


def test_reasoning_is_shown_folded_expands_on_a_click_and_is_saved_apart(thinking_window, qtbot) -> None:
    window = thinking_window
    result = send_and_wait(qtbot, window, QUESTION)
    message = window.chat.messages[-1]
    fold = message.fold
    assert not fold.isHidden() and not fold.expanded and fold.view.isHidden()
    assert fold.toggle.text().startswith("Thought for ") and fold.figures.text().startswith("while thinking: ")
    assert message.text == ANSWER == result.text and REASONING not in message.body.toPlainText()
    qtbot.mouseClick(fold.toggle, Qt.MouseButton.LeftButton)
    assert fold.expanded and not fold.view.isHidden() and fold.view.answer_text() == REASONING
    origins = {piece[2] for piece in document_pieces(fold.view) if piece[0] == "token"}
    assert {"accepted", "corrected"} <= origins  # coloured by origin, as the answer is
    stored = window.session.store.messages(window.conversation_id)[-1]
    assert (stored.content, stored.reasoning) == (ANSWER, REASONING)
    assert stored.reasoning_s == pytest.approx(result.stats.thinking.seconds) and stored.reasoning_s > 0
    chat = window.conversation_id
    window.new_conversation()
    window.open_conversation(chat)  # the saved chat, reloaded from the store
    reloaded = window.chat.messages[-1]
    assert not reloaded.fold.isHidden() and not reloaded.fold.expanded and reloaded.text == ANSWER
    assert reloaded.fold.toggle.text() == fold.toggle.text() and reloaded.fold.view.answer_text() == REASONING


def test_the_next_turn_leaves_earlier_reasoning_out_of_the_prompt(thinking_window, qtbot) -> None:
    window = thinking_window
    first = send_and_wait(qtbot, window, QUESTION)
    history = window.session.history(window.conversation_id)
    assert history[-1] == {"role": "assistant", "content": ANSWER, "reasoning_content": REASONING}
    pair = window.session.engine.pair  # idle between answers: read on this thread only to check the prompt
    prompt = pair.tokenizer.decode(pair.prompt_ids(history + [{"role": "user", "content": "And Japan?"}]))
    assert f"<|im_start|>assistant\n{ANSWER}<|im_end|>" in prompt and REASONING not in prompt
    second = send_and_wait(qtbot, window, "And Japan?")
    assert second.reasoning == REASONING  # it thinks again, about the new question
    assert second.stats.cached_prompt_tokens >= first.stats.prompt_tokens  # the first turn's prompt was reused


def test_think_off_answers_without_reasoning_in_that_chat_only(thinking_window, qtbot) -> None:
    window = thinking_window
    switch = window.think_switch
    assert not switch.isHidden() and switch.isChecked()
    switch.setChecked(False)  # before the chat's first message: saved with it
    result = send_and_wait(qtbot, window, QUESTION)
    assert result.text == ANSWER and result.reasoning == "" and result.parts.count("reasoning") == 0
    assert window.chat.messages[-1].fold.isHidden()
    assert window.session.store.think(window.conversation_id) is False
    thinking_off = window.conversation_id
    window.new_conversation()
    assert switch.isChecked()  # a new chat follows the default
    window.open_conversation(thinking_off)
    assert not switch.isChecked()


def test_the_switch_is_hidden_for_a_model_that_does_not_think(make_window) -> None:
    window = make_window()
    assert window.think_switch.isHidden()
