"""``chaincassette run``: record or replay a whole, unmodified Python program.

The program is started as ``python -m chaincassette.cli.bootstrap MODE CASSETTE KIND
TARGET ARGS...`` with the interpreter the command named, so it runs inside
``use_cassette`` from its first import, with the integrations' hooks installed, and
the cassette is saved however the program ends. On replay, providers' API-key
variables get a placeholder when unset: constructors that insist on a key then work,
and nothing can reach the provider anyway.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

PYTHON = re.compile(r"^(python|pypy)[0-9.]*(\.exe)?$")
#: Interpreter options that take a value (``-W error``); others are single flags.
VALUE_OPTIONS = frozenset({"-W", "-X", "-Q"})
PLACEHOLDER_KEY = "chaincassette-replay-placeholder"
PROVIDER_KEY_VARS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "GROQ_API_KEY",
    "MISTRAL_API_KEY",
    "COHERE_API_KEY",
    "TOGETHER_API_KEY",
    "FIREWORKS_API_KEY",
    "DEEPSEEK_API_KEY",
    "XAI_API_KEY",
)


class NotPython(ValueError):
    """The command does not run a Python program we can wrap."""


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
    if args.record:
        path = Path(args.record)
        if not path.suffix:
            path = path.with_suffix(".yaml")
        mode = args.mode or "record"
    else:
        path = Path(args.replay)
        if not path.is_file():
            print(f"chaincassette run: no cassette at {path}", file=sys.stderr)
            return 2
        mode = "replay"
    env = dict(os.environ)
    if mode == "replay":
        for name in PROVIDER_KEY_VARS:
            env.setdefault(name, PLACEHOLDER_KEY)
    bootstrap = [interpreter, *options, "-m", "chaincassette.cli.bootstrap"]
    bootstrap += ["--quiet"] if args.quiet else []
    child = [*bootstrap, mode, str(path.resolve()), kind, target, *program_args]
    try:
        return subprocess.call(child, env=env)
    except FileNotFoundError:
        print(f"chaincassette run: cannot start {interpreter!r}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
