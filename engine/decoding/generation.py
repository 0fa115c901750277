"""`generate_stream` and `generate`: one generation, as a stream of events or as a result.

This is the loop around the rounds: it validates the request, prefills the prompt (reporting progress), runs
rounds of the chosen decoder, turns tokens into text, ends on EOS, stop strings, the token budget, the
context limit or cancellation (checked between rounds), and totals the statistics. What a generation has
produced so far lives in one `Answer`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, TypeGuard, cast

import mlx.core as mx

from .. import drafter_kinds
from ..errors import InvalidParameterError, PromptError, PromptTooLongError
from ..events import Event, GenerationResult, GenerationStats, ImagesRead, PrefillEvent
from ..images import ImageSource
from ..models.vision import ImageKey
from ..params import GenerationParams
from . import clock
from .answer import Answer
from .cached_model import CachedModel
from .constraint import constraint_for
from .drafting.automatic import AUTO, AutomaticDrafter, Ballot, asked_drafters, listening_drafter, recalled, remember
from .drafting.drafter import Drafter
from .drafting.maker import MakerInputs
from .image_prefill import ImagePrompt, image_prompt, prefill_images, with_images
from .pair import ModelPair, round_side
from .policy.draft_length import AdaptiveDraftLength, DraftPolicy, FixedDraftLength
from .policy.prompt_kind import PROMPT_KIND_TOKENS, kind_of
from .prompt_ids import FALLBACK_TURN_END, Message, answer_so_far, turn_openers
from .rounds import Decoder
from .sampling import Warper
from .speculative import SpeculativeDecoder
from .standard import StandardDecoder

Cancel = Callable[[], bool]
PromptKind = Callable[[], str]  # the prompt's kind, read when first asked for (`_prompt_kind`)


def _uses_draft(pair: ModelPair, params: GenerationParams) -> bool:
    return params.mode == "speculative" and params.uses_draft_model and pair.draft is not None


def _check_request(pair: ModelPair, prompt_ids: list[int], params: GenerationParams) -> None:
    """Refuse a request that cannot run, with what to do instead."""
    limit, model = pair.context_limit(_uses_draft(pair, params))
    if len(prompt_ids) >= limit:
        raise PromptTooLongError(
            f"The prompt is {len(prompt_ids)} tokens but {model.display_name} reads at most {limit}. "
            "Shorten it, or start a new chat.", len(prompt_ids), limit
        )
    if params.mode != "speculative":
        return
    if params.uses_draft_model and pair.draft is None and params.drafter != AUTO:
        loaded = pair.drafter_loaded
        if loaded is not None:
            raise InvalidParameterError(
                f"Speculative decoding with a draft model needs a draft model, and the draft loaded is "
                f"{drafter_kinds.kind(loaded).needs}: draft with the {drafter_kinds.drafter_label(loaded)}, or load a draft model as the draft."
            )
        raise InvalidParameterError(
            "Speculative decoding with a draft model needs a draft model: load one as the draft, draft with lookup "
            "instead, or use standard decoding."
        )
    pair.require_speculation(_uses_draft(pair, params))
    pair.hidden_listener(listening_drafter(pair, params))  # loads the MTP head, or says why the target has none (a folder's: none loaded)


def _caches_to_prefill(pair: ModelPair, params: GenerationParams, prompt_kind: PromptKind) -> list[tuple[str, CachedModel]]:
    """The target, and the draft model too when it will draft (its first draft would otherwise prefill it).

    Not when the adaptive policy has given up on the draft model: prefilling a draft that will not draft cost
    about a tenth of the speed through the server (a draft as costly as the target, chat prompts of ~40 tokens,
    64-token answers: 0.905x standard with 8 tokens drafted in 8 answers). A probe's draft catches up instead.
    """
    caches = [("target", pair.target_cache)]
    draft = pair.draft_cache  # there is one wherever a draft model drafts
    if _uses_draft(pair, params) and draft is not None and not _policy(pair, params, prompt_kind()).gave_up_on("model"):
        caches.append(("draft", draft))
    return caches


def _prompt_kind(pair: ModelPair, prompt_ids: list[int]) -> PromptKind:
    """The prompt's kind ("code" or "chat", `prompt_kind.py`), read the first time it is asked for: it decodes up to
    PROMPT_KIND_TOKENS of the prompt's tokens, for the policies and drafters of a speculative answer, which keep
    their estimates per kind; a standard answer never asks."""
    return functools.cache(lambda: kind_of(pair.tokenizer.decode(prompt_ids[-PROMPT_KIND_TOKENS:])))


def _policy(pair: ModelPair, params: GenerationParams, prompt_kind: str) -> DraftPolicy:
    """A fixed K, or the pair's adaptive policy for these settings and this kind of prompt (its estimates carry over
    between answers)."""
    if not params.adaptive:
        return FixedDraftLength(params.num_draft)
    max_draft, key = max(params.max_draft, params.num_draft), _settings_key(pair, params, prompt_kind)
    if params.drafter == AUTO:  # Automatic starts from what earlier launches measured of the pair
        return pair.policy(key, lambda: recalled(AdaptiveDraftLength(max_draft, first_draft=params.num_draft), pair, key))
    return pair.policy(key, lambda: AdaptiveDraftLength(max_draft, first_draft=params.num_draft))


def _settings_key(pair: ModelPair, params: GenerationParams, prompt_kind: str) -> tuple[object, ...]:
    """What a kept policy's estimates depend on: the drafter, the lengths, the warp, the cache's precision, SSD,
    whether an output constraint applies (it forces tokens, raising acceptance, and reads each draft-model token), and
    the prompt's kind (which drafter pays differs between code and chat, `prompt_kind.py`; what a kind's
    policy relearns of the costs, a few rounds once, is cheaper than drafting on another kind's evidence)."""
    warp = (params.greedy, params.temperature, params.top_p, params.top_k, params.min_p, params.repetition_penalty,
            params.presence_penalty, params.frequency_penalty, params.logit_bias)
    lengths = (params.adaptive, max(params.max_draft, params.num_draft), params.num_draft)
    return (params.drafter, lengths, warp, pair.kv_bits, params.ssd, params.fanout, params.ssd_always, params.history,
            params.json_schema is not None or params.grammar is not None, prompt_kind)


