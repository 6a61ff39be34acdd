"""``chaincassette run``: record or replay a whole, unmodified Python program.

The program is started as ``python -m chaincassette.cli.bootstrap MODE CASSETTE KIND
TARGET ARGS...`` with the interpreter the command named, so it runs inside
``use_cassette`` from its first import, with the integrations' hooks installed, and
the cassette is saved however the program ends. On replay, providers' API-key
variables get a placeholder when unset or empty (``chaincassette.credentials``, for the
program and every process it starts): constructors that insist on a key then work, and
nothing can reach the provider anyway. A real key that is set is left alone.

A bare ``python``/``python3``/``pythonX.Y`` (of this version) means this interpreter,
the one chaincassette is installed in, not whatever comes first on ``PATH`` (a virtual
environment nobody activated); any other interpreter is checked to import chaincassette
before the program starts.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

from .. import credentials, runs, store
from ..runs import RUN_ENV

PYTHON = re.compile(r"^(python|pypy)[0-9.]*(\.exe)?$")
BARE_PYTHON = re.compile(r"^python(?:(\d+)(?:\.(\d+))?)?(?:\.exe)?$")
RECORD_MODES = ("record", "new_episodes", "once")
RECORD_DEFAULT = "record"
"""The mode of ``--record`` without ``--mode``."""
CHECK_IMPORT = (
    "import importlib.util, sys; sys.exit(importlib.util.find_spec('chaincassette') is None)"
)
#: Interpreter options that take a value (``-W error``); others are single flags.
VALUE_OPTIONS = frozenset({"-W", "-X", "-Q"})


class NotPython(ValueError):
    """The command does not run a Python program we can wrap."""


def resolve_interpreter(name: str) -> str:
    """``sys.executable`` for a bare ``python``, ``python3`` or ``pythonX.Y`` of this version.

    Whatever ``python`` is first on ``PATH`` may lack chaincassette (a virtual environment
    that is not activated); the user means "Python", and this one has it. A path, or
    another version, is taken as asked.
    """
    match = BARE_PYTHON.match(name)
    if match is None or os.sep in name or (os.altsep and os.altsep in name):
        return name
    major, minor = match.groups()
    if major is not None and int(major) != sys.version_info[0]:
        return name
    if minor is not None and int(minor) != sys.version_info[1]:
        return name
    return sys.executable


def import_problem(interpreter: str, options: list[str], env: dict[str, str]) -> str | None:
    """Why ``interpreter`` cannot run the bootstrap, or ``None`` when it imports chaincassette."""
    if interpreter == sys.executable and not options:
        return None
    try:
        result = subprocess.run(
            [interpreter, *options, "-c", CHECK_IMPORT],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
        )
    except OSError:
        return f"cannot start {interpreter!r}"
    if result.returncode == 0:
        return None
    where = shutil.which(interpreter) or interpreter
    shown = interpreter if where == interpreter else f"{interpreter} ({where})"
    return (
        f"{shown} cannot import chaincassette, so the program cannot run inside a cassette. "
        f"chaincassette is installed for {sys.executable}: activate that virtual environment, "
        "use its python in the command, or install chaincassette for this interpreter"
    )


def split_command(command: list[str]) -> tuple[str, list[str], str, str, list[str]]:
    """(interpreter, interpreter options, kind, target, program args) of a command.

    ``python [opts] script.py args``, ``python [opts] -m module args``,
    ``python -c CODE args`` or ``script.py args`` (run with this interpreter).
    """
    if not command:
        raise NotPython("no command given after --")
    head, rest = command[0], command[1:]
    if head.endswith(".py"):
        return sys.executable, [], "path", head, rest
    if not PYTHON.match(Path(head).name):
        raise NotPython(
            f"{head!r} is not a Python interpreter or a .py script; run wraps Python programs: "
            "`python my_agent.py ...`, `python -m package ...` or `my_agent.py ...`"
        )
    head = resolve_interpreter(head)
    options: list[str] = []
    index = 0
    while index < len(rest):
        arg = rest[index]
        if arg in ("-m", "-c"):
            if index + 1 >= len(rest):
                raise NotPython(f"{arg} needs an argument")
            kind = "module" if arg == "-m" else "code"
            return head, options, kind, rest[index + 1], rest[index + 2 :]
        if arg in VALUE_OPTIONS and index + 1 < len(rest):
            options += [arg, rest[index + 1]]
            index += 2
            continue
        if arg.startswith("-") and arg != "-":
            options.append(arg)
            index += 1
            continue
        return head, options, "path", arg, rest[index + 1 :]
    raise NotPython("the command names no script, -m module or -c code to run")


def run(args: argparse.Namespace) -> int:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if bool(args.record) == bool(args.replay):
        print(
            "chaincassette run: give exactly one of --record NAME or --replay FILE", file=sys.stderr
        )
        return 2
    try:
        interpreter, options, kind, target, program_args = split_command(command)
    except NotPython as error:
        print(f"chaincassette run: {error}", file=sys.stderr)
        return 2
    if args.mode is not None and not args.record:
        print("chaincassette run: --mode goes with --record", file=sys.stderr)
        return 2
    if args.mode is not None and args.mode not in RECORD_MODES:
        print(
            f"chaincassette run: --mode must be record, new_episodes or once, not {args.mode!r}",
            file=sys.stderr,
        )
        return 2
    if args.record:
        path = Path(args.record)
        if not path.suffix:
            path = path.with_suffix(".yaml")
        mode = args.mode or RECORD_DEFAULT
    else:
        path = Path(args.replay)
        if not path.is_file():
            print(f"chaincassette run: no cassette at {path}", file=sys.stderr)
            return 2
        mode = "replay"
    env = dict(os.environ)
    # the program and every process it starts are one run: record mode keeps all they record
    own_run = RUN_ENV not in env
    run = env.setdefault(RUN_ENV, f"r{uuid.uuid4().hex[:16]}")
    if own_run:  # alive between the processes it starts; cleaned up after the last
        runs.hold(run)
    if mode == "replay":  # the program and what it starts: clients that insist on a key start
        env = credentials.placeholder_environment(env)
    problem = import_problem(interpreter, options, env)
    if problem:
        print(f"chaincassette run: {problem}", file=sys.stderr)
        return 2
    bootstrap = [interpreter, *options, "-m", "chaincassette.cli.bootstrap"]
    bootstrap += ["--quiet"] if args.quiet else []
    bootstrap += ["--hint", rerecord_command(path, command)]
    child = [*bootstrap, mode, str(path.resolve()), kind, target, *program_args]
    try:
        return subprocess.call(child, env=env)
    except FileNotFoundError:
        print(f"chaincassette run: cannot start {interpreter!r}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        if own_run:
            store.finish_run(run)


def rerecord_command(path: Path, command: list[str]) -> str:
    """For miss messages: this very command, recording, as a template for ``with_mode``."""
    again = shlex.join(command).replace("{", "{{").replace("}", "}}")
    where = str(path).replace("{", "{{").replace("}", "}}")
    return f"chaincassette run --record {where}{{mode_option}} -- {again}"


def with_mode(template: str, mode: str) -> str:
    """The command of ``template`` (``rerecord_command``) recording in ``mode``: ``--mode``
    is left out for the mode ``--record`` takes without it."""
    return template.format(mode_option="" if mode == RECORD_DEFAULT else f" --mode {mode}")
