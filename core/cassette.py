"""The cassette: an ordered list of interactions, each a canonical request and its response."""

from __future__ import annotations

import atexit
import contextlib
import sys
import threading
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from os import PathLike
from pathlib import Path
from typing import Any, TypeVar

from . import cancellation, keyrules, miss, options, statedir, storage, store
from .call import Call, RecordOrder
from .canonical import canonical_json, fresh_copy, json_copy, key_of
from .errors import CassetteError, CassetteMiss, CassetteSecretError, CassetteWriteError
from .modes import RecordMode, current_policy, resolve_mode
from .normalize import Normalizer, build_pipeline, normalize
from .order import BRANCH, RecordClock, ReplayOrder, own_recording
from .order import parse as parse_order
from .provenance import recorded_with, today
from .redact import RecordingScan, Redactor
from .request_keys import RequestKeys
from .store import JournalWarning, Store
from .transcript import response_hash
from .usage import count_tokens, unknown_usage

T = TypeVar("T")
#: ``earlier(rules)``: the canonical request as an integration built it under key rules
#: ``rules``, or ``None`` when it built it as it does now (``Cassette.begin``).
Earlier = Callable[[int], dict[str, Any] | None]


@dataclass
class Interaction:
    """One recorded call. ``request`` is the normalized, redacted copy kept for humans."""

    key: str
    request: dict[str, Any]
    response: Any
    meta: dict[str, Any] = field(default_factory=dict)
    new: bool = field(default=False, compare=False)
    """Recorded in this run (not loaded from the file)."""
    journaled: bool = field(default=False, compare=False)
    """Written to this process's journal (it survives the process if the save fails)."""
    secrets: list[str] = field(default_factory=list, compare=False, repr=False)
    """What the save will refuse in the response (``kind at path``): its journal line is
    masked, so no key sits on disk in plain text, and marked, so a recovery sets it aside."""
    response_text: str | None = field(default=None, compare=False, repr=False)
    """The response's JSON text when the recording made it (``RecordingScan.text_of``): its
    journal line is written with it instead of encoding the response a second time."""
    _hashed: tuple[Any, str] | None = field(default=None, init=False, compare=False, repr=False)

    @property
    def rules(self) -> int:
        """The version of the key rules its key was made by (``keyrules.KEY_RULES_VERSION``)."""
        return storage.interaction_rules({"meta": self.meta})

    def to_plain(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "request": self.request,
            "response": self.response,
            "meta": self.meta,
            "response_hash": self.response_hash(),  # lets `verify` see hand edits
        }

    def response_hash(self) -> str:
        """The response's hash, computed once per response object (the journal and the
        save both write it; a recorded response is never changed in place)."""
        if self._hashed is None or self._hashed[0] is not self.response:
            self._hashed = (self.response, response_hash(self.response))
        return self._hashed[1]


@dataclass(frozen=True)
class Replays:
    """How often a cassette had been asked and had played each key at one moment
    (``Cassette.replays``): ``retract`` goes back to it, so a rerun replays it all again."""

    played: dict[str, int]
    occurrences: dict[str, int]
    recorded: int = 0
    """How many recordings the object had made then: ``retract`` takes back only later ones
    (a session-wide cassette keeps what the tests before the rerun one recorded)."""
    replaced: int = 0
    """How many older interactions its ``record`` saves had dropped then (``Store.retract``)."""


SECRETS_FIELD = "secrets_masked"
"""A journal line's list of the secrets its process masked in it (a recovery sets it aside)."""


@dataclass
class CassetteStats:
    """What happened in this run: the numbers behind the pytest summary."""

    replayed: int = 0
    recorded: int = 0
    missed: int = 0
    unused: int = 0
    tokens_replayed: int = 0
    interactions: int = 0
    tokens_unknown: int = 0  # replayed model calls whose provider reported no usage


