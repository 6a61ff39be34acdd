"""What happened to cassettes in this run, as plain data: xdist workers send their
``SessionState`` to the controller as JSON, where ``merge`` folds it in."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class CassetteUse:
    """One test's use of one cassette."""

    nodeid: str
    path: str
    """The cassette file, relative to rootdir when it is inside it (POSIX separators)."""
    mode: str
    replayed: int = 0
    recorded: int = 0
    missed: int = 0
    unused: int = 0
    tokens_replayed: int = 0
    tokens_unknown: int = 0
    """Replayed model calls whose provider reported no usage (not counted as 0 tokens)."""
    interactions: int = 0
    unused_indexes: list[int] = field(default_factory=list)
    written: bool = False
    blocked_write: bool = False
    """Strict mode kept the cassette from being written."""
    clean: bool = False
    """The test passed (or failed only on strict's unplayed interactions) with no miss and no
    refused write: its ``unused`` can be trusted, so ``chaincassette prune`` acts on it."""
    refused: str = ""
    """The mode the test asked for but CI refused (it replayed instead)."""

    @classmethod
    def from_plain(cls, plain: dict[str, Any]) -> CassetteUse:
        known = {k: v for k, v in plain.items() if k in cls.__dataclass_fields__}
        return cls(**known)


@dataclass
class SessionState:
    """Everything the end-of-run report and the usage record are computed from."""

    uses: list[CassetteUse] = field(default_factory=list)
    expected: dict[str, list[str]] = field(default_factory=dict)
    """For each fully collected test module: its cassette folder → the cassettes its tests use."""
    live: dict[str, int] = field(default_factory=dict)
    """Tests of a recording run whose model calls went live outside every cassette (and were
    not recorded) → how many calls."""
    shared: dict[str, list[str]] = field(default_factory=dict)
    """Of a fully collected run: each cassette several tests name → their node ids."""
    unjudged: dict[str, list[str]] = field(default_factory=dict)
    """The cassettes tests of modules this run did not collect use too → those tests, as
    far as the last usage record knows them: no unplayed interaction of theirs is judged."""

    def add(self, use: CassetteUse) -> None:
        self.uses.append(use)

    def expect(self, module_dir: str, cassette: str) -> None:
        known = self.expected.setdefault(module_dir, [])
        if cassette not in known:
            known.append(cassette)

    def to_plain(self) -> dict[str, Any]:
        return {
            "uses": [asdict(u) for u in self.uses],
            "expected": self.expected,
            "live": self.live,
            "shared": self.shared,
            "unjudged": self.unjudged,
        }

    def merge(self, plain: dict[str, Any]) -> None:
        """Fold in a worker's ``to_plain()``."""
        self.uses.extend(CassetteUse.from_plain(u) for u in plain.get("uses", []))
        for module_dir, cassettes in (plain.get("expected") or {}).items():
            for cassette in cassettes:
                self.expect(module_dir, cassette)
        for nodeid, calls in (plain.get("live") or {}).items():
            self.live[str(nodeid)] = self.live.get(str(nodeid), 0) + int(calls)
        for name in ("shared", "unjudged"):  # every worker collects all
            known: dict[str, list[str]] = getattr(self, name)
            for path, tests in (plain.get(name) or {}).items():
                known[path] = list(dict.fromkeys([*known.get(path, []), *tests]))
