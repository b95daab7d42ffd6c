"""What the dialect decoders (OpenAI, LLM-Stream) share, written once.

SSE framing into raw items (`SSEFramer`), one ``_on_event(type, data, offset)`` call per event
(a batch of simple events gives one call per payload, with type ``None``, through ``_on_batch``;
a batch of typed events one per event, with its type, through ``_on_typed``: a dialect may
override either hook to read a batch at once, doing what those calls would), the bound on what a
result may accumulate, the end of the body, and the terminal `StreamEnded`. A dialect decides
what its events mean and what an error after its end marker does (`_after_end`).

A protocol error found while decoding is deferred: the events queued before it are delivered
first, then it is raised (the pull API's contract, ``_pull``).
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Final

from . import _json
from . import _weights as weights
from ._halves import MAX_MENDED, Halves
from ._notes import Notes
from ._pull import PullDecoder
from ._signatures import CARRIED, uncarried, unwrapped
from .errors import PeerProtocolError
from .events import Event, ReasoningBlock, ReasoningSignature, StreamEnded
from .sse import DEFAULT_MAX_EVENT_SIZE, Errors, RawItem, SSEFramer
from .sse.framer import Runs

if TYPE_CHECKING:
    from ._template import Template

__all__: list[str] = []

DEFAULT_MAX_RESULT_SIZE: Final = 64 * 1024 * 1024
"""Characters of text, reasoning, refusal and tool-call arguments one response may accumulate
(64 Mi). The largest context windows served today hold about a million tokens, a few MB of text;
this bound is far above any real answer and far below what would exhaust memory."""


AHEAD: Final = 4096
"""The most a dialect's template (`DialectDecoder._ahead`) takes of the piece of an event the
framer holds: a longer one (a delta tens of kB long) is left to the lane, so that no read
copies it again."""

MAX_ENTRIES: Final = 1024
"""Entries one event's lists may hold in all where each becomes events of its own: a Chat
chunk's ``choices`` and their deltas' ``tool_calls`` (after `svir_proto.openai.stream`'s
joins), a Gemini chunk's ``candidates`` and their ``parts`` (after its joins), a Responses
event's items' parts (a message's content, a reasoning item's summary and content). Servers
send one to a few, a call's pieces as many as its calls (``max_tool_calls``, 128). Past it,
an event of a few megabytes would give hundreds of thousands of events at once, and a
translating gateway's client ten times its bytes at once (attack 41 F1, F2: Gemini parts
alternating thought and text, which no join can merge, gave a Messages client 92 MB for
8 MB, stalled the loop 2.4 s and held 600 MB for a client that read nothing); counted over
all of the event's lists, so that nesting them multiplies nothing (review 42 F1)."""


DEEP: Final = 2 * _json.MAX_DEPTH
"""Payloads longer than this may nest too deeply (`_json` Rule 5): only they are checked."""