class Cassette:
    """Recordings of a program's LLM calls in one file, replayed in any order.

    Each key holds a FIFO of occurrences: the n-th identical request in a run gets the
    n-th recording, so ``asyncio.gather``, threads and parallel tool calls replay
    correctly without matching on call order.
    """

    def __init__(
        self,
        path: str | PathLike[str],
        *,
        mode: RecordMode | str | None = None,
        format: str | None = None,
        allow_playback_repeats: bool = False,
        normalizers: Iterable[Normalizer] = (),
        ignore: Iterable[str] = (),
        record_timing: bool = False,
        redact_patterns: Iterable[str] = (),
        allow_secrets: Iterable[str] = (),
        redact_env: Iterable[str] = (),
        **options: Any,
    ) -> None:
        self.path = Path(path)
        _check_options(options)
        self.options: dict[str, Any] = dict(options)
        """Integration options (e.g. LangChain's ``replay_tools``), kept for integrations to read."""
        self.mode = resolve_mode(mode)
        self.mode_argument = (
            RecordMode.parse(mode)
            if mode is not None and current_policy().override is None
            else None
        )
        """The mode passed as ``mode=`` when it decided ``mode`` (it beats ``CHAINCASSETTE_MODE``):
        a miss then says to change the argument, not the variable."""
        self.opened_by = "Cassette"
        """The call the program gave the path and options to (``use_cassette``, a wrapper):
        where a miss tells it to pass an option."""
        self.format = storage.detect_format(self.path, format)
        self.allow_playback_repeats = allow_playback_repeats
        self.record_timing = record_timing
        redact_patterns = tuple(redact_patterns)
        self._pipeline_args = (tuple(normalizers), tuple(ignore), redact_patterns)
        self.pipeline = build_pipeline(*self._pipeline_args)
        self.redactor = Redactor(redact_patterns, allow=allow_secrets, env_names=redact_env)
        self._keys = RequestKeys(self.pipeline)
        self._states: dict[str, Any] = {}
        self._lock = threading.RLock()
        self._loaded = False
        self._file_existed = False
        self._interactions: list[Interaction] = []
        self._by_key: dict[str, list[Interaction]] = {}
        self._older_rules: set[int] = set()
        """Versions of the key rules, older than this chaincassette's, that keyed recordings
        of this cassette: a request they answer is looked up by them too (``begin``)."""
        self._rekeyed_older = False
        self._played: dict[str, int] = {}
        self._unsaved: list[Interaction] = []
        self._store = Store(self.path, self.format, self.mode.value)
        self._journal_warned = False
        self._recorded_trace: list[dict[str, Any]] | None = None
        self._recorded_trace_digest: str | None = None
        self._read_recorded_trace: Callable[[], list[dict[str, Any]] | None] | None = None
        self._new_trace: list[dict[str, Any]] | None = None
        self._trace_parts: dict[str | None, list[dict[str, Any]]] = {}
        self._trace_dirty = False
        self._recorded_with: dict[str, str] = {}
        self._stats = CassetteStats()
        self._occurrences: dict[str, int] = {}
        self.record_order = RecordOrder(self._lock)
        """Recordings of one key are stored in the order they were looked up (see ``call``)."""
        self.record_clock = RecordClock()
        """When this run's live calls began and completed among each other (``order``)."""
        self.replay_order = ReplayOrder(self._interactions)  # the very list, never a closure
        """Which recordings are in flight in this run, so hits keep their order (``order``)."""
        self.open_streams: set[Any] = set()
        """Streams being recorded now (``streams.StreamRecording``), flushed when a block ends."""
        self.cancellations = cancellation.Pending()
        """Live calls the program cancelled, held until the run shows it went on past them."""
        self.in_block = 0
        """How many ``use_cassette`` blocks have this cassette open (they save it on exit)."""
        self.last_error = ""
        """What the last failed save raised (the save at exit does not say it twice)."""
        self.misses: list[Exception] = []
        """Every ``CassetteMiss`` raised in this run, even those the program caught."""
        self.trace_divergence: str | None = None
        """Where this replay's trace first left the recorded one (set by integrations)."""

    def __repr__(self) -> str:
        return f"Cassette({str(self.path)!r}, mode={self.mode.value!r})"

    def state(self, name: str, make: Callable[[], T]) -> T:
        """What an integration remembers for this cassette (``name``: its own), made by
        ``make()`` on first use: state that makes replay fast goes with the cassette. A
        ``retract`` makes it afresh: what it remembers may be of the recordings taken back."""
        found = self._states.get(name)
        if found is None:
            with self._lock:
                found = self._states.setdefault(name, make())
        return found

    # -- loading -------------------------------------------------------------------------

    def load(self) -> None:
        """Read the file now (it is otherwise read on first use), with what journals of
        processes that died before saving hold applied as their runs meant it
        (``chaincassette.recovery``); each journal recovered or set aside is one warning."""
        if self._loaded:  # set last, under the lock: a loaded cassette needs no lock here
            return
        with self._lock:
            if self._loaded:
                return
            if self.mode is RecordMode.OFF:
                self._loaded = True
                return
            opened = self._store.open(self._scan, self._mask)
            document = opened.document
            self._file_existed = opened.existed
            if document is not None:
                self._recorded_with = document.recorded_with
                self._recorded_trace = document.trace
                self._recorded_trace_digest = document.trace_digest
                self._read_recorded_trace = document.deferred_trace
                if self.mode is not RecordMode.RECORD:  # record mode replays nothing
                    for plain in document.interactions:
                        self._add(_interaction(plain))
            self._loaded = True
        for line in opened.lines:
            warnings.warn(line, JournalWarning, stacklevel=3)

    def _findings(self, interactions: list[dict[str, Any]]) -> list[Any]:
        """Secrets in plain interactions (journaled ones, about to be written)."""
        scanned: list[tuple[Any, str, bool]] = []
        for index, plain in enumerate(interactions):
            where = f"journal[{index}]"
            scanned.append((plain.get("request"), f"{where}.request", True))
            scanned.append((plain.get("meta") or {}, f"{where}.meta", True))
            scanned.append((plain.get("response"), f"{where}.response", False))
        return self.redactor.find_all(scanned)

    def _scan(self, interactions: list[dict[str, Any]]) -> list[str]:
        """Secrets in a journal about to be recovered, as ``kind at path`` text: those it
        holds, and those its process masked when it journaled them."""
        marked = [
            f"{kind} (journal[{index}], masked)"
            for index, plain in enumerate(interactions)
            for kind in plain.get(SECRETS_FIELD) or []
        ]
        return marked + [f"{f.kind} at {f.path}" for f in self._findings(interactions)]

    def _mask(self, plain: dict[str, Any]) -> dict[str, Any]:
        """A journaled interaction with every secret masked (a refused one is kept so)."""
        masked = dict(plain)
        for part in ("request", "response", "meta"):
            if part in masked:
                masked[part] = self.redactor.redact_response(masked[part])
        masked["response_hash"] = response_hash(masked.get("response"))
        return masked

    def _add(self, interaction: Interaction) -> None:
        self._interactions.append(interaction)
        self._by_key.setdefault(interaction.key, []).append(interaction)
        if interaction.rules != keyrules.KEY_RULES_VERSION:
            self._older_rules.add(interaction.rules)

    @property
    def replaying(self) -> bool:
        """True when this cassette never calls the live model."""
        self.load()
        return self.mode is RecordMode.REPLAY or (
            self.mode is RecordMode.ONCE and self._file_existed
        )

    @property
    def recording(self) -> bool:
        """True when a request without a recording goes to the live model and is recorded."""
        self.load()
        if self.mode is RecordMode.ONCE:
            return not self._file_existed
        return self.mode in (RecordMode.NEW_EPISODES, RecordMode.RECORD)

    @property
    def interactions(self) -> list[Interaction]:
        """Copies of the recorded interactions (the caller's own to change)."""
        self.load()
        with self._lock:
            return [_copied(interaction) for interaction in self._interactions]

    def recorded_metas(self) -> list[dict[str, Any]]:
        """Copies of each interaction's meta (what an integration looks up in a cassette,
        without copying its requests and responses)."""
        self.load()
        with self._lock:
            return [fresh_copy(interaction.meta) for interaction in self._interactions]

    @property
    def recorded_with(self) -> dict[str, str]:
        self.load()
        return dict(self._recorded_with)

    # -- keys and calls --------------------------------------------------------------------

    def normalize(self, request: dict[str, Any]) -> dict[str, Any]:
        """``request`` after the normalization pipeline (what the key is computed from)."""
        return normalize(fresh_copy(request), self.pipeline)

    def key_for(self, request: dict[str, Any]) -> str:
        return key_of(self.normalize(request))

    def normalized_under(self, request: dict[str, Any], rules: int) -> dict[str, Any]:
        """``request`` through this cassette's pipeline as key rules ``rules`` built it."""
        pipeline = build_pipeline(*self._pipeline_args, rules=rules)
        return normalize(fresh_copy(request), pipeline)

    def begin(
        self,
        request: dict[str, Any],
        *,
        meta: dict[str, Any] | None = None,
        autosave: bool = False,
        earlier: Earlier | None = None,
    ) -> Call:
        """Start a call for ``request``: a hit, or a miss to answer live and record.

        Raises ``CassetteMiss`` when no recording may be made (mode ``replay``). ``meta``
        is stored with a recording; ``autosave`` writes the file after it unless a
        ``use_cassette`` block has this cassette open (it saves on exit). ``earlier(rules)``
        gives the request as an integration built it under older key rules (``None``: as
        now), so that recordings those rules keyed still answer it.
        """
        normalized, key = self._keys.keyed(request)
        if self.mode is RecordMode.OFF:
            with self._lock:
                occurrence = self._occurrences[key] = self._occurrences.get(key, 0) + 1
            return Call(self, key, normalized, occurrence, recording=False, meta=meta)
        self.load()
        with self._lock:
            occurrence = self._occurrences.get(key, 0) + 1
            recorded = self._by_key.get(key)
            played = self._played.get(key, 0)
            found = self._next_recording(key, (meta or {}).get(BRANCH))
            if found is None and self._older_rules and self.mode is not RecordMode.RECORD:
                key, found = self._by_older_rules(request, earlier, key)
                occurrence = self._occurrences.get(key, 0) + 1
            if found is not None:
                played = self._played.get(key, 0)
                self._occurrences[key] = occurrence
                self._played[key] = played + 1
                self._stats.replayed += 1
                self._stats.tokens_replayed += int(found.meta.get("tokens") or 0)
                self._stats.tokens_unknown += unknown_usage(
                    found.request, found.response, found.meta
                )
                response = fresh_copy(found.response)
                turn = self.replay_order.began(found)  # None: keeps no order, or played again
                return Call(
                    self,
                    key,
                    normalized,
                    occurrence,
                    response=response,
                    hit=True,
                    meta=found.meta,
                    turn=turn,
                )
            if self.recording:
                self._occurrences[key] = occurrence
                ticket = self.record_order.ticket(key)
                began = self.record_clock.begin()
                return Call(
                    self,
                    key,
                    normalized,
                    occurrence,
                    meta=meta,
                    autosave=autosave,
                    ticket=ticket,
                    began=began,
                    source=request,
                )
            error = self._miss(normalized, key, played if recorded else None, request, earlier)
        raise self.report_miss(error)

    def asked_again_before_answered(self, key: str) -> bool:
        """Whether the next recording of ``key`` was asked for, in the run that recorded it,
        before the one played last had its answer (their ``order`` overlaps): a layer that
        answers a repeated call from a store of its own (LangChain's cache) replays that
        recording instead, as the recorded run, whose store was still empty, did."""
        if self.mode in (RecordMode.OFF, RecordMode.RECORD):
            return False
        self.load()
        with self._lock:
            recorded = self._by_key.get(key) or []
            played = self._played.get(key, 0)
            if not 0 < played < len(recorded):
                return False
            last, following = recorded[played - 1].meta, recorded[played].meta
        answered, asked = parse_order(last), parse_order(following)
        return (
            answered is not None
            and asked is not None
            and answered[0] == asked[0]
            and asked[1] < answered[2]
        )

    def _next_recording(self, key: str, branch: Any = None) -> Interaction | None:
        """The recording the next occurrence of ``key`` replays, if any (never in ``record``):
        the next one ``branch`` made, if one did (``order.own_recording``), moved up to be
        the next played, so that ``recorded[:played]`` stays what this run played."""
        recorded = self._by_key.get(key)
        if not recorded or self.mode is RecordMode.RECORD:
            return None
        played = self._played.get(key, 0)
        if played < len(recorded):
            later = (recorded[n].meta for n in range(played, len(recorded)))
            mine = played + own_recording(later, branch)
            recorded[played], recorded[mine] = recorded[mine], recorded[played]
            return recorded[played]
        return recorded[-1] if self.allow_playback_repeats else None

    def _by_older_rules(
        self, request: dict[str, Any], earlier: Earlier | None, key: str
    ) -> tuple[str, Interaction | None]:
        """(key, recording) of ``request`` by the older key rules that keyed recordings of
        this cassette, newest first; ``(key, None)`` when none answers it either."""
        self._rekey_unreproducible()
        for rules in sorted(self._older_rules, reverse=True):
            asked = earlier(rules) if earlier is not None else None
            older = key_of(self.normalized_under(request if asked is None else asked, rules), rules)
            found = self._next_recording(older)
            if found is not None:
                return older, found
        return key, None

    def _rekey_unreproducible(self) -> None:
        """Key, once, each recording of rules 1 whose stored key its stored request does not
        reproduce by rules 1 by what rules 1 make of that request: rules 1 are all the keys
        made before rules had versions, and those changed silently (a file of last week may
        hold a key that keyed tool order). In memory only, and never for a request holding
        a redacted value (its key was made from the value). Keys of later rules are their
        rules' exactly: one those rules do not reproduce was edited, or made by rules this
        chaincassette does not apply, and its miss says so."""
        if self._rekeyed_older:
            return
        self._rekeyed_older = True
        changed = False
        for interaction in self._interactions:
            rules = interaction.rules
            if rules != 1 or "<redacted" in canonical_json(interaction.request):
                continue
            rekeyed = key_of(interaction.request, rules)
            if rekeyed != interaction.key and interaction.key not in self._played:
                interaction.key, changed = rekeyed, True
        if changed:
            self._by_key = {}
            for interaction in self._interactions:
                self._by_key.setdefault(interaction.key, []).append(interaction)

    def report_miss(self, error: CassetteMiss) -> CassetteMiss:
        """Count a miss an integration found itself (a stream read past its recorded end)
        like one of ``begin``'s, so a test runner sees it even if the program catches it;
        returns ``error`` for the caller to raise."""
        with self._lock:
            self._stats.missed += 1
            self.misses.append(error)
        for listener in list(_miss_listeners):
            listener(self, error)
        return error

    def _miss(
        self,
        normalized: dict[str, Any],
        key: str,
        played: int | None,
        asked: dict[str, Any] | None = None,
        earlier: Earlier | None = None,
    ) -> CassetteMiss:
        """The miss report; it holds copies (the normalized request shares parts with what
        this cassette remembers, and a program may change what it is handed), redacted as
        the cassette stores one: the report is printed, and compared with stored copies. A
        recording made by older key rules is compared with what those rules make of ``asked``."""
        request = self.redactor.redact(normalized)  # a copy
        if not self._file_existed and not self._interactions:
            return miss.missing_file(
                self.path, self.mode, request, key, argument=self.mode_argument
            )
        if played is not None:
            return miss.exhausted(
                self.path,
                self.mode,
                request,
                key,
                played,
                argument=self.mode_argument,
                opened_by=self.opened_by,
            )
        recorded = [(i, x.request, x.meta) for i, x in enumerate(self._interactions)]
        played_indexes = set(range(len(recorded))) - set(self.unused_interactions())

        def under(rules: int) -> dict[str, Any]:
            before = earlier(rules) if earlier is not None and asked is not None else None
            source = before if before is not None else asked if asked is not None else normalized
            return self.redactor.redact(self.normalized_under(source, rules))

        return miss.no_match(
            self.path,
            self.mode,
            request,
            key,
            recorded,
            played_indexes,
            under=under,
            argument=self.mode_argument,
            opened_by=self.opened_by,
        )

    def keep(
        self,
        key: str,
        request: dict[str, Any],
        response: Any,
        meta: dict[str, Any],
        *,
        scan: RecordingScan | None = None,
    ) -> None:
        """Store a recording of ``key`` (``Call.record``: ``response`` is already a fresh copy,
        masked by ``scan``, which redacts the request and scans the response with what it read)."""
        info: dict[str, Any] = {"recorded": today()}
        if request.get("model"):
            info["model"] = request["model"]
        tokens = count_tokens(response)
        if tokens:
            info["tokens"] = tokens
        for name, value in meta.items():
            if value is not None and (name != "duration_ms" or self.record_timing):
                info[name] = value
        scanning = RecordingScan(self.redactor) if scan is None else scan
        stored_request, stored_info, found = scanning.stored(request, info, response)
        interaction = Interaction(key, stored_request, response, stored_info, new=True)
        interaction.secrets = [f"{f.kind} at {f.path}" for f in found]
        interaction.response_text = scanning.text_of(response)
        with self._lock:
            self._add(interaction)
            self._played[key] = self._played.get(key, 0) + 1
            self._unsaved.append(interaction)
            self._stats.recorded += 1
            _unsaved.add(self)
            self._journal_append(interaction)

    def held_cancelled(self) -> None:
        """A cancelled call is held (``cancellations``): the exit decides it if nothing else
        does, and the recordings of its key that wait for it are then kept."""
        _unsaved.add(self)

    def settle_cancellations(self, keep: bool) -> None:
        """Keep (or drop) every cancelled call still held: the run showed which they were
        (a block ended); a cassette left with nothing to save is no longer kept for the exit."""
        self.cancellations.settle_all(keep)
        with self._lock:
            if not self.dirty and not len(self.cancellations):
                _unsaved.discard(self)

    def flush_open_streams(self) -> None:
        """Keep every stream still being recorded as the incomplete prefix it has so far."""
        for recording in list(self.open_streams):
            recording.finish(False)

    # -- traces ----------------------------------------------------------------------------

    @property
    def recorded_trace(self) -> list[dict[str, Any]] | None:
        """A copy of the trace stored in the file (the run tree of the recording run)."""
        recorded = self._stored_trace()
        return None if recorded is None else fresh_copy(recorded)

    def _stored_trace(self) -> list[dict[str, Any]] | None:
        self.load()
        with self._lock:
            if self._read_recorded_trace is not None:
                self._recorded_trace = self._read_recorded_trace()
                self._read_recorded_trace = None
            return self._recorded_trace

    def replays_recorded_trace(self, trace: list[dict[str, Any]]) -> bool:
        """Whether ``trace`` is the stored one, by its digest: a replay that took the
        recorded path never reads the stored trace."""
        self.load()
        digest = self._recorded_trace_digest
        return digest is not None and digest == storage.trace_digest(trace)

    def recorded_trace_of(self, source: str) -> list[dict[str, Any]] | None:
        """A copy of the part of the stored trace that the integration ``source`` captured."""
        recorded = self._stored_trace()
        if recorded is None:
            return None
        if any("source" in node for node in recorded):  # two frameworks: each tags its part
            recorded = [node for node in recorded if node.get("source") == source]
        return fresh_copy(recorded) or None

    @property
    def trace(self) -> list[dict[str, Any]] | None:
        """The trace captured in this run, if an integration captured one."""
        return self._new_trace

    def set_trace(
        self, trace: list[dict[str, Any]], *, source: str | None = None, copy: bool = True
    ) -> None:
        """Keep this run's trace (``source``: the integration that captured it); it is
        written when this run recorded something.

        A program using two frameworks in one cassette gets one trace holding both parts,
        each node tagged with its source and numbered apart, instead of the last one winning.

        ``copy=False`` is for a capture that built ``trace`` for this call and never touches
        it again: it is kept as it is, and proved storable only when it is written (a
        replay, which writes nothing, then skips a round trip as long as the run).
        """
        kept = json_copy(trace, what="the trace") if copy else trace
        with self._lock:
            self._trace_parts[source] = kept
            if len(self._trace_parts) == 1:
                self._new_trace = kept  # parts are never changed: merging builds anew
            else:
                self._new_trace = _merge_trace_parts(self._trace_parts)
            self._trace_dirty = True

    # -- statistics ------------------------------------------------------------------------

    @property
    def stats(self) -> CassetteStats:
        self.load()
        with self._lock:
            return CassetteStats(
                replayed=self._stats.replayed,
                recorded=self._stats.recorded,
                missed=self._stats.missed,
                unused=len(self.unused_interactions()),
                tokens_replayed=self._stats.tokens_replayed,
                interactions=len(self._interactions),
                tokens_unknown=self._stats.tokens_unknown,
            )

    def unused_interactions(self) -> list[int]:
        """Indexes of interactions loaded from the file that this run never played."""
        self.load()
        with self._lock:
            played = {
                id(interaction)
                for key, count in self._played.items()
                for interaction in self._by_key.get(key, [])[:count]
            }
            return [
                index
                for index, interaction in enumerate(self._interactions)
                if id(interaction) not in played and not interaction.new
            ]

    # -- saving ----------------------------------------------------------------------------

    @property
    def dirty(self) -> bool:
        """Whether ``save`` would write: something was recorded in this run."""
        return bool(self._unsaved) or (self._trace_dirty and self._stats.recorded > 0)

    def save(self) -> bool:
        """Write new recordings, merged with whatever another process wrote meanwhile.

        Writes nothing when nothing changed. Returns whether the file was written.
        """
        with self._lock:
            if not self._loaded or not self.dirty or self.mode is RecordMode.OFF:
                self._trace_dirty = False
                return False
            refused = current_policy().refuse_writes
            if refused:
                raise CassetteWriteError(self.path, f"writing cassettes is refused: {refused}")
            unsaved = list(self._unsaved)
            replace_trace, trace = self._trace_to_write()
            self._check_secrets(unsaved, trace if replace_trace else None)

            def build(
                interactions: list[dict[str, Any]], on_disk: storage.CassetteDocument | None
            ) -> storage.CassetteDocument:
                kept = trace if replace_trace else (on_disk.trace if on_disk else None)
                return storage.CassetteDocument(
                    interactions=interactions, recorded_with=recorded_with(), trace=kept
                )

            try:
                outcome = self._store.save([i.to_plain() for i in unsaved], build)
            except CassetteError as error:
                raise self._not_written(error, unsaved) from None
            # keep() waits for this lock: everything unsaved went into this save
            self._unsaved = self._unsaved[len(unsaved) :]
            self._store.saved_all()
            if not len(self.cancellations):  # one held is still the exit's to decide
                _unsaved.discard(self)
            self._trace_dirty = False
        if outcome.conflicts:
            line = store.conflict_line(str(self.path), outcome.conflicts, self._store.run)
            warnings.warn(line, JournalWarning, stacklevel=2)
        return True

    def _trace_to_write(self) -> tuple[bool, list[dict[str, Any]] | None]:
        """(whether this save replaces the file's trace, the trace it writes, redacted like
        requests): ``record`` mode always does (its recordings replace the old ones)."""
        if self.mode is not RecordMode.RECORD and not self._trace_dirty:
            return False, None
        trace = self._new_trace
        if trace is None:
            return True, None
        return True, self.redactor.redact(_storable_trace(self.path, trace))

    def _not_written(self, error: CassetteError, unsaved: list[Interaction]) -> CassetteError:
        """The error a failed save raises: where the recordings it could not write are.

        Those safe in the journal are the next open's (no second report at exit); those
        only in memory keep this cassette in the save at exit, which says so if it fails."""
        memory = sum(1 for i in unsaved if not i.journaled)
        if not memory:
            _unsaved.discard(self)
        if type(error) is CassetteWriteError:
            where = self._store.whereabouts(len(unsaved) - memory, memory)
            error = CassetteWriteError(self.path, error.problem, whereabouts=where)
        self.last_error = str(error)
        return error

    def adopt_set_aside(self, *, redact_secrets: bool = False) -> int:
        """Write the journals set aside for this cassette after what it holds, secrets
        masked with ``redact_secrets`` (else refused); returns how many recordings were
        written. What ``chaincassette journal --finalize`` does."""
        self.load()

        def check(interactions: list[dict[str, Any]]) -> None:
            findings = self._findings(interactions)
            if findings:
                raise CassetteSecretError(self.path, findings)

        with self._lock:
            return self._store.adopt(check, self._mask if redact_secrets else None)

    def memory_only(self) -> int:
        """Recordings not in the file whose journal could not be written either."""
        with self._lock:
            return sum(1 for i in self._unsaved if not i.journaled)

    def loss_report(self) -> str | None:
        """The line a process that ends now prints for the recordings it loses (those
        neither the cassette nor the journal holds), or ``None``."""
        lost = self.memory_only()
        if not lost:
            return None
        calls = f"{lost} recorded call{'s' if lost != 1 else ''}"
        if self._store.journal_error is None:  # never journaled: writing is refused
            return (
                f"chaincassette: {calls} of {self.path} not kept: writing cassettes is "
                f"refused ({current_policy().refuse_writes or 'by the runner'})"
            )
        return (
            f"chaincassette: LOST {calls} of {self.path}: neither the cassette nor its journal "
            f"could be written ({self._store.journal_error}). What to do: make room on that "
            f"disk or make {self.path.parent} writable (journals are kept in "
            f"{statedir.state_dir()}; CHAINCASSETTE_STATE_DIR moves them to another disk), "
            "then record them again"
        )

    def _check_secrets(self, unsaved: list[Interaction], trace: Any) -> None:
        """Refuse to write a secret that survived redaction (only what this run adds is new).

        The journal is then set aside with the secrets masked: nothing is left in plain
        text on disk, and the next run's open reports it instead of merging it."""
        first = len(self._interactions) - len(self._unsaved)
        scanned: list[tuple[Any, str, bool]] = []
        for offset, interaction in enumerate(unsaved):
            prefix = f"interactions[{first + offset}]"
            scanned.append((interaction.request, f"{prefix}.request", True))
            scanned.append((interaction.meta, f"{prefix}.meta", True))
            scanned.append((interaction.response, f"{prefix}.response", False))
        if trace is not None:
            scanned.append((trace, "trace", False))
        findings = self.redactor.find_all(scanned)
        if not findings:
            return
        aside = self._store.set_aside_refused(
            [f"{f.kind} at {f.path}" for f in findings], self._mask
        )
        if all(i.journaled for i in unsaved):
            _unsaved.discard(self)  # reported to the caller; the journal keeps it, masked
        raise CassetteSecretError(self.path, findings, aside=aside)

    def _journal_append(self, interaction: Interaction) -> None:
        """Write-ahead: the recording survives this process from now on (masked, when the
        save will refuse its response)."""
        plain = interaction.to_plain()
        text, interaction.response_text = interaction.response_text, None  # needed once
        if interaction.secrets:
            plain, text = {**self._mask(plain), SECRETS_FIELD: interaction.secrets}, None
        if self._store.append(plain, response_text=text):
            interaction.journaled = True
            return
        if self._store.journal_error is not None and not self._journal_warned:
            self._journal_warned = True
            warnings.warn(
                f"chaincassette: cannot write the journal of {self.path}: "
                f"{self._store.journal_error}; its recordings stay in memory only until the "
                "cassette is saved (if that fails too, this process says how many are lost "
                "before it exits)",
                JournalWarning,
                stacklevel=5,
            )

    @property
    def recordings(self) -> int:
        """How many calls this object recorded so far (the file is not read)."""
        return self._stats.recorded

    def replays(self) -> Replays:
        """What this object was asked, played and recorded so far, for ``retract(to=...)``."""
        with self._lock:
            recorded = sum(1 for i in self._interactions if i.new)
            return Replays(
                dict(self._played), dict(self._occurrences), recorded, self._store.replaced
            )

    def retract(self, to: Replays | None = None) -> int:
        """Take back every recording this object made: out of memory, its journal and the
        file (a file it created and left empty goes); returns how many. For a test runner
        that reruns a failed test: the rerun records anew, as the failed attempt did, and
        the replay serves the passing attempt's answers. ``to``: ``replays()`` from before
        the attempt: only the recordings made since are taken back and its replays are
        undone too, so an object that outlives the attempt replays them to the rerun again.
        What integrations remember for it (``state``) starts afresh once recordings went."""
        with self._lock:
            mine = [i for i in self._interactions if i.new][to.recorded if to else 0 :]
            if to is not None:
                for counts, then in (
                    (self._played, to.played),
                    (self._occurrences, to.occurrences),
                ):
                    counts.clear()
                    counts.update(then)
            if not mine:
                return 0
            self._take_out(mine, to.replaced if to else 0)
            for key in (i.key for i in mine if to is None):
                self._played[key] = max(0, self._played.get(key, 0) - 1)
                self._occurrences[key] = max(0, self._occurrences.get(key, 0) - 1)
            self._stats.recorded = max(0, self._stats.recorded - len(mine))
            if not any(i.new for i in self._interactions):
                self._new_trace, self._trace_parts = None, {}
            self._states = {}
            return len(mine)

    def _take_out(self, mine: list[Interaction], replaced: int) -> None:
        """``retract``'s recordings out of memory, the journal and the file (under the lock);
        ``replaced``: how many of the older interactions its store dropped stay dropped."""
        taken = {id(i) for i in mine}
        waiting = {id(i) for i in self._unsaved}
        saved = [i.to_plain() for i in mine if id(i) not in waiting]
        self._keep_unsaved([i for i in self._unsaved if id(i) not in taken])
        self._store.retract(saved, created=not self._file_existed, since=replaced)
        self._interactions[:] = [i for i in self._interactions if id(i) not in taken]
        self._by_key = {}
        for interaction in self._interactions:
            self._by_key.setdefault(interaction.key, []).append(interaction)

    def _keep_unsaved(self, kept: list[Interaction]) -> None:
        """Of the unsaved recordings, keep only ``kept``: the journal is written anew with
        them, so a crash recovers none of those taken back (under the lock)."""
        if not kept:
            self.discard_unsaved()
            return
        self._unsaved = kept
        self._store.saved_all()
        for interaction in kept:
            if interaction.journaled:
                self._journal_append(interaction)

    def discard_unsaved(self) -> int:
        """Forget this run's recordings that are not on disk, so no later save (not even the
        one at exit) writes them; returns how many there were. For a runner that refused the
        write (``--cassette-strict``) and has reported it."""
        with self._lock:
            count = len(self._unsaved)
            self._unsaved = []
            self._trace_dirty = False
            _unsaved.discard(self)
            self._store.saved_all()  # a journal left behind would be written by the next open
            return count


