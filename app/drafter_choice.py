"""The drafter choice: which drafter the next answer drafts with, chosen in one place, the toolbar's "Drafter:".

It lists Automatic first, then only the drafters the loaded pair can run (`drafter_kinds.choices`), each under its
registry label, as the stats line, the Policy row and Compare name it, with what it is on hover. What the picker
loads beside the target (a draft model, a drafter folder, or nothing) decides which drafters the pair has; this
chooses among them. The choice is remembered per pair across launches and takes effect on the next answer without
a reload; a pair never pinned drafts with Automatic, and a pin its pair cannot run is set aside for Automatic with
one line why (`AppSettings.restored_drafter`, which the session asks when a pair loads). While Speculative is off
the target decodes alone: the choice is greyed, and its pin kept for when Speculative is on again.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QWidget

from engine.drafter_kinds import KINDS, choices, drafter_label, heading

from .session import ChatSession
from .settings import AUTOMATIC


def about(drafter: str) -> str:
    """What a drafter is, for the choice's tooltip: the registry's sentence, or its label."""
    row = KINDS.get(drafter)
    return row.about if row is not None and row.about else heading(drafter_label(drafter))


class DrafterChoice(QWidget):
    """"Drafter: Automatic ▾" in the toolbar.

    Args:
        session: whose loaded pair the list follows and whose next answer the choice sets (`choose_drafter`).

    Attributes:
        combo: the list: Automatic, then the pair's drafters, by name in their item data.

    Signals:
        chosen(str): the user chose a drafter (its registry name).
    """

    chosen = Signal(str)

    def __init__(self, session: ChatSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 0, 4, 0)
        self.combo = QComboBox()
        self.combo.setObjectName("drafterChoice")
        self.combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        label = QLabel("Drafter:")
        label.setBuddy(self.combo)
        layout.addWidget(label)
        layout.addWidget(self.combo)
        self.combo.activated.connect(self._activated)  # the user's choices only, not the list being refilled
        session.pair_loaded.connect(self.refresh)
        self.refresh()

    def refresh(self, *_: object) -> None:
        """List what the loaded pair can run, with the drafter its next answer uses selected."""
        pair = self.session.pair
        self.combo.clear()
        for name in choices(pair.drafters) if pair is not None else (AUTOMATIC,):
            self.combo.addItem(heading(drafter_label(name)), name)
            self.combo.setItemData(self.combo.count() - 1, about(name), Qt.ItemDataRole.ToolTipRole)
        self.combo.setCurrentIndex(max(0, self.combo.findData(self.session.params.drafter)))
        self.setEnabled(pair is not None and self.session.params.mode == "speculative")
        self._explain()

    def _activated(self, index: int) -> None:
        name = self.combo.itemData(index)
        self.session.choose_drafter(name)
        self._explain()
        self.chosen.emit(name)

    def _explain(self) -> None:
        """The tooltip: what the drafter chosen is, and how the choice works (or why it is greyed)."""
        off = ("Speculative is off: the target decodes alone and nothing drafts. Switch Speculative on to draft with "
               "this drafter.\n" if self.session.params.mode == "standard" else "")
        self.combo.setToolTip(f"{off}{about(self.combo.currentData() or AUTOMATIC)}.\nWho drafts for the target, from "
                              "the next answer on; remembered for this pair of models. Load other models (Models…) for "
                              "other drafters.")
