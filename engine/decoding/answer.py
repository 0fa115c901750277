"""The answer a generation is assembling: tokens turned into text events, stop strings, a thinking model's
parts, the statistics, and how it ended.

`generation.py` runs the rounds; each round's tokens go through `Answer.take`, which ends the answer on EOS, a
stop string, the token budget or the context limit.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..events import Event, FinishReason, GenerationResult, GenerationStats, Origin, Part, RoundEvent, TokenEvent, TokenLogprob
from ..models.memory import peak_memory_gb
from ..params import GenerationParams
from . import clock
from .reasoning import PartDetokenizer, ThinkMarkers
from .rounds import Round
from .stop_strings import StopStrings

END_OF_ANSWER = "⟨end⟩"  # a drafted end token's text in the rounds (a draft that would have ended the answer there)


@dataclass
class Answer:
    """A generation's running state: the context so far, what was emitted, the text, the stats, how it ended.

    A thinking model's tokens are split as they come (`reasoning.py`): each token's part is kept beside it, each
    part's text apart, and every round counted in the part most of its tokens went to (not the one it began in:
    the first round begins before `<think>` and is mostly reasoning), so that acceptance while thinking and
    while answering can be read apart; the time spent thinking is measured round by round. With the target across
    Macs, `network` reads the head's seconds in the pipeline's collectives so far, and each round is given its share.
    An answer ends at end-of-sequence or at one of `end_ids`: for a chat, the tokens that open the next turn
    (`prompt_ids.turn_openers`); for a filled-in middle, its format's ends (`fill_in_middle.py`); a completion of
    raw text or ids has none. A completion's text is exactly its tokens' (`exact_text`; `reasoning.untrimmed`).
    """

    context: list[int]
    params: GenerationParams
    context_limit: int
    tokenizer: Any  # mlx-lm's TokenizerWrapper
    stats: GenerationStats
    start: float
    markers: ThinkMarkers | None = None
    tokens: list[int] = field(default_factory=list)
    origins: list[Origin] = field(default_factory=list)
    parts: list[Part] = field(default_factory=list)
    pieces: dict[str, list[str]] = field(default_factory=lambda: {"answer": [], "reasoning": []})
    finish: FinishReason = "length"
    network: Callable[[], float] | None = None
    end_ids: frozenset[int] = frozenset()
    exact_text: bool = False

    def __post_init__(self) -> None:
        self.eos = set(self.tokenizer.eos_token_ids) | self.end_ids  # a chat's next turn, a middle's end: the answer ends
        self.split = PartDetokenizer(self.tokenizer, self.markers, list(self.context), self.exact_text)
        self.stops = StopStrings(self.params.stop)
        self._thinking_since: float | None = None
        self._logprobs: deque[TokenLogprob | None] = deque()  # the target's logprobs of tokens pushed, waiting for their events
        self._network_mark = 0.0

    def start_rounds(self) -> None:
        """The rounds begin: the network's time counts from here (the prefill's is the prompt's, not a round's)."""
        if self.network is not None:
            self._network_mark = self.network()
            self.stats.network_s = 0.0

    def _network_s(self) -> float | None:
        """The head's seconds in collectives since the last round ended (None on one machine)."""
        if self.network is None:
            return None
        now = self.network()
        spent, self._network_mark = now - self._network_mark, now
        self.stats.network_s = (self.stats.network_s or 0.0) + spent
        return spent

    def budget(self) -> int:
        """Tokens the next round may emit; 0 (with the reason set) when the answer must end."""
        budget = min(self.params.max_tokens - self.stats.generated_tokens, self.context_limit - len(self.context))
        if budget <= 0:
            self.finish = "length" if self.stats.generated_tokens >= self.params.max_tokens else "context"
        return budget

    def take(self, r: Round) -> Iterator[Event]:
        """A round's tokens as events (up to EOS or a stop string), then its RoundEvent. A round the answer ends in
        among its accepted drafts counts the drafts up to the end alone: those after it are no part of the answer,
        and counted as accepted they read as speculation past the end ("9 of 10 accepted" and a struck end)."""
        kept, reasoning, ended_at = 0, 0, None
        logprobs: Sequence[TokenLogprob | None] = r.logprobs or [None] * len(r.tokens)
        for token, origin, logprob in zip(r.tokens, r.origins, logprobs):
            if token in self.eos:
                self.finish, ended_at = "stop", kept + 1
                self.stats.ended_on_eos = True
                break
            self.context.append(token)
            kept += 1
            self.stats.generated_tokens += 1
            self._logprobs.append(logprob)
            yield from self._release(self._with_logprobs(self.split.push(token, origin, self.stats.rounds)))
            reasoning += self.split.part == "reasoning"  # a marker counts in the part it opens
            if self.stops.stopped:
                self.finish, ended_at = "stop", kept
                break
        if ended_at is not None and ended_at <= r.accepted:
            r = dataclasses.replace(r, drafted=ended_at, accepted=ended_at)
        self.stats.drafted += r.drafted
        self.stats.accepted += r.accepted
        self.stats.count_ssd(r)
        if r.drafted:
            self.stats.drafted_by[r.drafter] = self.stats.drafted_by.get(r.drafter, 0) + r.drafted
        thinking = 2 * reasoning > kept if kept else self.split.part == "reasoning"
        (self.stats.thinking if thinking else self.stats.answering).add_round(r.drafted, r.accepted, kept)
        yield self._round_event(r, kept, thinking)
        self.stats.rounds += 1
        self.clock_thinking()

    def clock_thinking(self, ended: bool = False) -> None:
        """Start or stop the thinking clock as the output enters or leaves reasoning (or the generation `ended`)."""
        now = clock.now()
        thinking = self.split.part == "reasoning" and not ended
        if thinking and self._thinking_since is None:
            self._thinking_since = now
        elif not thinking and self._thinking_since is not None:
            self.stats.thinking.seconds += now - self._thinking_since
            self._thinking_since = None

    def _draft_piece(self, token: int) -> str:
        """A drafted token's text as the rounds show it: an end token (which the answer never shows as text) as
        END_OF_ANSWER, not as its raw marker (`<|im_end|>`), which would read as something the model wrote."""
        return END_OF_ANSWER if token in self.eos else self.tokenizer.decode([token])

    def _round_event(self, r: Round, emitted: int, thinking: bool) -> RoundEvent:
        return RoundEvent(
            self.stats.rounds, r.drafted, r.accepted, emitted, r.drafter, r.draft_s, r.verify_s,
            draft=tuple(r.draft_ids),
            draft_text=tuple(self._draft_piece(token) for token in r.draft_ids),
            p=tuple(r.p),
            q=tuple(r.q),
            next_token=r.tokens[-1],
            predicted_tps=r.predicted_tps,
            predicted_tps_plain=r.predicted_tps_plain,
            timed=r.timed,
            ssd_hit=r.ssd_hit,
            predrafted=r.predrafted,
            predraft_wasted=r.predraft_wasted,
            hidden_draft_s=r.hidden_draft_s,
            reasoning=thinking,
            network_s=self._network_s(),
        )

    def _with_logprobs(self, events: list[TokenEvent]) -> list[TokenEvent]:
        """Events get their tokens' logprobs: the splitter releases tokens in the order they were pushed."""
        out = []
        for event in events:
            logprob = self._logprobs.popleft()
            out.append(event if logprob is None else dataclasses.replace(event, logprob=logprob))
        return out

    def _release(self, events: list[TokenEvent]) -> Iterator[TokenEvent]:
        """Token events through the stop strings (none after one completed)."""
        for event in events:
            if self.stops.stopped:
                return
            yield from self._emit(self.stops.push(event))

    def _emit(self, events: list[TokenEvent]) -> Iterator[TokenEvent]:
        for event in events:
            if not self.tokens:
                self.stats.ttft_s = clock.now() - self.start
            self.tokens.append(event.token)
            self.origins.append(event.origin)
            self.parts.append(event.part)
            if event.part != "marker":
                self.pieces[event.part].append(event.text)
                (self.stats.thinking if event.reasoning else self.stats.answering).tokens += 1
            yield event

    def flush(self) -> Iterator[TokenEvent]:
        """At the end: release tokens held for a marker or a stop string that never completed, and the
        detokenizers' rest."""
        yield from self._release(self._with_logprobs(self.split.flush()))
        if not self.stops.stopped:
            yield from self._emit(self.stops.flush())
            for part, rest in self.split.rest().items():
                self.pieces[part].append(rest)

    def result(self) -> GenerationResult:
        self.stats.total_s = clock.now() - self.start
        self.stats.generation_s = self.stats.total_s - self.stats.prompt_s
        self.stats.peak_memory_gb = peak_memory_gb()
        self.clock_thinking(ended=True)
        return GenerationResult("".join(self.pieces["answer"]), self.tokens, self.origins, self.params.mode, self.finish,
                                self.stats, self.params.applied_lenience, "".join(self.pieces["reasoning"]).strip(),
                                self.parts if self.markers else [], self.stops.matched,
                                self.params.drafter if self.params.mode == "speculative" else "none")
