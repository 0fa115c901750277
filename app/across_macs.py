"""Running the target across Macs, as the session sees it: the setting, the load's line, and the way back to this
Mac alone.

The worker loads and runs the pipeline (engine/distributed/app_head.py); the session keeps the setting (an
mlx.launch hostfile, `AppSettings.cluster_hosts`, kept while switched off). When a Mac leaves mid-answer, the answer so far is saved as for
any error, the setting is switched off, and the pair is loaded on this Mac if it fits here; if it does not, the
banner says what to do instead. A load across Macs that fails (a Mac unreachable, another model there) switches the
setting off too.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QTimer

from engine.models.memory import check_fit, estimate_memory_gb

from .settings import AppSettings
from .worker import PairInfo

OFF = "SpecChat runs on this Mac alone again (Settings: Run the target across Macs… is off)"


def sentence(text: str) -> str:
    """`text` ended as a sentence, so that the next one does not run on from it: a failure's line can end without a
    full stop (the last line a Mac printed, "ssh: … Name or service not known")."""
    text = text.rstrip()
    return text if text.endswith((".", "!", "?", "…")) else f"{text}."


def loading_line(target: str, draft: str, hosts: str) -> str:
    """The status line while a pair loads: which models, and whether across Macs."""
    return f"Loading {target}" + (f" with draft {draft}" if draft else "") + (" across Macs" if hosts else "") + "…"


def back_to_one_mac(info: PairInfo, error: str) -> tuple[str, bool]:
    """After a Mac left: the banner's line, and whether to load the pair here (it fits this Mac's memory)."""
    fit = check_fit(estimate_memory_gb(info.weights_gb))
    if fit.fits:
        return f"{sentence(error)} {OFF}: the pair is loaded here.", True
    return (f"{sentence(error)} {OFF}, where {info.target_name} does not fit (it needs about {fit.required_gb:.0f} GB of "
            f"{fit.available_gb:.0f} GB): choose a smaller pair with Models…, or reopen SpecChat to run it across Macs "
            "again."), False


class AcrossMacs:
    """The session's part in running the target across Macs, given what it uses: the settings that keep the hostfile,
    a way to load a pair, and a way to show a line again once a pair has loaded.

    Attributes:
        notice: an error the window keeps showing once the next pair has loaded (a Mac left and the pair was
            loaded here instead); "" otherwise.
    """

    def __init__(self, settings: AppSettings, load_pair: Callable[[str, str], None],
                 show_again: Callable[[str], None]) -> None:
        self.settings = settings
        self.load_pair = load_pair
        self.show_again = show_again
        self.notice = ""

    @property
    def hosts(self) -> str:
        """The hostfile the next load runs the target across ("": this Mac alone)."""
        return self.settings.cluster_hosts()

    @property
    def hostfile(self) -> str:
        """The hostfile last chosen, offered again in Settings while running across Macs is off."""
        return self.settings.cluster_hostfile()

    def choose(self, hosts: str, pair: PairInfo | None) -> None:
        """Run the target across the Macs of `hosts` ("": this Mac alone) from now on, reloading the pair loaded
        (`pair`) if it changes."""
        if hosts == self.hosts:
            return
        self.settings.save_cluster_hosts(hosts)
        if pair is not None:
            self.load_pair(pair.target, pair.draft or "")

    def loaded(self) -> None:
        """A pair loaded: after a Mac left, the window shows again why this Mac runs alone (loading hid it)."""
        if self.notice:
            self.show_again(self.notice)
        self.notice = ""

    def load_failed(self, error: str) -> str:
        """The banner's line for a failed load: a load across Macs switches the setting off; after a Mac left, both
        failures are told."""
        if self.hosts:
            self.settings.save_cluster_hosts("")
            error = f"{sentence(error)} {OFF}."
        line = f"{self.notice} Loading the pair here failed too: {error}" if self.notice else error
        self.notice = ""
        return line

    def mac_left(self, pair: PairInfo | None, error: str) -> tuple[str, PairInfo | None]:
        """A Mac left mid-answer and the worker let the pipeline go (`pair`: the pair loaded): this Mac alone from now
        on, the pair loaded here (once the failure is shown) if it fits. Returns the banner's line, and the pair still
        loaded (None when it ran across Macs)."""
        if pair is None or pair.macs < 2:
            return error, pair
        self.settings.save_cluster_hosts("")
        line, fits = back_to_one_mac(pair, error)
        if fits:
            self.notice = line
            QTimer.singleShot(0, lambda: self.load_pair(pair.target, pair.draft or ""))
        return line, None
