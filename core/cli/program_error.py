"""What ``chaincassette run`` prints when the program it runs ends on an exception.

Python's own traceback, without the frames of the bootstrap that started the program (they
are chaincassette's, not the program's). A program stopped by a cassette miss gets the
miss report once, after only the program's own frames: the frames of LangGraph,
LangChain and chaincassette between the program and the miss say nothing about it (the
miss is not a crash; it says what changed and how to record it), and ``--tb`` long
tracebacks are one ``python my_agent.py`` away.
"""

from __future__ import annotations

import importlib.util
import sysconfig
import traceback
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

from ..errors import CassetteMiss

_PACKAGE = Path(__file__).resolve().parents[1]
"""The installed ``chaincassette`` package (``core/``); ``chaincassette.integrations`` beside it."""


def _chaincassette_roots() -> tuple[Path, ...]:
    spec = importlib.util.find_spec("chaincassette.integrations")
    found = list(spec.submodule_search_locations or []) if spec is not None else []
    return (_PACKAGE, *(Path(p).resolve() for p in found))


def _library_roots() -> tuple[Path, ...]:
    paths = sysconfig.get_paths()
    names = ("stdlib", "platstdlib", "purelib", "platlib")
    return tuple(dict.fromkeys(Path(paths[n]).resolve() for n in names if n in paths))


def _interpreter_internal(filename: str) -> bool:
    """``<frozen runpy>`` and the like (``<string>`` is the program's ``-c`` code)."""
    return filename.startswith("<") and filename != "<string>"


def _under(filename: str, roots: Iterable[Path]) -> bool:
    if _interpreter_internal(filename):
        return False
    try:
        path = Path(filename).resolve()
    except (OSError, ValueError):
        return False
    return any(path.is_relative_to(root) for root in roots)


def miss_in_chain(error: BaseException | None) -> CassetteMiss | None:
    """The ``CassetteMiss`` that ``error`` is, or was raised from."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, CassetteMiss):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def _without_bootstrap(tb: TracebackType | None) -> TracebackType | None:
    """The traceback from the first frame that is not chaincassette's or the runpy's."""
    roots = (*_chaincassette_roots(), *_library_roots())
    while tb is not None and (
        _interpreter_internal(tb.tb_frame.f_code.co_filename)
        or _under(tb.tb_frame.f_code.co_filename, roots)
    ):
        tb = tb.tb_next
    return tb


def _program_frames(
    tb: TracebackType | None, program_roots: tuple[Path, ...]
) -> list[traceback.FrameSummary]:
    """The frames of the program itself: not chaincassette's, the standard library's or an
    installed package's (unless the program is one: ``program_roots``)."""
    skipped = (*_chaincassette_roots(), *_library_roots())
    frames = []
    for summary in traceback.extract_tb(tb):
        if _interpreter_internal(summary.filename):
            continue
        if _under(summary.filename, program_roots) or not _under(summary.filename, skipped):
            frames.append(summary)
    return frames


def report_lines(error: BaseException, program_roots: tuple[Path, ...] = ()) -> list[str]:
    """The lines to print for the exception the program ended on."""
    miss = miss_in_chain(error)
    if miss is None:
        shown = _without_bootstrap(error.__traceback__)
        text = traceback.TracebackException(type(error), error, shown).format()
        return "".join(text).rstrip("\n").splitlines()
    frames = _program_frames(error.__traceback__, program_roots)
    lines = []
    if frames:
        lines.append("Traceback (the program's own frames; the libraries' are left out):")
        listed = "".join(traceback.format_list(frames)).rstrip("\n").splitlines()
        lines += [line for line in listed if line.strip(" ^~")]  # no column markers
    if error is not miss:
        lines += "".join(traceback.format_exception_only(type(error), error)).splitlines()
        lines.append("raised from this cassette miss:")
    lines += f"CassetteMiss: {miss}".splitlines()
    lines += [str(note) for note in getattr(miss, "__notes__", ())]
    return lines
