"""`generate_stream` and `generate`: one generation, as a stream of events or as a result.

This is the loop around the rounds: it validates the request, prefills the prompt (reporting progress), runs
rounds of the chosen decoder, turns tokens into text, ends on EOS, stop strings, the token budget, the
context limit or cancellation (checked between rounds), and totals the statistics.
"""

from __future__ import annotations

import time
from typing import Callable, Iterator, Sequence

import mlx.core as mx

from .policy import AdaptiveDraftLength, FixedDraftLength
from .cached_model import CachedModel, common_prefix_length
from .chat import Message
from .draft_model import DraftModelDrafter
from ..errors import InvalidParameterError, PromptError
from ..events import Event, FinishReason, GenerationResult, GenerationStats, Origin, PrefillEvent, RoundEvent, TokenEvent
from .pair import ModelPair
from ..params import GenerationParams
from .prompt_lookup import PromptLookupDrafter
from .sampling import Warper
from .speculative import SpeculativeDecoder
from .standard import StandardDecoder
from .stop_strings import StopStrings

Cancel = Callable[[], bool]


def _check_request(pair: ModelPair, prompt_ids: list[int], params: GenerationParams) -> None:
    """Refuse a request that cannot run, with what to do instead."""
    limit = pair.context_length
    if len(prompt_ids) >= limit:
        raise PromptError(
            f"The prompt is {len(prompt_ids)} tokens but {pair.target.display_name} reads at most {limit}. "
            "Shorten it, or start a new chat."
        )
    if params.mode != "speculative":
        return
    if params.drafter in ("model", "model+lookup") and pair.draft is None:
        raise InvalidParameterError(
            "Speculative decoding with a draft model needs a draft model: load one (--draft MODEL), "
            "draft by prompt lookup instead (--drafter lookup), or use standard decoding (--mode standard)."
        )
    pair.require_rewindable()


def _caches_to_prefill(pair: ModelPair, params: GenerationParams) -> list[tuple[str, CachedModel]]:
    """The target, and the draft model too when it will draft (its first draft would otherwise prefill it)."""
    caches = [("target", pair.target_cache)]
    if params.mode == "speculative" and params.drafter != "lookup" and pair.draft_cache is not None:
        caches.append(("draft", pair.draft_cache))
    return caches


def _decoder(pair: ModelPair, params: GenerationParams, warper: Warper) -> SpeculativeDecoder | StandardDecoder:
    if params.mode == "standard":
        return StandardDecoder(pair.target_cache, warper, params.prefill_step_size)
    policy = (
        AdaptiveDraftLength(max(params.max_draft, params.num_draft), first_draft=params.num_draft)
        if params.adaptive
        else FixedDraftLength(params.num_draft)
    )
    model_drafter = (
        DraftModelDrafter(pair.draft_cache, params.prefill_step_size)
        if params.drafter in ("model", "model+lookup") and pair.draft_cache is not None
        else None
    )
    lookup_drafter = PromptLookupDrafter() if params.drafter in ("lookup", "model+lookup") else None
    return SpeculativeDecoder(pair.target_cache, warper, policy, model_drafter, lookup_drafter, params.prefill_step_size)


