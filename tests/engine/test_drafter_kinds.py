"""The registry of drafter kinds: what each row says, read the way the policy, the pair and the labels read it."""

from __future__ import annotations

import pytest

from engine import drafter_kinds
from engine.drafter_kinds import (
    built_in,
    candidates,
    drafter_label,
    drafters_named,
    is_block,
    is_persistent,
    kind,
    kind_name,
    names,
)
from engine.params import GenerationParams
from tests.helpers import registered


def test_the_policy_s_qualified_sources_are_read_as_their_kind() -> None:
    """The policy keeps "lookup+copying" apart from "lookup"; the row is the same."""
    assert kind("lookup+copying").name == "lookup"
    assert [source for source in ("model", "lookup+long", "mtp", "eagle3", "dflash", "dspark", "none")
            if is_persistent(source)] == ["model", "mtp", "eagle3", "dflash", "dspark"]
    assert [source for source in ("model", "lookup", "mtp", "eagle3", "dflash", "dspark", "none")
            if is_block(source)] == ["dflash", "dspark"]
    with pytest.raises(KeyError):
        kind("none")
    assert [kind_name(source) for source in ("model", "lookup+copying", "lookup+long", "dspark", "none")] == [
        "model", "lookup", "lookup", "dspark", "none"]  # a round's drafter, as its RoundEvent names it


def test_the_kinds_that_read_the_target_s_hidden_states_listen() -> None:
    """The pair keeps their sides of the chat and attaches them to the target's passes; lookup and the draft model
    draft from the tokens alone, and "none" (standard decoding) is no drafter."""
    assert [name for name in ("model", "lookup", "model+lookup", "mtp", "eagle3", "dflash", "dspark", "none")
            if drafter_kinds.listens(name)] == ["mtp", "eagle3", "dflash", "dspark"]


def test_a_combination_runs_its_parts_in_order() -> None:
    assert kind("model+lookup").runs == ("lookup", "model") and kind("dflash").runs == ("dflash",)
    assert GenerationParams(drafter="model+lookup").looks_up and GenerationParams(drafter="model+lookup").uses_draft_model
    assert not GenerationParams(drafter="dflash").looks_up and not GenerationParams(drafter="mtp").uses_draft_model


def test_every_drafter_a_pair_has_is_a_candidate() -> None:
    """Lookup always; the draft model when one is loaded; the target's heads when its config declares them (in
    text_config for multimodal checkpoints); a drafter folder when one is loaded."""
    assert candidates((), False, {}) == ("lookup",)
    assert candidates(("dflash",), True, {"text_config": {"mtp_num_hidden_layers": 1}}) == (
        "model", "lookup", "mtp", "dflash")
    assert candidates(("eagle3",), False, {"num_nextn_predict_layers": 1}) == ("lookup", "mtp", "eagle3")
    assert built_in({"text_config": {"mtp_num_hidden_layers": 1}}) == ("mtp",) and built_in({"hidden_size": 8}) == ()


def test_labels_name_each_drafter_and_each_share() -> None:
    assert drafter_label("mtp") == "built-in MTP drafter" and drafter_label("something-else") == "something-else"
    assert drafter_label("lookup+copying") == "lookup while copying"  # the Policy row showed "lookup+copying"
    assert drafters_named({}, "dflash") == "DFlash drafter"
    assert drafters_named({"lookup": 62, "model": 38}, "model+lookup") == "lookup drafted 62%, draft model 38%"


def test_the_choices_a_pair_can_run_are_automatic_and_lookup_then_those_its_drafters_make() -> None:
    """What the app's Drafter choice and Compare offer: a combination only when the pair has every part of it."""
    assert drafter_kinds.choices(("lookup",)) == ("auto", "lookup")
    assert drafter_kinds.choices(("lookup", "model")) == ("auto", "model", "lookup", "model+lookup")
    assert drafter_kinds.choices(("lookup", "dflash")) == ("auto", "lookup", "dflash")
    assert all(row.about for row in drafter_kinds.KINDS.values())  # each says what it is, on hover


