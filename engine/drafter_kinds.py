"""The drafter kinds SpecChat drafts with: one row each, and everything that lists drafters reads the rows.

A row is data only: what the drafter is called and how people read it, how its folder is recognised, how it drafts
(a block in one pass or token by token; always or only on a match), what it pairs with, and the dotted names of the
modules that hold its two sides: the network that loads its weights and judges a target (`engine/drafters/`) and
the round that drafts with it (`engine/decoding/drafting/`, under the same file stem, whose `make_drafter` the
decoder calls for every kind: `engine/decoding/drafting/maker.py`). Naming the modules instead of importing them
keeps this file at the base every layer stands on, and makes a new kind its own files plus one row (`register`).

The choices a user can pick are the rows in order; a row with `parts` is a combination of other rows ("model+lookup":
lookup first, the draft model when lookup finds nothing), so a choice's parts say which drafters run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

# Which targets a kind pairs with: any target (lookup), one sharing its tokenizer (a draft model), the target a
# drafter folder was trained for (judged by configs: hidden size, vocabulary, tapped layers), or the target's own
# heads (its config declares them).
Pairing = Literal["any", "tokenizer", "trained-for", "built-in"]


@dataclass(frozen=True)
class FolderMarks:
    """How a drafter's config.json says what it is (see `engine/models/folder_kind.drafter_family`, the one rule).

    Attributes:
        architectures: lower-case fragments of an `architectures` entry that name the kind ("dflash").
        speculators_types: `speculators_model_type` values of the kind.
        tags: (block, key, value): a nested block tagging the kind ("dflash_config", "projector_type", "dspark").
        keys: top-level keys that mark the kind only when no name or tag marks any kind ("dflash_config").
    """

    architectures: tuple[str, ...] = ()
    speculators_types: tuple[str, ...] = ()
    tags: tuple[tuple[str, str, str], ...] = ()
    keys: tuple[str, ...] = ()

    def tagged_by(self, config: dict[str, Any]) -> bool:
        """Whether a nested block of the config tags this kind."""
        return any(isinstance(config.get(block), dict) and config[block].get(key) == value
                   for block, key, value in self.tags)

    def named_by(self, config: dict[str, Any]) -> bool:
        """Whether the config's architecture or speculators type names this kind."""
        names = " ".join(_architectures(config)).lower()
        speculator = str(config.get("speculators_model_type") or "").lower()
        return any(fragment in names for fragment in self.architectures) or speculator in self.speculators_types

    def keyed_by(self, config: dict[str, Any]) -> bool:
        """Whether one of the kind's top-level keys is in the config."""
        return any(key in config for key in self.keys)


@dataclass(frozen=True)
class DrafterKind:
    """One drafter kind: a row of the registry.

    Attributes:
        name: what `--drafter`, the server's `drafter` field and the settings call it, and the policy's name for
            its drafts ("dflash"; the policy may add a qualifier: "lookup+copying").
        label: how a person reads it (the stats line, the toolbar, Compare).
        about: what it is, in a sentence, for a person choosing it (the toolbar's Drafter choice shows it on hover).
        parts: for a combination, the kinds it runs in drafting order; () for a kind of its own.
        family: the family its folders belong to, as the picker names them ("DFlash": "DFlash drafter"); "" when it
            has no folder.
        folder: how its folder's config.json is recognised; None for a kind without a folder.
        target_keys: for drafting heads the target ships, the target config keys that declare them.
        block: drafts a whole block in one pass (its cost is per pass, its acceptance estimated by position); False:
            one pass per draft token.
        persistent: always has a draft (a network); False: only when it finds a match (lookup).
        listens: drafts from the target's hidden states: its side of the chat (its round module's `load_state`) is
            kept by the pair and hears every target pass of an answer; False: it drafts from the tokens alone.
        pairs_with: which targets it drafts for (see `Pairing`).
        needs: for a kind with a folder, what it needs loaded, in a sentence ("a DFlash drafter").
        checkpoint: for a kind with a folder, the folders it loads from, in a sentence.
        network: for a kind with a folder, the module (engine/drafters/) with
            `check_folder(folder, target_config, target_layers, target_name)`.
        round: for a kind of its own, the module with `make_drafter(given: MakerInputs)`, which makes an answer's
            drafter (`engine/decoding/drafting/maker.py`), and, for a kind that `listens`,
            `load_state(target, target_cache, path)`, which makes its side of the chat.
    """

    name: str
    label: str
    about: str = ""
    parts: tuple[str, ...] = ()
    family: str = ""
    folder: FolderMarks | None = None
    target_keys: tuple[str, ...] = ()
    block: bool = False
    persistent: bool = True
    listens: bool = False
    pairs_with: Pairing = "trained-for"
    needs: str = ""
    checkpoint: str = ""
    network: str = ""
    round: str = ""

    @property
    def runs(self) -> tuple[str, ...]:
        """The kinds that draft when this one is chosen: its parts, or itself."""
        return self.parts or (self.name,)