def _remember_automatic(pair: ModelPair, params: GenerationParams, prompt_kind: PromptKind) -> None:
    """After an answer under Automatic, keep what its policy measured for later launches (`policy/memory.py`)."""
    if params.drafter == AUTO and params.mode == "speculative":
        remember(_policy(pair, params, prompt_kind()), pair, _settings_key(pair, params, prompt_kind()))


def _decoder(pair: ModelPair, params: GenerationParams, warper: Warper, prompt_kind: PromptKind,
             compared: object = None) -> Decoder:
    """Standard decoding, or speculation with the chosen drafter (a combination's parts in their order), or with
    Automatic's candidates (every drafter the pair has) as one drafter: each made by its kind's maker, looked up by
    its row (`drafting/maker.py`). `compared`: a Compare run's prompt (lookup leaves its question's chats out)."""
    constraint = constraint_for(params, pair.tokenizer, pair.vocab_width)
    if params.mode == "standard":
        return StandardDecoder(pair.target_cache, warper, params.logprobs, constraint)
    automatic, kind_of_prompt = params.drafter == AUTO, prompt_kind()
    policy: DraftPolicy = Ballot(_policy(pair, params, kind_of_prompt)) if automatic else _policy(pair, params, kind_of_prompt)
    settings = _settings_key(pair, params, kind_of_prompt)
    given = MakerInputs(pair, params, warper, policy, settings, constraint, automatic, compared)
    drafters: list[Drafter] = [round_side(kind).make_drafter(replace(given, kind=kind)) for kind in asked_drafters(pair, params)]
    if isinstance(policy, Ballot):
        drafters = [AutomaticDrafter(drafters, policy)]
    return SpeculativeDecoder(pair.target_cache, warper, policy, drafters, trace=params.trace_rounds, lenience=params.lenience,
                              logprobs=params.logprobs, constraint=constraint)