def test_every_choice_is_a_valid_setting_and_nothing_else_is() -> None:
    for name in names():
        assert GenerationParams(drafter=name).drafter == name
    with pytest.raises(Exception, match="drafter must be one of auto, model, lookup, model\\+lookup, mtp"):
        GenerationParams(drafter="medusa")
    assert all(row.folder is not None and row.network and row.round for row in drafter_kinds.folder_kinds())


# --- a new kind is one row plus its own files --------------------------------------------------------------------

NETWORK = '''
"""The made-up Sketch drafter's network side: which targets its folder fits (its config names their width)."""
from engine.errors import IncompatiblePairError
from engine.models.folder_kind import read_json


def check_folder(folder, target_config, target_layers, target_name):
    width = (read_json(folder / "config.json") or {}).get("target_hidden_size")
    if width != target_config.get("hidden_size"):
        raise IncompatiblePairError(f"it drafts for targets {width} wide, and {target_name} is not")
'''
ROUND = '''
"""The made-up Sketch drafter's round side: it hears the target's last layer, and drafts the last token again."""
import mlx.core as mx

from engine.decoding.drafting.drafter import NO_DRAFT, point_draft
from engine.decoding.drafting.drafter_state import AttachedStates
from engine.decoding.hidden_states import LayerTap


class SketchState(AttachedStates):
    taps = (LayerTap(-1),)
    heard_positions = 0

    def heard(self, position, states):
        self.heard_positions = position + states[0].shape[0]

    @property
    def state(self):
        return []

    def reset(self):
        self.heard_positions = 0

    def forget_from(self, position):
        self.heard_positions = min(self.heard_positions, position)


class SketchDrafter:
    idle = False

    def __init__(self, state):
        self.state = state

    def start(self, context):
        pass

    def propose(self, context, limit, split_pass=False):
        return point_draft([context[-1]], "sketch", 0.0) if self.state.heard_positions else NO_DRAFT

    def speculate(self, context, draft, verdict):
        return 0

    def settle(self, draft, ids, accepted):
        pass


def load_state(target, target_cache, path):
    return SketchState(target_cache)


def make_drafter(given):
    return SketchDrafter(given.pair.drafter_state("sketch"))
'''
SKETCH = drafter_kinds.DrafterKind(
    "sketch", "Sketch drafter", family="Sketch", folder=drafter_kinds.FolderMarks(architectures=("sketchdraft",)),
    listens=True, needs="a Sketch drafter", checkpoint="a Sketch checkpoint", network="sketch_kind.network",
    round="sketch_kind.round", about="A Sketch drafter folder loaded beside the target",
)


@pytest.fixture
def sketch(tmp_path, monkeypatch):
    """The Sketch kind registered, its files in a package of their own, and a folder of it (cleared afterwards)."""
    registered(SKETCH, {"network.py": NETWORK, "round.py": ROUND}, tmp_path, monkeypatch)
    folder = tmp_path / "Llama-Sketch"
    folder.mkdir()
    (folder / "config.json").write_text('{"architectures": ["SketchDraftModel"], "target_hidden_size": 64}')
    yield folder
    drafter_kinds.KINDS.pop("sketch")


def test_a_registered_kind_is_offered_and_named_everywhere(sketch, tiny_dirs) -> None:
    """`--drafter`, the server's `drafter` field, the picker (its label, what the folder drafts as, whether it fits),
    Compare, the app's Drafter choice and the stats line: all from the row, no other file touched."""
    from engine.cli.main import build_parser
    from engine.comparison import side_label, sides
    from engine.drafters.pairing import check_draft
    from engine.events import GenerationResult, GenerationStats
    from engine.models.draft_choice import drafter_for, drafts_with
    from engine.models.folder_kind import foreign_kind
    from engine.serving.api_error import ApiError
    from engine.serving.openai_api import request_params

    args = build_parser().parse_args(["generate", "--target", "t", "--prompt", "hi", "--drafter", "sketch"])
    assert args.drafter == "sketch"
    assert request_params({"drafter": "sketch"}, GenerationParams()).drafter == "sketch"
    with pytest.raises(ApiError, match="'drafter' must be one of .*dspark, sketch, not 'hydra'"):
        request_params({"drafter": "hydra"}, GenerationParams())
    kind_line = foreign_kind(sketch)
    assert kind_line.kind == "Sketch drafter" and drafts_with(kind_line.kind) and "as its draft." in kind_line.message
    assert drafter_for(str(sketch)) == "sketch" and check_draft(str(tiny_dirs[0]), str(sketch)).compatible
    assert "sketch" in sides() and side_label("sketch") == "Sketch drafter"
    stats = GenerationStats(drafted=4, accepted=2, drafted_by={"sketch": 4})
    line = GenerationResult("text", [1], ["target"], "speculative", "stop", stats, drafter="sketch").summary()
    assert "(Sketch drafter)" in line
    assert drafter_kinds.choices(("lookup", "sketch"))[-1] == "sketch"  # the app's Drafter choice, for a pair with it
    assert "sketch" not in drafter_kinds.choices(("lookup", "model"))