class DialectDecoder(PullDecoder[Event]):
    TEXTS: ClassVar[frozenset[str]] = frozenset()
    """The keys of the dialect's text in its payloads: where a surrogate pair the server cut
    between two payloads is joined (`svir_proto._halves`)."""
    RUNS: ClassVar[frozenset[str]] = frozenset()
    """The keys of its payloads' lists that are runs of one channel's pieces (Gemini's
    ``parts``): a text item's index does not tell a channel (`svir_proto._halves`, Rule 2)."""

    def __init__(
        self,
        *,
        max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
        max_result_size: int = DEFAULT_MAX_RESULT_SIZE,
        keep_text: bool = True,
        errors: Errors = "strict",
    ) -> None:
        super().__init__()
        self._framer = SSEFramer(max_event_size=max_event_size, errors=errors)  # checks errors
        self._framer.quiet = True  # a dialect reads no comment
        self._loads = _json.loads
        self._deep = DEEP if _json.BACKEND == "orjson" else sys.maxsize
        """How long a payload must be to be parsed by `_long`: orjson nests deeper than
        `_json` Rule 5 allows, and holds as many containers as come (Rule 6); the standard
        library's reading (`_json.canonical`) checks both itself."""
        self._errors: Errors = errors
        self._raw: list[RawItem] = []
        self._max_result = max_result_size
        self._size = 0
        self._keep_text = keep_text
        # without keep_text, text, reasoning and refusal are appended to nothing (`_kept`) and
        # weigh nothing against max_result_size: the hot paths multiply, never branch
        self._weight = 1 if keep_text else 0
        """What one character of text, reasoning or refusal counts against
        ``max_result_size``: 1, or 0 when the text is not kept."""
        self._closed = False
        self._cut = False
        self._framing_stopped = False  # bytes after the end broke framing: not read any more
        self._skipped = 0  # bytes the express took that the framer has not counted yet
        self._block = self._kept()  # reasoning since the last signature (`_sign`)
        self._blocks: list[ReasoningBlock] = []
        self._problems = Notes()  # said once each, bounded (`_notes`)
        self._listed_at = -1  # the event whose lists `_entries` counts
        self._listed = 0
        # the surrogate pairs cut between payloads (strict)
        self._halves = Halves(self.TEXTS, runs=self.RUNS)

    @property
    def pending(self) -> int:
        """Bytes of the event not whole yet that it holds (`SSEFramer.pending`)."""
        return self._framer.pending

    def feed(self, data: bytes | bytearray | memoryview) -> list[Event]:
        """`PullDecoder.feed`, with the fast lanes while nothing is pending (``_fast``): the
        express takes a piece that is exactly one simple or typed event (`SSEFramer.whole`,
        `SSEFramer.whole_typed`; a live stream's every read) past the framer's buffer, and the
        lane frames the run of simple or typed events a piece completes in one call
        (`SSEFramer.take`); the dialect reads them at once (``_on_batch``, ``_on_typed``).
        A read in the middle of an event the lane holds (``_fast`` is ``False``: a long one,
        in several reads) that ends no line completes nothing and makes nothing due: it is
        only held (`SSEFramer.goes_on`)."""
        fast = self._fast
        if fast is False and type(data) is bytes and data and self._framer.goes_on(data):
            return []
        if fast is not None and type(data) is bytes and data:
            framer = self._framer
            # typed: None for simple events; one typed event (the express: its type, where its
            # data begins and ends), or the types of a run of them
            typed: tuple[str, int, int] | list[str] | None = None
            runs: Runs | None = None
            if data[0] == 0x3A and fast and framer.comment(data):  # ":": a keep-alive, read alone
                self._skipped += len(data)  # nothing to read
                return []
            end = framer.whole(data) if fast else 0
            if end:  # counted into the framer's offsets when it is next used
                shift = framer.shift  # "data:" and no space: see `SSEFramer.shift`
                at = framer._base + self._skipped - shift
                self._skipped += len(data)
                payloads: Sequence[bytes | bytearray] = [data[6 - shift : end]]
            elif fast and (typed := framer.whole_typed(data)) is not None:
                at = framer._base + self._skipped + typed[1]  # where its data begins
                self._skipped += len(data)
            else:
                if self._skipped:
                    framer.skip(self._skipped)
                    self._skipped = 0
                at = framer._base - framer.shift
                got = framer.take(data)
                if got is None:  # received: the general way takes it from here
                    self._fast = None
                    return self._reopen(self._received())
                if isinstance(got, tuple):
                    typed, payloads = got
                elif type(got) is dict:  # simple events with comments between them (`Runs`)
                    runs, payloads = got, ()
                else:
                    payloads = got  # type: ignore[assignment]
            try:
                if runs is not None:
                    for start, (run, stride) in runs.items():
                        self._on_batch(at + start, run, stride)
                elif typed is None:
                    if payloads:  # (none, while a long event is still coming)
                        self._on_batch(at, payloads, framer.gap)
                elif isinstance(typed, tuple):  # one typed event: as the general path gives it
                    self._on_event(typed[0], data[typed[1] : typed[2]], at)
                else:
                    self._on_typed(at, typed, payloads, (framer.gap - 6) // 2)
            except PeerProtocolError as exc:  # delivered after what came before it
                self._deferred = exc
            except Exception as exc:  # a bug, not a protocol error: still poison
                self._error = exc
                raise
            out = self._lane_out()  # what follows an error or the end goes the general way
            if self._fast is not None:
                self._fast = not framer._buf
            return out
        return self._reopen(PullDecoder.feed(self, data))

    def _receive(self, data: bytes) -> None:
        if self._skipped:
            self._framer.skip(self._skipped)
            self._skipped = 0
        self._framer.receive(data)

    def _reopen(self, out: list[Event]) -> list[Event]:
        """After the general way: open the fast lanes if the framer's is, and this decoder is
        neither poisoned nor ended; the express too if the framer holds no bytes."""
        framer = self._framer
        if framer.lane and self._error is None and self._terminal is None:
            self._fast = not framer._buf
        else:
            self._fast = None
        return out

    # A dialect with a template (`svir_proto._template`) reads the deltas at the front of a
    # read with it before the lanes (`_ahead`), then gives the lanes what is left (`_then`).

    def _ahead(
        self, template: Template, data: bytes, seq: int, room: int
    ) -> tuple[list[str], int, bytes] | None:
        """While the lane is open, with LF line ends: the deltas `Template.ahead` reads at the
        front of the piece of an event the framer holds and ``data`` (a read that completes
        a run of deltas): their texts that are not empty, how many, and what of ``data`` is
        left for the lanes; ``None`` if it reads none. The framer holds no complete event, so
        a delta read takes all it holds; the bytes read are counted into its offsets when it
        is next used, as the express's are."""
        framer = self._framer
        held = framer._buf
        if held and (
            b"\n" not in data or len(held) > AHEAD or not template.begins(held, 0, seq)
        ):  # nothing completed; or another event, or a long delta (not copied on every read)
            return None
        texts, count, end, begun = template.ahead(
            held + data if held else data, seq, room, framer.max_event_size
        )
        if not count:
            return None
        self._skipped += end
        rest = data[end - len(held) :]
        held.clear()
        if begun and rest and len(rest) < framer.max_event_size:
            framer.skip(self._skipped)  # the next delta, begun: held as the lane would
            self._skipped = 0
            framer.hold(rest)
            self._fast = False
            return texts, count, b""
        self._fast = True
        return texts, count, rest

    def _then(self, out: list[Event], rest: bytes) -> list[Event]:
        """``out``, the events `_ahead`'s deltas gave, then those of ``rest``, what followed
        them; an error in ``rest`` is raised by the next call when ``out`` has events."""
        if not rest:
            return out
        try:
            more = DialectDecoder.feed(self, rest)
        except PeerProtocolError:
            if out:
                return out  # poisoned: the next call raises it (`error`)
            raise
        return out + more if out else more

    def _fill(self) -> None:
        if self._framing_stopped:
            return
        raw = self._raw
        raw.clear()
        framing_error: PeerProtocolError | None = None
        try:
            self._framer.frame(raw)
        except PeerProtocolError as exc:
            framing_error = exc
        on_event = self._on_event
        try:
            for item in raw:
                if len(item) == 4:  # a batch of simple events: one data line each, no type
                    self._on_batch(item[0], item[1], item[3])
                elif len(item) == 5:  # a batch of typed events: an event and a data line each
                    self._on_typed(item[0], item[1], item[2], item[4])
                elif len(item) == 6:
                    etype, data, data_at, _, _, _ = item
                    on_event(etype, data, data_at if isinstance(data_at, int) else data_at[0])
        except PeerProtocolError as exc:  # a dialect reads nothing after its end marker
            self._deferred = exc
            return
        if framing_error is not None:
            if self._terminal is None or not self._after_end(framing_error):
                self._deferred = framing_error
            else:
                self._framing_stopped = True
            return
        end = self._framer.end
        if end is not None and not self._closed:
            self._closed = True
            self._cut = end.incomplete
            try:
                self._on_body_end()
            except PeerProtocolError as exc:  # the end found a half never joined (`_halves`)
                self._deferred = exc

    def _on_event(
        self, sse_type: str | None, data: bytes | bytearray, at: int
    ) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _on_batch(self, at: int, payloads: Sequence[bytes | bytearray], gap: int) -> None:
        """A `RawBatch`: each payload is an event of type ``None`` whose data begins 6 bytes
        after the event (``data: ``), the next event ``len(payload) + gap`` bytes later."""
        on_event = self._on_event
        for payload in payloads:
            on_event(None, payload, at + 6)
            at += len(payload) + gap

    def _on_typed(
        self, at: int, types: Sequence[str], payloads: Sequence[bytes | bytearray], eol: int
    ) -> None:
        """A `RawTyped`, a run of typed events (the express hands a lone one to ``_on_event``
        itself): event k has type ``types[k]`` and data ``payloads[k]``; the first begins at
        ``at``, each one's data ``len(type) + 13 + eol`` bytes after it begins, and the next
        event ``len(payload) + 2 * eol`` bytes after that (``eol``: 1 with LF line ends, 2 with
        CRLF). Calls ``_on_event`` for each, with the arguments the general path gives; a
        dialect may override it to read a run at once, doing what those calls would."""
        on_event = self._on_event
        head = 13 + eol
        tail = eol + eol
        for sse_type, payload in zip(types, payloads, strict=True):
            at += len(sse_type) + head
            on_event(sse_type, payload, at)
            at += len(payload) + tail

    # A dialect with a fast path for runs of events (a template: `svir_proto._template`)
    # sets ``_on_batch = DialectDecoder._batch_runs`` and ``_on_typed = DialectDecoder._runs``,
    # and gives `_hot` and `_general`.

    def _hot(
        self, types: Sequence[str] | None, payloads: Sequence[bytes | bytearray], i: int
    ) -> int:  # pragma: no cover - abstract
        """Read the events from ``payloads[i]`` on (of ``types``, or simple events: ``None``)
        that the fast path reads, as the general way would; return the index of the first it
        did not read, for `_general` (which says what is wrong with it, if anything is)."""
        raise NotImplementedError

    def _general(
        self, sse_type: str | None, data: bytes | bytearray, at: int
    ) -> None:  # pragma: no cover - abstract
        """One event the general way (`_on_event` without the fast path)."""
        raise NotImplementedError

    def _batch_runs(self, at: int, payloads: Sequence[bytes | bytearray], gap: int) -> None:
        """`_on_batch` for a dialect with a fast path: the runs `_hot` reads at once, the rest
        one by one through `_general`."""
        i, n = 0, len(payloads)
        while i < n:
            j = self._hot(None, payloads, i)
            if j == n:
                return
            if j > i:  # where event j begins
                at += sum(map(len, payloads[i:j])) + (j - i) * gap
                i = j
                continue
            payload = payloads[i]
            self._general(None, payload, at + 6)
            at += len(payload) + gap
            i += 1

    def _runs(
        self, at: int, types: Sequence[str], payloads: Sequence[bytes | bytearray], eol: int
    ) -> None:
        """`_on_typed` for a dialect with a fast path: the runs `_hot` reads at once, the rest
        one by one through `_general`, with the offsets `_on_typed` gives."""
        head = 13 + eol
        step = head + eol + eol
        i, n = 0, len(payloads)
        while i < n:
            j = self._hot(types, payloads, i)
            if j == n:
                return
            if j > i:  # where event j begins
                at += sum(map(len, types[i:j])) + sum(map(len, payloads[i:j])) + (j - i) * step
                i = j
                continue
            sse_type = types[i]
            payload = payloads[i]
            at += len(sse_type) + head
            self._general(sse_type, payload, at)
            at += len(payload) + eol + eol
            i += 1

    def _on_body_end(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _complete(self) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def _after_end(self, exc: PeerProtocolError) -> bool:
        """An error in what followed the end marker: ``True`` if the dialect noted it (the
        stream stays as it was), ``False`` to raise it."""
        return False

    def _long(self, payload: bytes | bytearray, at: int, what: str) -> object:
        """A payload longer than ``_deep`` parsed: bounded first (`_json` Rule 6, which
        `_canonical` reports), then checked for depth (Rule 5), which orjson does not."""
        brackets = _json.brackets(payload)  # (counted once for both)
        if _json.too_many(payload, brackets):
            return self._canonical(payload, at, what)  # (raises)
        try:
            obj = self._loads(payload)
        except (ValueError, RecursionError):
            return self._canonical(payload, at, what)
        if _json.too_deep(payload, obj, brackets):
            return self._canonical(payload, at, what)
        return obj

    def _canonical(self, payload: bytes | bytearray, at: int, what: str) -> object:
        """A payload the fast parser refused or found too deep, by the one policy of `_json`:
        its value (the ``replace`` policy may mend it), or the error both backends report."""
        try:
            return _json.canonical(payload, errors=self._errors)
        except _json.LoneSurrogateError as exc:  # perhaps half of a pair the server cut
            value, exc.value = exc.value, None  # (its lone surrogates stay here: review 40)
            error = json_error(payload, at, exc, what)
            if len(payload) <= MAX_MENDED and self._halves.mend(value, error):
                return value
            raise error from exc
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise json_error(payload, at, exc, what) from exc

    def _entries(self, items: list[object], what: str, at: int) -> list[object]:
        """``items``, a list of the event at offset ``at`` whose entries each become events:
        a `PeerProtocolError` naming ``what`` and the bound when the event's lists hold more
        than `MAX_ENTRIES` in all."""
        if at != self._listed_at:  # (each event its own offset: its own count)
            self._listed_at, self._listed = at, 0
        self._listed += len(items)
        if self._listed > MAX_ENTRIES:
            raise PeerProtocolError(
                f"{what} holds {len(items)} entries: the event's lists hold more than "
                f"{MAX_ENTRIES} in all",
                offset=at,
                limit="max_entries",
                limit_value=MAX_ENTRIES,
            )
        return items

    def _note(self, problem: str) -> None:
        """A problem worth saying once, however often it happens (`Notes`)."""
        self._problems.append(problem)

    def _grow(self, n: int, at: int | None) -> None:
        self._size += n
        if self._size > self._max_result:
            raise PeerProtocolError(
                f"the response is larger than max_result_size ({self._max_result} characters)",
                offset=at,
                limit="max_result_size",
                limit_value=self._max_result,
            )

    def _kept(self) -> list[str]:
        """Where deltas of text, reasoning or refusal are kept: a list, or without
        ``keep_text`` a deque that keeps nothing (its ``append`` and ``extend`` are C-level, as
        fast as a list's), so that a relay that passes the events on holds no copy."""
        return [] if self._keep_text else deque(maxlen=0)  # type: ignore[return-value]

    def _text_room(self) -> int:
        """The characters of text a template may still read (`svir_proto._template`):
        unbounded when the text is not kept (it weighs nothing)."""
        return self._max_result - self._size if self._keep_text else sys.maxsize

    def _sign(self, signature: ReasoningSignature, at: int) -> None:
        """A signature closes the block of reasoning since the last one: a dialect that signs
        its reasoning appends each piece to ``_block`` as well, and calls this for each
        `ReasoningSignature`, which is queued. Without ``keep_text`` the block's text is not
        kept: its `ReasoningBlock` has the signature and an empty text. A signature another
        dialect carried (`svir_proto.hub.carried_signature`, in base64 where the field is
        bytes: `svir_proto._signatures.carried_in_base64`) is its own vendor's again."""
        carried = unwrapped(signature.signature)  # (as it is, unless in base64)
        if carried.startswith(CARRIED) and not signature.redacted:
            own = uncarried(carried)
            if own is not None:
                signature = ReasoningSignature(
                    signature=own.signature,
                    carrier=own.carrier,
                    redacted=own.redacted,
                    item_id=own.item_id,
                )
        self._grow(weights.BLOCK + len(signature.signature) + len(signature.item_id or ""), at)
        self._blocks.append(ReasoningBlock.closed_by(signature, "".join(self._block)))
        self._block.clear()
        self._queue.append(signature)

    def _terminate(self, *, done: bool) -> None:
        lone = self._halves.lone()
        if lone is not None:  # a half of a pair that never came whole: what it was
            raise lone
        ended = StreamEnded(complete=self._complete(), done=done)
        self._terminal = ended
        self._queue.append(ended)

    @staticmethod
    def _joined(parts: list[str]) -> str:
        """Join deltas once; later calls start from the joined text (no quadratic re-joins)."""
        if len(parts) > 1:
            parts[:] = ["".join(parts)]
        return parts[0] if parts else ""


def json_error(
    payload: bytes | bytearray, at: int, exc: BaseException, what: str
) -> PeerProtocolError:
    """Say where ``what`` (a chunk, an event's data) stopped being JSON or UTF-8, as a byte
    offset in the body."""
    if isinstance(exc, UnicodeDecodeError):
        return PeerProtocolError(f"invalid UTF-8 in {what}: {exc.reason}", offset=at + exc.start)
    text = payload.decode("utf-8", "replace")
    pos = getattr(exc, "pos", None)
    where = at + len(text[:pos].encode()) if isinstance(pos, int) else at
    shown = text if len(text) <= 60 else text[:57] + "..."
    return PeerProtocolError(f"{what} is not JSON ({exc}): {shown!r}", offset=where)
