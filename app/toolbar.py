"""The window's toolbar: choose models, switch speculative/standard, the drafter, Compare, Markdown, settings, the
local server, and the pair shown.

Only the controls live here; what they do is the main window's (which forwards to the session).
"""

from __future__ import annotations

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QSizePolicy, QToolBar, QWidget

from .drafter_choice import DrafterChoice
from .elided_label import ElidedLabel


class MainToolbar(QToolBar):
    """The toolbar's actions, and the loaded pair on the right.

    Args:
        speculative: the mode switch starts on (speculative) or off (standard).
        markdown: the Markdown switch starts on.
        drafter: the drafter choice (`drafter_choice.DrafterChoice`), beside the mode switch.
    """

    def __init__(self, speculative: bool, markdown: bool, drafter: DrafterChoice, parent: QWidget | None = None) -> None:
        super().__init__("Main", parent)
        self.setMovable(False)
        self.models_action = self._action("Models…", "Choose models (Ctrl+K)")
        self.speculative_action = self._action("Speculative", "On: speculative decoding. Off: standard decoding (the target alone).")
        self.speculative_action.setCheckable(True)
        self.speculative_action.setChecked(speculative)
        self.drafter = drafter
        self.addWidget(drafter)
        self.compare_action = self._action("Compare", "Run the last prompt two ways (standard or a drafter each side), from an empty prompt cache, and compare")
        self.markdown_action = self._action("Markdown", "Show finished answers as Markdown (off: keep the coloured tokens)")
        self.markdown_action.setCheckable(True)
        self.markdown_action.setChecked(markdown)
        self.settings_action = self._action("Settings…", "Generation settings (Ctrl+,)")
        self.server_action = self._action("Server…", "Serve the loaded models to other programs (OpenAI-compatible)")
        spacer = QWidget()
        spacer.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.addWidget(spacer)
        self.pair_label = ElidedLabel("No models loaded")  # in view at any width, whole on hover
        self.pair_label.setObjectName("pairLabel")
        self.addWidget(self.pair_label)

    def _action(self, text: str, tip: str) -> QAction:
        action = QAction(text, self)
        action.setToolTip(tip)
        self.addAction(action)
        return action