def _rounds(decoder: Decoder, answer: Answer, cancelled: Cancel) -> Iterator[Event]:
    """Run rounds until something ends the generation."""
    answer.start_rounds()
    decoder.start(answer.context)
    answer.clock_thinking()
    while answer.finish != "stop":
        if cancelled():
            answer.finish = "cancelled"
            break
        budget = answer.budget()
        if budget <= 0:
            break
        yield from answer.take(decoder.round(answer.context, budget))
    yield from answer.flush()


def _prefill(
    pair: ModelPair, caches: list[tuple[str, CachedModel]], prompt_ids: list[int], cancelled: Cancel,
    vision: ImagePrompt | None = None,
) -> Generator[ImagesRead | PrefillEvent, None, bool]:
    """Prefill the prompt into the models that will read it (`caches`: `_caches_to_prefill`'s), chunk by chunk (a
    vision target's images first, in one pass); returns whether it finished."""
    if vision is not None:
        yield ImagesRead(vision.counts)
    prefill_images(pair.target, pair.target_cache, vision, prompt_ids)
    for name, cache in caches:
        for processed, total in cache.catch_up_steps(prompt_ids):
            yield PrefillEvent(processed, total, name)
            if cancelled():
                return False
        cache.checkpoint_turn()
    return True


def _exact_text(prompt: str | Sequence[Message] | list[int], chat: bool) -> bool:
    """Whether the answer's text is exactly its tokens', a leading space kept: a completion of raw text or ids, and an
    answer that goes on from the conversation's last, which its first space joins on to."""
    return not chat or _is_token_ids(prompt) or _went_on_from(prompt) is not None


def _went_on_from(prompt: str | Sequence[Message] | list[int]) -> str | None:
    """The text of the answer a conversation ends in, which this answer goes on from (`continues_last_answer`); None
    for a prompt that opens a new answer."""
    if isinstance(prompt, str) or _is_token_ids(prompt):
        return None
    return answer_so_far(cast(Sequence[Message], prompt))[1] or None


def _whole_answer(pair: ModelPair, prompt: str | Sequence[Message] | list[int], result: GenerationResult) -> tuple[str, list[int]]:
    """An answer's text and ids from its start, for a later conversation to splice in: one that went on from the
    conversation's last is that one's text and ids (if the pair has them) followed by its own."""
    earlier = _went_on_from(prompt)
    if earlier is None:
        return result.text, result.answer_tokens
    return earlier + result.text, pair.remembered_answer(earlier) + result.answer_tokens


def _is_token_ids(prompt: object) -> TypeGuard[list[int]]:
    return isinstance(prompt, list) and bool(prompt) and isinstance(prompt[0], int)


def _turn_ends(pair: ModelPair, params: GenerationParams, chatting: bool) -> tuple[GenerationParams, frozenset[int]]:
    """Where a chat answer ends besides end-of-sequence, as the params and the token ids the answer stops at: a base
    model chatting through the fallback transcript where it starts the next user turn (a stop string), a chat model
    at a token that opens the next turn. A completion of raw text or ids: neither."""
    if not chatting:
        return params, frozenset()
    if not pair.is_base_model:
        return params, turn_openers(pair.tokenizer)
    if FALLBACK_TURN_END in params.stop:
        return params, frozenset()
    return params.replace(stop=params.stop + (FALLBACK_TURN_END,)), frozenset()