def test_a_registered_kind_loads_from_its_folder_and_drafts_through_its_round(sketch, tiny_dirs) -> None:
    """`ModelPair.load` attaches it, the decoder finds its maker by the row, its drafts are verified (greedy: the
    target's own text), and the stats say who drafted."""
    from engine.decoding.generation import generate
    from engine.decoding.pair import ModelPair

    pair = ModelPair.load(str(tiny_dirs[0]), str(sketch))
    assert pair.drafter_loaded == "sketch" and pair.drafter_names() == ("lookup", "sketch")
    greedy = GenerationParams.preset("greedy", max_tokens=12, adaptive=False, num_draft=1)
    drafted = generate("Hello", pair, greedy.replace(drafter="sketch"))
    plain = generate("Hello", pair, greedy.replace(mode="standard"))
    assert drafted.tokens == plain.tokens
    assert set(drafted.stats.drafted_by) == {"sketch"} and drafted.stats.drafted > 0


# --- a token-by-token kind with no folder: one row and its round module ------------------------------------------

ECHO_ROUND = '''
"""The made-up Echo drafter's round: from the tokens alone, it drafts the context's last token again, K times."""
from engine.decoding.drafting.drafter import NO_DRAFT, point_draft


class EchoDrafter:
    idle = False

    def __init__(self, policy):
        self.policy = policy

    def start(self, context):
        pass

    def propose(self, context, limit, split_pass=False):
        k = self.policy.choose("echo", limit, split_pass)
        return point_draft([context[-1]] * k, "echo", 0.0) if k else NO_DRAFT

    def speculate(self, context, draft, verdict):
        return 0

    def settle(self, draft, ids, accepted):
        pass


def make_drafter(given):
    return EchoDrafter(given.policy)
'''
ECHO = drafter_kinds.DrafterKind("echo", "Echo drafter", pairs_with="any", round="echo_kind.round")


@pytest.fixture
def echo(tmp_path, monkeypatch):
    """The Echo kind registered with its round module (cleared afterwards)."""
    registered(ECHO, {"round.py": ECHO_ROUND}, tmp_path, monkeypatch)
    yield ECHO
    drafter_kinds.KINDS.pop("echo")


def test_a_registered_token_by_token_kind_is_made_by_the_decoder_pinned_and_under_automatic(echo, tiny_target) -> None:
    """The decoder makes it by its row's maker when it is chosen and as one of Automatic's candidates (every pair
    has it: it pairs with any target), asked after lookup; greedy output stays the target's."""
    from engine.decoding.drafting.automatic import asked_drafters
    from engine.decoding.generation import generate
    from engine.decoding.pair import ModelPair

    pair = ModelPair(tiny_target)
    greedy = GenerationParams.preset("greedy", max_tokens=16)
    assert pair.drafter_names() == ("lookup", "echo") and asked_drafters(pair, greedy) == ("lookup", "echo")
    plain = generate("Hello", pair, greedy.replace(mode="standard"))
    pinned = generate("Hello", pair, greedy.replace(drafter="echo", adaptive=False, num_draft=2))
    automatic = generate("Hello", pair, greedy)
    assert pinned.tokens == automatic.tokens == plain.tokens
    assert set(pinned.stats.drafted_by) == {"echo"} and pinned.stats.drafted > 0
    assert "echo" in automatic.stats.drafted_by