KINDS: dict[str, DrafterKind] = {row.name: row for row in (
    # Automatic: each round, every drafter the pair has competes (`decoding/drafting/automatic.py` asks `candidates`); its parts
    # are the two any pair may have, so that settings ask for lookup and the draft model where it chooses.
    DrafterKind("auto", "Automatic", parts=("lookup", "model"), persistent=False, pairs_with="any",
                about="Each round, the drafter this pair has that is predicted fastest on this machine, or none"),
    DrafterKind("model", "draft model", pairs_with="tokenizer", round="engine.decoding.drafting.draft_model",
                about="The small model loaded beside the target drafts every round"),
    DrafterKind("lookup", "lookup", persistent=False, pairs_with="any", round="engine.decoding.drafting.lookup",
                about="Copies what followed the same words earlier in this chat or your saved chats (no model)"),
    DrafterKind("model+lookup", "draft model + lookup", parts=("lookup", "model"), pairs_with="tokenizer",
                about="Lookup first; the draft model drafts when lookup finds nothing"),
    DrafterKind("mtp", "built-in MTP drafter", target_keys=("mtp_num_hidden_layers", "num_nextn_predict_layers"),
                listens=True, pairs_with="built-in", round="engine.decoding.drafting.mtp",
                about="The multi-token-prediction heads shipped in the target's own weights"),
    DrafterKind("eagle3", "EAGLE-3 drafter", family="EAGLE-3",
                folder=FolderMarks(architectures=("eagle3",), speculators_types=("eagle3",), keys=("draft_vocab_size",)),
                listens=True, needs="an EAGLE-3 drafter", checkpoint="a speculators-format EAGLE-3 checkpoint",
                network="engine.drafters.eagle3", round="engine.decoding.drafting.eagle3",
                about="The EAGLE-3 drafter folder loaded beside the target, reading its hidden states"),
    DrafterKind("dflash", "DFlash drafter", family="DFlash",
                folder=FolderMarks(architectures=("dflash",), keys=("dflash_config",)), block=True, listens=True,
                needs="a DFlash drafter", checkpoint="a z-lab DFlash or DFlash2 checkpoint",
                network="engine.drafters.dflash", round="engine.decoding.drafting.dflash",
                about="The DFlash drafter folder loaded beside the target: a block of tokens in one pass"),
    DrafterKind("dspark", "DSpark drafter", family="DSpark",
                folder=FolderMarks(architectures=("dspark",), speculators_types=("dspark",),
                                   tags=(("dflash_config", "projector_type", "dspark"),)), block=True, listens=True,
                needs="a DSpark drafter", checkpoint="a DeepSeek DSpark checkpoint",
                network="engine.drafters.dspark", round="engine.decoding.drafting.dspark",
                about="The DSpark drafter folder loaded beside the target: a block of tokens in one pass"),
)}


def register(kind: DrafterKind) -> None:
    """Add a drafter kind (or replace the row of its name): every list of drafters shows it from now on."""
    KINDS[kind.name] = kind


def names() -> tuple[str, ...]:
    """Every drafter a user can choose, in the registry's order (`--drafter`, the server, Compare)."""
    return tuple(KINDS)


def kind(name: str) -> DrafterKind:
    """The row of a drafter by its name or the policy's name for its drafts ("lookup+copying"); KeyError for a name
    no row has."""
    if name in KINDS:
        return KINDS[name]
    return KINDS[name.split("+", 1)[0]]


def kind_name(source: str) -> str:
    """The name of the kind a drafter's drafts come from, by the policy's name for them ("lookup+copying" ->
    "lookup"); a name no row has, as it is ("none")."""
    row = _row_of(source)
    return row.name if row is not None else source


