"""How a model load reports its stages, and how it is cancelled: one callback every loading step calls.

It takes a load's stage ("Importing x.gguf", "Loading x"), done and total (total 0: a stage that cannot say how far
it is). The callback may raise (`errors.LoadCancelled`) to cancel the load: every stage reports once it starts, so a
cancel is seen in every phase, not only while an import's weights are written. Its own module because loading and
the GGUF import both report through it, and loading calls the import.
"""

from __future__ import annotations

from collections.abc import Callable

LoadProgress = Callable[[str, int, int], None]
