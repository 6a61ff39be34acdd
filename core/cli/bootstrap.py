"""Runs inside the program's interpreter for ``chaincassette run``: a cassette from the first import.

``python -m chaincassette.cli.bootstrap [--quiet] [--hint HINT] MODE CASSETTE KIND TARGET
ARGS...`` where KIND is ``path`` (a script), ``module`` (``-m``) or ``code`` (``-c``) and
HINT is the command a miss message gives to record (``runner.rerecord_command``). The
program sees the ``sys.argv`` and ``sys.path`` it would have had on its own. The
cassette is saved when the program ends, also through ``sys.exit`` or an exception,
and the summary line is printed in every case (after the program's traceback, printed
as Python would without the bootstrap's frames, exit status 1; a program stopped by a
cassette miss gets the miss report once, after its own frames only, see
``program_error``): a failing run still says what it recorded. On replay a miss the
program swallowed still makes the exit status non-zero.
"""

from __future__ import annotations

import functools
import os
import runpy
import sys
from pathlib import Path
from typing import Any

from chaincassette import use_cassette
from chaincassette.modes import policy
from chaincassette.wording import counted

from .program_error import miss_in_chain, report_lines
from .runner import with_mode


def _run(kind: str, target: str, args: list[str]) -> None:
    if kind == "path":
        sys.argv = [target, *args]
        sys.path[0] = os.path.dirname(os.path.abspath(target))
        runpy.run_path(target, run_name="__main__")
    elif kind == "module":
        sys.argv = [target, *args]
        sys.path[0] = os.getcwd()
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        sys.argv = ["-c", *args]
        sys.path[0] = ""
        exec(compile(target, "<string>", "exec"), {"__name__": "__main__"})


def main(argv: list[str]) -> int:
    quiet = False
    hint = ""
    while argv and argv[0] in ("--quiet", "--hint"):
        if argv[0] == "--quiet":
            quiet, argv = True, argv[1:]
        else:
            hint, argv = argv[1], argv[2:]
    mode, path, kind, target, *args = argv
    rerecord = functools.partial(with_mode, hint) if hint else ""
    with policy(rerecord_command=rerecord), use_cassette(path, mode=mode) as cassette:
        status, raised = _executed(kind, target, args)
    return _summarized(cassette, path, status, raised, quiet)


def _executed(kind: str, target: str, args: list[str]) -> tuple[int, BaseException | None]:
    """Run the program: its exit status, and what it raised (printed as the interpreter
    would, without chaincassette's frames)."""
    try:
        _run(kind, target, args)
    except SystemExit as exit_:
        code = exit_.code
        if code is None or isinstance(code, int):
            return code or 0, None
        print(code, file=sys.stderr)
        return 1, None
    except BaseException as error:  # what the interpreter would print, then our summary
        print("\n".join(report_lines(error, _program_roots(kind, target))), file=sys.stderr)
        return (130 if isinstance(error, KeyboardInterrupt) else 1), error
    return 0, None


def _summarized(
    cassette: Any, path: str, status: int, raised: BaseException | None, quiet: bool
) -> int:
    """Say what was recorded or replayed and who caught which miss; the exit status."""
    stats = cassette.stats
    stopped_on = miss_in_chain(raised)
    caught = [m for m in cassette.misses if m is not stopped_on]
    if not quiet:
        done = "recorded" if cassette.recording else "replayed"
        why = "; the program stopped on it" if stopped_on is not None and not caught else ""
        print(
            f"chaincassette: {done} {stats.recorded if done == 'recorded' else stats.replayed} "
            f"interaction(s) ({stats.missed} missed{why}) · {path}",
            file=sys.stderr,
        )
    if cassette.recording and stats.recorded == 0 and status == 0:
        print(
            "chaincassette: nothing was recorded: no model call of this program reached an "
            "integration. Recorded are LangChain/LangGraph chat models and LLMs, LlamaIndex "
            "LLMs, the openai and anthropic SDKs, however they are built, and functions "
            "decorated with @chaincassette.recorded",
            file=sys.stderr,
        )
        status = 1
    if caught and stopped_on is not None:  # the report above is the one it stopped on
        print(
            f"chaincassette: the program stopped on a cassette miss and caught {len(caught)} "
            f"more before it; the first of those: {str(caught[0]).splitlines()[0]}",
            file=sys.stderr,
        )
    elif caught:
        misses = counted(len(caught), "cassette miss", "cassette misses")
        print(
            f"chaincassette: the program caught {misses}; its output is not the recorded one:\n"
            f"{caught[0]}",
            file=sys.stderr,
        )
    return (status or 1) if caught else status


def _program_roots(kind: str, target: str) -> tuple[Path, ...]:
    """Where the program's own code lives, when it is an installed package (``-m pkg``)."""
    if kind != "module":
        return ()
    package = sys.modules.get(target.split(".")[0])
    where = getattr(package, "__path__", None) or []
    return tuple(Path(p).resolve() for p in where)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