def generate_stream(
    pair: ModelPair,
    prompt: str | Sequence[Message] | list[int],
    params: GenerationParams | None = None,
    *,
    chat: bool = True,
    system_prompt: str | None = None,
    cancel: Cancel | None = None,
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
    """
    params = params or GenerationParams()
    cancelled = cancel or (lambda: False)
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], int):
        prompt_ids = list(prompt)
    else:
        prompt_ids = pair.prompt_ids(prompt, chat=chat, system_prompt=system_prompt)  # type: ignore[arg-type]
    if not prompt_ids:
        raise PromptError("The prompt is empty: type a message (or pass --prompt TEXT).")
    _check_request(pair, prompt_ids, params)
    if params.seed is not None:
        mx.random.seed(params.seed)

    tokenizer = pair.tokenizer
    warper = Warper(params, pair.vocab_width)
    decoder = _decoder(pair, params, warper)
    stats = GenerationStats(prompt_tokens=len(prompt_ids))
    tokens: list[int] = []
    origins: list[Origin] = []
    pieces: list[str] = []
    finish: FinishReason = "length"
    mx.reset_peak_memory()
    start = time.perf_counter()

    try:
        target = pair.target_cache
        stats.cached_prompt_tokens = min(len(prompt_ids) - 1, common_prefix_length(target.tokens, prompt_ids))
        for name, cache in _caches_to_prefill(pair, params):
            for processed, total in cache.catch_up_steps(prompt_ids, step_size=params.prefill_step_size):
                yield PrefillEvent(processed, total, name)
                if cancelled():
                    finish = "cancelled"
                    break
            if finish == "cancelled":
                break
        stats.prompt_s = time.perf_counter() - start
        if finish != "cancelled":
            finish = yield from _rounds(
                decoder, prompt_ids, params, pair, tokenizer, cancelled, stats, tokens, origins, pieces, start
            )
    finally:
        for cache in (pair.target_cache, pair.draft_cache):
            if cache is not None:
                cache.discard_pending()

    stats.total_s = time.perf_counter() - start
    stats.generation_s = stats.total_s - stats.prompt_s
    stats.peak_memory_gb = mx.get_peak_memory() / 1e9
    text = "".join(pieces)
    pair.remember_answer(text, tokens)
    yield GenerationResult(text, tokens, origins, params.mode, finish, stats)


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
    for event in generate_stream(pair, prompt, params, chat=chat, system_prompt=system_prompt, cancel=cancel):
        result = event
    assert isinstance(result, GenerationResult)
    return result


def _rounds(
    decoder: SpeculativeDecoder | StandardDecoder,
    prompt_ids: list[int],
    params: GenerationParams,
    pair: ModelPair,
    tokenizer,  # noqa: ANN001 - mlx-lm's TokenizerWrapper
    cancelled: Cancel,
    stats: GenerationStats,
    tokens: list[int],
    origins: list[Origin],
    pieces: list[str],
    start: float,
) -> Iterator[Event]:
    """Run rounds until something ends the generation; fill `tokens`, `origins`, `pieces`; return why it ended."""
    context = list(prompt_ids)
    context_limit = pair.context_length
    eos = tokenizer.eos_token_ids
    detokenizer = tokenizer.detokenizer
    stops = StopStrings(params.stop)
    decoder.start(context)
    finish: FinishReason = "length"

    def emit(events: list[TokenEvent]) -> Iterator[TokenEvent]:
        for event in events:
            if not tokens:
                stats.ttft_s = time.perf_counter() - start
            tokens.append(event.token)
            origins.append(event.origin)
            pieces.append(event.text)
            yield event

    while True:
        if cancelled():
            finish = "cancelled"
            break
        budget = min(params.max_tokens - stats.generated_tokens, context_limit - len(context))
        if budget <= 0:
            finish = "length" if stats.generated_tokens >= params.max_tokens else "context"
            break
        r = decoder.round(context, budget)
        kept = 0
        for token, origin in zip(r.tokens, r.origins):
            if token in eos:
                finish = "stop"
                break
            context.append(token)
            kept += 1
            stats.generated_tokens += 1
            detokenizer.add_token(token)
            yield from emit(stops.push(TokenEvent(token, detokenizer.last_segment, origin, stats.rounds)))
            if stops.stopped:
                finish = "stop"
                break
        stats.drafted += r.drafted
        stats.accepted += r.accepted
        yield RoundEvent(stats.rounds, r.drafted, r.accepted, kept, r.drafter, r.draft_s, r.verify_s)
        stats.rounds += 1
        if finish == "stop":
            break

    if not stops.stopped:
        yield from emit(stops.flush())
        detokenizer.finalize()
        pieces.append(detokenizer.last_segment)
    return finish
