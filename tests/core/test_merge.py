"""The merge a save or a recovery writes, and the ledger it keeps, as pure functions.

What ``record`` drops (only what was stale when its run began, never a live writer's),
which answers stay when two runs record one key (the run that began first, whoever
saves first), what a recovery skips (what the file holds already), and the chain of
saves that tells a journal whether its cassette changed other than by a recording.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chaincassette import journal
from chaincassette.ledger import Ledger, RunEntry, fingerprint
from chaincassette.merge import merge
from chaincassette.recovery import Opener, recover


def item(key: str, answer: str) -> dict[str, Any]:
    return {"key": key * 64, "request": {"q": key}, "response": {"a": answer}, "meta": {}}


def answers(interactions: list[dict[str, Any]]) -> list[str]:
    return [i["response"]["a"] for i in interactions]


def ledger(*entries: RunEntry) -> Ledger:
    return Ledger(Path("unused"), runs={e.run: e for e in entries})


def test_record_drops_what_was_stale_and_keeps_what_live_writers_recorded() -> None:
    old, theirs = item("a", "old"), item("b", "theirs")
    other = RunEntry("other", 1.0, "new_episodes", writers={"w-other": [fingerprint(theirs)]})
    mine = RunEntry("mine", 2.0, "record", stale=[fingerprint(old)], peers=["w-other"])
    book = ledger(other, mine)
    outcome = merge([old, theirs], [item("c", "mine")], book, "mine", "w-mine")
    assert answers(outcome.interactions) == ["theirs", "mine"] and outcome.dropped == 1
    assert mine.stale == [] and mine.writers["w-mine"] == [fingerprint(item("c", "mine"))]


def test_an_identical_rerecording_is_never_taken_for_the_stale_copy() -> None:
    old = item("a", "same")
    mine = RunEntry("mine", 1.0, "record", stale=[fingerprint(old)])
    book = ledger(mine)
    first = merge([old], [item("a", "same")], book, "mine", "w1")  # drops the old copy
    assert answers(first.interactions) == ["same"] and first.dropped == 1
    again = merge(first.interactions, [item("b", "next")], book, "mine", "w2")
    assert answers(again.interactions) == ["same", "next"] and again.dropped == 0


def test_a_key_two_runs_record_keeps_the_earlier_runs_answers_whoever_saves_first() -> None:
    for first_to_save in ("early", "late"):
        early = RunEntry("early", 1.0, "record")
        late = RunEntry("late", 2.0, "record")
        book = ledger(early, late)
        runs = {"early": item("k", "early"), "late": item("k", "late")}
        second = "late" if first_to_save == "early" else "early"
        disk = merge([], [runs[first_to_save]], book, first_to_save, f"w-{first_to_save}")
        outcome = merge(disk.interactions, [runs[second]], book, second, f"w-{second}")
        assert answers(outcome.interactions) == ["early"], first_to_save
        (conflict,) = outcome.conflicts
        assert conflict.kept == "early"


def test_the_same_runs_other_processes_add_occurrences_not_conflicts() -> None:
    run = RunEntry("run", 1.0, "record")
    book = ledger(run)
    disk = merge([], [item("k", "one")], book, "run", "worker-1")
    outcome = merge(disk.interactions, [item("k", "two")], book, "run", "worker-2")
    assert answers(outcome.interactions) == ["one", "two"] and outcome.conflicts == []


def test_finalize_skips_what_the_file_holds_already() -> None:
    saved = item("a", "saved")
    outcome = merge([saved], [saved, item("b", "new")], ledger(), None, None, skip_present=True)
    assert answers(outcome.interactions) == ["saved", "new"] and outcome.skipped == 1


def test_a_journal_its_save_wrote_in_part_is_not_applied_twice(tmp_path: Path) -> None:
    # The late run's save kept the early run's answer to k and wrote its own m; it died
    # before deleting its journal. The file changed since the journal began, and not every
    # entry is in it: the ledger says that save wrote the journal, so none of it is applied.
    early, late = RunEntry("early", 1.0, "new_episodes"), RunEntry("late", 2.0, "new_episodes")
    book = ledger(early, late)
    v1, v2 = [1, 1, 10, 1], [1, 2, 20, 2]
    first = merge([], [item("k", "early")], book, "early", "w-early").interactions
    journaled = [item("k", "late"), item("m", "late")]
    disk = merge(first, journaled, book, "late", "w-late").interactions
    orphan = tmp_path / f"dead{journal.SUFFIX}"
    book.saved(v1, v2, known=[v1], wrote=orphan.name)
    assert answers(disk) == ["early", "late"]
    header = {"journal": journal.VERSION, "run": "late", "writer": "w-late"}
    lines = [{**header, "mode": "new_episodes", "fileid": v1}]
    lines += [{"interaction": entry} for entry in journaled]
    orphan.write_text("".join(json.dumps(line) + "\n" for line in lines))
    opener = Opener("next", "new_episodes")
    result = recover("c.yaml", disk, v2, book, opener, [orphan], lambda _: [], lambda p: p)
    assert answers(result.interactions) == ["early", "late"]  # m once, k the early run's
    assert not result.changed and result.lines == []  # no rewrite, no "recovered 0 recordings"
    assert not orphan.exists()


def test_saves_alone_lead_from_a_journals_version_to_the_file_or_not() -> None:
    book = ledger()
    v1, v2, v3 = [1, 1, 10, 1], [1, 2, 20, 2], [1, 3, 30, 3]
    book.saved(None, v1, known=[None])
    book.saved(v1, v2, known=[None])
    assert book.reaches(None, v2) and book.reaches(v1, v2) and not book.reaches(v2, v1)
    assert not book.reaches(v2, None)  # deleted since: no save leads there
    book.saved(v2, v3, known=[])  # no journal needs the older versions any more
    assert book.saves == [[v2, v3]] and not book.reaches(None, v3)
    assert not book.reaches([9, 9, 9, 9], v3)  # changed by hand, then saved


def test_a_ledger_remembers_which_journal_a_save_wrote_while_a_journal_needs_it(
    tmp_path: Path,
) -> None:
    book = Ledger(tmp_path)
    v1, v2, v3 = [1, 1, 10, 1], [1, 2, 20, 2], [1, 3, 30, 3]
    book.saved(v1, v2, known=[v1], wrote="dead.journal")
    book.store()
    loaded = Ledger.load(tmp_path)
    assert loaded.wrote("dead.journal") and not loaded.wrote("other.journal")
    assert loaded.reaches(v1, v2)
    loaded.saved(v2, v3, known=[])  # that journal is gone: its save is forgotten
    assert not loaded.wrote("dead.journal")


def test_a_ledger_is_forgotten_once_no_run_recording_it_lives(tmp_path: Path) -> None:
    book = Ledger(tmp_path, runs={"a": RunEntry("a", 1.0, "record")})
    book.store()
    assert (tmp_path / "state.json").exists() and Ledger.load(tmp_path).runs.keys() == {"a"}
    book.prune(lambda run: run == "a", keep=set())
    assert book.runs.keys() == {"a"}  # alive: kept
    book.prune(lambda run: False, keep={"a"})
    assert book.runs.keys() == {"a"}  # dead, but an orphaned journal of it needs its entry
    book.prune(lambda run: False, keep=set())
    book.store()
    assert book.runs == {} and not (tmp_path / "state.json").exists()