def given_cassette(
    cassette: Cassette | str | PathLike[str], *, mode: Any, options: dict[str, Any], owner: str
) -> Cassette:
    """The cassette a wrapper (``owner``) was given: a ``Cassette`` as it is, or a path opened
    with ``mode`` and ``options``. Both at once is refused: the options would be ignored."""
    if isinstance(cassette, Cassette):
        if mode is not None or options:
            raise TypeError(
                f"pass mode and options to Cassette(...) or a path to {owner}, not both"
            )
    else:
        cassette = Cassette(cassette, mode=mode, **options)
        cassette.opened_by = owner
    for listener in list(_open_listeners):
        listener(cassette)
    return cassette


def _copied(interaction: Interaction) -> Interaction:
    return replace(
        interaction,
        request=fresh_copy(interaction.request),
        response=fresh_copy(interaction.response),
        meta=fresh_copy(interaction.meta),
    )


def _interaction(plain: dict[str, Any]) -> Interaction:
    return Interaction(plain["key"], plain["request"], plain["response"], plain.get("meta") or {})


def _check_options(given: dict[str, Any]) -> None:
    """Reject a misspelled option instead of silently ignoring it.

    Integrations declare the options they read (``chaincassette.options``).
    """
    if not given:
        return
    known = options.known()
    unknown = sorted(set(given) - known)
    if unknown:
        expected = "mode, format, allow_playback_repeats, normalizers, ignore, record_timing, "
        expected += "redact_patterns, allow_secrets, redact_env"
        expected += "".join(f", {n}" for n in sorted(known))
        raise TypeError(
            f"Cassette() got unknown option{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))}; expected one of: {expected}"
        )