# How a person reads the policy's finer names for a drafter's drafts (a lookup match's kind).
QUALIFIED_LABELS = {"lookup+copying": "lookup while copying", "lookup+long": "lookup, long matches"}


def drafter_label(name: str) -> str:
    """A drafter's name, or the policy's finer name for its drafts, as a person reads it ("mtp" -> "built-in MTP
    drafter", "lookup+copying" -> "lookup while copying"); a name no row has, as it is."""
    if name in QUALIFIED_LABELS:
        return QUALIFIED_LABELS[name]
    return KINDS[name].label if name in KINDS else name


def heading(label: str) -> str:
    """A label to start a sentence, a list entry or a column with: only its first letter raised ("Built-in MTP
    drafter", never str.capitalize's "Built-in mtp drafter")."""
    return label[:1].upper() + label[1:]


def drafters_named(drafted_by: dict[str, int], asked: str) -> str:
    """Who drafted an answer's tokens (`drafted_by`: draft tokens per drafter; `asked`: the drafter asked for, named
    when nothing was drafted): "built-in MTP drafter", or with several each one's share of the drafted tokens, said
    as such ("lookup drafted 62%, draft model 38%": bare percentages beside an acceptance rate read as acceptance
    rates, and "of drafted tokens: ..." still did to a new user)."""
    if len(drafted_by) < 2:
        return drafter_label(next(iter(drafted_by), asked))
    total = sum(drafted_by.values())
    (first, most), *rest = sorted(drafted_by.items(), key=lambda item: -item[1])
    return ", ".join([f"{drafter_label(first)} drafted {most / total:.0%}"] + [f"{drafter_label(name)} {n / total:.0%}" for name, n in rest])


def folder_kinds() -> tuple[DrafterKind, ...]:
    """The kinds loaded from a folder of their own, in the order their marks are tried."""
    return tuple(row for row in KINDS.values() if row.folder is not None)


def listens(name: str) -> bool:
    """Whether a drafter drafts from the target's hidden states (its state hears the target's passes); False for a
    name no row has ("none")."""
    row = _row_of(name)
    return row is not None and row.listens


def is_block(source: str) -> bool:
    """Whether the drafter of a policy source drafts a whole block in one pass."""
    row = _row_of(source)
    return row is not None and row.block


def is_persistent(source: str) -> bool:
    """Whether the drafter of a policy source always has a draft (a network, not lookup)."""
    row = _row_of(source)
    return row is not None and row.persistent


def built_in(target_config: dict[str, Any]) -> tuple[str, ...]:
    """The kinds built into a target: those whose heads its config declares (`target_keys`, at the top level or in
    `text_config`)."""
    text = target_config.get("text_config") or {}
    return tuple(row.name for row in KINDS.values() if row.pairs_with == "built-in"
                 and any(text.get(key) or target_config.get(key) for key in row.target_keys))


def candidates(loaded: tuple[str, ...], has_draft_model: bool, target_config: dict[str, Any]) -> tuple[str, ...]:
    """Every single drafter a pair has, in the registry's order: lookup, the draft model when one is loaded, the heads
    the target declares, and the drafter folders loaded (`loaded`): what an Automatic choice picks among."""
    declared = built_in(target_config)
    found = []
    for row in KINDS.values():
        if row.parts:
            continue
        has = {"any": True, "tokenizer": has_draft_model, "trained-for": row.name in loaded,
               "built-in": row.name in declared}[row.pairs_with]
        if has:
            found.append(row.name)
    return tuple(found)


def choices(drafters: tuple[str, ...]) -> tuple[str, ...]:
    """The choices a pair with these single drafters (`candidates`) can run, in the registry's order: Automatic and
    lookup always, and every other whose parts are all among them (the toolbar's Drafter choice, Compare's sides)."""
    return tuple(row.name for row in KINDS.values() if row.pairs_with == "any" or all(p in drafters for p in row.runs))


def _row_of(source: str) -> DrafterKind | None:
    try:
        return kind(source)
    except KeyError:
        return None


def _architectures(config: dict[str, Any]) -> list[str]:
    names = config.get("architectures") or []
    return [names] if isinstance(names, str) else [str(n) for n in names]