def _prompt_ids(pair: ModelPair, prompt: str | Sequence[Message] | list[int], chat: bool, system_prompt: str | None,
                tools: list[dict[str, Any]] | None, think: bool = True,
                images: Sequence[ImageSource] = ()) -> tuple[list[int], ImagePrompt | None]:
    """The prompt's token ids (given as ids, or rendered with the chat template and the tools), never empty, each
    image's placeholder expanded to its tokens; and the images' prompt for the vision tower (None: no image)."""
    sources: list[ImageSource] = []
    if _is_token_ids(prompt):
        prompt_ids = _known_ids(prompt, pair.vocab_width)
    else:
        rendered, sources = with_images(prompt, images)  # type: ignore[arg-type]  # not ids: taken above
        if sources and not chat:
            raise InvalidParameterError("Images are placed by the chat template: ask about an image with chat on.")
        prompt_ids = pair.prompt_ids(rendered, chat=chat, system_prompt=system_prompt, tools=tools, think=think)
    if not prompt_ids:
        raise PromptError("The prompt is empty: type a message (or pass --prompt TEXT).")
    if not sources:
        return prompt_ids, None
    vision = image_prompt(pair.target, prompt_ids, sources)
    return vision.ids, vision


def _known_ids(prompt: list[int], vocab_width: int) -> list[int]:
    """A prompt given as token ids, each one a row of the model's embedding: an id past it is no token, and the
    embedding would read whatever memory lies there."""
    unknown = next((t for t in prompt if not 0 <= t < vocab_width), None)
    if unknown is not None:
        raise InvalidParameterError(f"The prompt holds token id {unknown}, which this model does not have: its ids run "
                                    f"from 0 to {vocab_width - 1}. Tokenize the prompt with this model's tokenizer.")
    return list(prompt)


def _set_up(pair: ModelPair, params: GenerationParams) -> None:
    """The seed, prefill chunk and key precision this answer asks for; its peak memory counted from here."""
    mx.reset_peak_memory()
    if params.seed is not None:
        mx.random.seed(params.seed)
    pair.set_prefill_step_size(params.prefill_step_size)
    pair.set_kv_bits(params.kv_bits)


@contextmanager
def _answering(pair: ModelPair, params: GenerationParams) -> Iterator[None]:
    """Around an answer's passes: a drafter that drafts from hidden states (MTP, EAGLE-3, DFlash) hears every target pass
    (the prefill's included), and the pair is not idle; afterwards, caches fed ids an interrupted answer never read
    start over."""
    listener = pair.hidden_listener(listening_drafter(pair, params)) if params.mode == "speculative" else None
    if listener is not None:
        listener.attach()
    pair.idle.clear()
    try:
        yield
    finally:
        pair.idle.set()
        if listener is not None:
            listener.detach()
        pair.discard_pending()


def _recall_prefix(pair: ModelPair, caches: list[tuple[str, CachedModel]], prompt_ids: list[int],
                   images: ImageKey | None) -> int:
    """Take back a shelved prefix the prompt starts with (`prompt_cache.py`; past an image only for the same
    images); not for a target across Macs, whose other Macs hold their layers' caches, which the head cannot shelve
    or take back. Returns the prompt tokens the target's cache then holds (the last is always read again)."""
    if pair.network_clock() is None:
        pair.prompt_cache.recall([cache for _, cache in caches], prompt_ids, images)
    return min(len(prompt_ids) - 1, pair.target_cache.shared_with(prompt_ids, images))


