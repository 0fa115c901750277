"""Running the target across Macs in the app: the story with a real second rank (run in a process of its own, see
across_macs_story.py), and the ways back to one Mac that need no ring (a pair too big for this Mac, a load across
Macs that fails)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

STORY = Path(__file__).with_name("across_macs_story.py")
ROOT = STORY.parents[2]


@pytest.mark.distributed
@pytest.mark.parametrize("story", ["test_across_two_macs", "test_quitting_says_goodbye_to_every_mac"])
def test_the_app_with_its_target_across_two_macs(story: str) -> None:
    """Each story in a process of its own (see across_macs_story.py): answers as one process, a Mac lost, quitting."""
    done = subprocess.run([sys.executable, "-m", "pytest", f"{STORY}::{story}", "-q", "-p", "no:cacheprovider"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout


def test_after_a_mac_left_a_pair_too_big_for_this_mac_is_not_loaded_here_and_the_user_is_told(make_window) -> None:
    window = make_window()
    session = window.session
    session.settings.save_cluster_hosts("/Users/me/hosts.json")
    session.pair = dataclasses.replace(session.pair, macs=2, weights_gb=100_000.0)  # as if it ran across 2 Macs
    line, session.pair = session.across.mac_left(
        session.pair, "Lost the Mac mac-b (10.0.0.2, rank 1) mid-answer: its SpecChat process ended.")
    assert line.startswith("Lost the Mac mac-b (10.0.0.2, rank 1) mid-answer")
    assert "does not fit" in line and "choose a smaller pair with Models…, or reopen SpecChat" in line
    assert session.pair is None and not session.loading and session.settings.cluster_hosts() == ""


def test_a_load_across_macs_that_fails_switches_the_setting_off_and_keeps_the_pair_loaded_before(make_window, qtbot,
                                                                                                   tmp_path) -> None:
    window = make_window()
    before = window.session.pair
    one = tmp_path / "one.json"
    one.write_text(json.dumps({"hosts": [{"ssh": "mac-a", "ips": ["10.0.0.1"]}]}))
    with qtbot.waitSignal(window.session.pair_failed, timeout=30_000) as failed:
        window.session.across.choose(str(one), window.session.pair)
    assert failed.args[0] == (f"The hostfile {one} lists 1 host: a pipeline needs two Macs or more. SpecChat runs on "
                              "this Mac alone again (Settings: Run the target across Macs… is off).")
    assert window.session.settings.cluster_hosts() == "" and window.session.pair == before
    assert window.error_banner.text().endswith("The models loaded before are still in use.")


def test_a_failed_load_across_macs_says_each_sentence_apart_and_keeps_the_hostfile_to_offer_again(isolated_home, qapp) -> None:
    """The banner ran an ssh error into the next sentence ("…not known SpecChat runs on this Mac…"), and switching
    the setting off forgot the hostfile the user had chosen."""
    from app.across_macs import AcrossMacs
    from app.settings import AppSettings

    settings = AppSettings()
    settings.save_cluster_hosts("/Users/me/hosts.json")
    across = AcrossMacs(settings, lambda target, draft: None, lambda line: None)
    line = across.load_failed("SpecChat did not start on mac-b (10.0.0.2): ssh: Could not resolve hostname mac-b: "
                              "Name or service not known")
    assert "Name or service not known. SpecChat runs on this Mac alone again" in line
    assert across.hosts == "" and settings.cluster_hostfile() == "/Users/me/hosts.json"