def _storable_trace(path: Path, trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The trace as it will be written (a capture handed it over unchecked: ``set_trace``)."""
    try:
        copy: list[dict[str, Any]] = json_copy(trace, what="the trace")
    except TypeError as exc:
        raise CassetteWriteError(path, str(exc)) from None
    return copy


def _merge_trace_parts(
    parts: dict[str | None, list[dict[str, Any]]],
) -> list[dict[str, Any]]:
    merged: list[dict[str, Any]] = []
    offset = 0
    for source, nodes in parts.items():
        ids = [n["id"] for n in nodes if isinstance(n.get("id"), int)]
        for node in nodes:
            copy = dict(node)
            if isinstance(copy.get("id"), int):
                copy["id"] += offset
            if isinstance(copy.get("parent"), int):
                copy["parent"] += offset
            if source is not None:
                copy["source"] = source
            merged.append(copy)
        offset += max(ids, default=0)
    return merged


#: Called with (cassette, miss) for every miss of every cassette, before it is raised: a test
#: runner sees misses that the code under test catches (agent frameworks and retry wrappers do).
_miss_listeners: list[Callable[[Cassette, Exception], None]] = []


def add_miss_listener(listener: Callable[[Cassette, Exception], None]) -> None:
    _miss_listeners.append(listener)


def remove_miss_listener(listener: Callable[[Cassette, Exception], None]) -> None:
    if listener in _miss_listeners:
        _miss_listeners.remove(listener)


#: Called with each cassette a wrapper is given (``given_cassette``: ``CassetteCache``,
#: ``CassetteLLM``, the embeddings): a test runner notes the cassettes a test uses without a
#: ``use_cassette`` block, which ``chaincassette prune`` must not call orphans.
_open_listeners: list[Callable[[Cassette], None]] = []


def add_open_listener(listener: Callable[[Cassette], None]) -> None:
    _open_listeners.append(listener)


def remove_open_listener(listener: Callable[[Cassette], None]) -> None:
    if listener in _open_listeners:
        _open_listeners.remove(listener)


#: Cassettes holding recordings not yet on disk, kept alive until saved: a recording is paid
#: for, so it must not vanish with a cassette that went out of scope before the program ended.
_unsaved: set[Cassette] = set()


def unsaved_cassettes() -> list[Cassette]:
    """Cassettes holding recordings not on disk yet: those the save at exit would write."""
    return [cassette for cassette in list(_unsaved) if cassette.dirty]


@atexit.register
def _save_unsaved_at_exit() -> None:
    for cassette in list(_unsaved):
        # the run ended before it showed the program went on past them
        with contextlib.suppress(Exception):
            cassette.cancellations.settle_all(False)
        if cassette.dirty:
            try:
                cassette.save()
            except CassetteError as exc:  # at exit nobody can catch it: say it once, plainly
                if str(exc) != cassette.last_error:  # not what the failed save said already
                    print(f"chaincassette: {exc}", file=sys.stderr)
                lost = cassette.loss_report()
                if lost:
                    print(lost, file=sys.stderr)
    with contextlib.suppress(Exception):  # the state folder is tidied, never at any cost
        store.finish_process()