def generate_stream(
    pair: ModelPair,
    prompt: str | Sequence[Message] | list[int],
    params: GenerationParams | None = None,
    *,
    chat: bool = True,
    system_prompt: str | None = None,
    cancel: Cancel | None = None,
    comparing: bool = False,
    tools: list[dict[str, Any]] | None = None,
    images: Sequence[ImageSource] = (),
    end_ids: frozenset[int] = frozenset(),
) -> Iterator[Event]:
    """Generate a reply, yielding PrefillEvents, then TokenEvents and a RoundEvent per round, then the result.

    Args:
        pair: the loaded models (their caches carry over between calls).
        prompt: a user message, a conversation (list of {"role", "content"}), or token ids.
        params: generation settings (default: `GenerationParams()`).
        chat: apply the chat template (ignored for token ids).
        system_prompt: prepended as a system message when chatting.
        cancel: polled between rounds and prefill chunks; when it returns True generation ends with
            finish_reason "cancelled", keeping what was generated.
        comparing: a run of Compare: the answer is not added to the history lookup drafts from (the other run would
            copy it), nor drafted from saved chats that asked this question (the speedup would be the history's).
        tools: function definitions (OpenAI's shape) for the chat template, for a model that calls tools.
        images: what the last user message shows, for a vision target (paths, bytes, data URLs; image_prefill.py).
        end_ids: more tokens the answer ends at, none in it (a filled-in middle's ends, `fill_in_middle.py`).
    """
    params = params or GenerationParams()
    cancelled = cancel or (lambda: False)
    prompt_ids, vision = _prompt_ids(pair, prompt, chat, system_prompt, tools, params.think, images)
    params, ends = _turn_ends(pair, params, chat and not _is_token_ids(prompt))
    _check_request(pair, prompt_ids, params)
    _set_up(pair, params)
    warper = Warper(params, pair.vocab_width)
    stats = GenerationStats(prompt_tokens=len(prompt_ids))
    image_key = vision.key if vision is not None else None
    started = clock.now()  # a prefix read back from disk (or spilled to it) is part of the wait
    prompt_kind = _prompt_kind(pair, prompt_ids)
    caches = _caches_to_prefill(pair, params, prompt_kind)
    stats.cached_prompt_tokens = _recall_prefix(pair, caches, prompt_ids, image_key)
    limit = pair.context_limit(_uses_draft(pair, params))[0]
    answer = Answer(list(prompt_ids), params, limit, pair.tokenizer, stats, started, pair.think_markers,
                    network=pair.network_clock(), end_ids=ends | end_ids, exact_text=_exact_text(prompt, chat))
    with _answering(pair, params):
        prefilled = yield from _prefill(pair, caches, prompt_ids, cancelled, vision)
        stats.prompt_s = clock.now() - answer.start
        if prefilled:
            decoder = _decoder(pair, params, warper, prompt_kind, prompt if comparing else None)
            yield from _rounds(decoder, answer, cancelled)
            stats.policy = decoder.policy.beliefs() if isinstance(decoder, SpeculativeDecoder) else []
            _remember_automatic(pair, params, prompt_kind)
        else:
            answer.finish = "cancelled"
    result = answer.result()
    if not comparing:
        pair.remember_answer(*_whole_answer(pair, prompt, result))
        pair.history.add(answer.context)  # later chats may draft from this one
    yield result


def generate(
    prompt: str | Sequence[Message] | list[int],
    pair: ModelPair | None = None,
    params: GenerationParams | None = None,
    *,
    target: str | None = None,
    draft: str | None = None,
    chat: bool = True,
    system_prompt: str | None = None,
    cancel: Cancel | None = None,
    tools: list[dict[str, Any]] | None = None,
    images: Sequence[ImageSource] = (),
) -> GenerationResult:
    """Generate a whole reply and return the result (text, tokens, origins, stats).

    Pass a loaded `pair` to reuse models across calls, or `target` (and `draft`) names to load them for this
    call, as in `generate("Explain MLX", target="mlx-community/Qwen2.5-7B-Instruct-4bit",
    draft="mlx-community/Qwen2.5-0.5B-Instruct-4bit")`.
    """
    if pair is None:
        if target is None:
            raise InvalidParameterError("generate() needs a loaded pair or a target model name.")
        pair = ModelPair.load(target, draft)
    result = None
    for event in generate_stream(pair, prompt, params, chat=chat, system_prompt=system_prompt, cancel=cancel, tools=tools,
                                 images=images):
        result = event
    assert isinstance(result, GenerationResult)
    return result
