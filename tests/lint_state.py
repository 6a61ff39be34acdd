"""No state held by a module, unless listed here with its reason (``make lint``).

State belongs to a ``Cassette`` (``chaincassette.memo`` is its one memo helper). Found: a
module-level name bound to a mutable container (a ``dict``/``list``/``set`` display or
comprehension, ``dict()``, ``WeakKeyDictionary()``…), a ``ContextVar``, or a function under
``functools.cache``/``lru_cache``. Names in UPPER_CASE are constants (tables that are never
changed) and ``__all__`` is the export list. Exits non-zero on state the list does not
hold, and on an entry that is gone.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONTAINERS = frozenset(
    {"dict", "list", "set", "defaultdict", "OrderedDict", "deque", "Counter", "ContextVar"}
    | {"WeakKeyDictionary", "WeakValueDictionary", "WeakSet"}
)
DISPLAYS = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)

#: (file, name): why a module holds it.
ALLOWED: dict[tuple[str, str], str] = {
    ("core/cassette.py", "_miss_listeners"): (
        "the registry of miss observers (the pytest plugin sees misses the program catches)"
    ),
    ("core/cassette.py", "_open_listeners"): (
        "the registry of observers of the cassettes wrappers are given (the pytest plugin notes "
        "what each test uses, for prune)"
    ),
    ("core/cassette.py", "_unsaved"): (
        "cassettes holding paid-for recordings not yet on disk, kept alive to be saved at exit"
    ),
    ("core/call_sites.py", "_placers"): (
        "the registry of the frameworks' placers of calls served below them (their trace captures)"
    ),
    ("integrations/sdk/retries.py", "_inside"): (
        "inside an SDK's own retry loop: a miss or the guard's refusal leaves it at once, and "
        "the back-off after a replayed attempt waits for the next one to go live"
    ),
    ("integrations/sdk/transport.py", "_handed"): (
        "the call a resource method began, for the transport to record from the wire on a miss "
        "(what the SDK reads is the wire: it is recorded where it is met)"
    ),
    ("core/context.py", "_current"): "the cassette of the innermost block, per context",
    ("core/context.py", "_entered"): "the blocks open in this context, to exit the right one",
    ("core/context.py", "_open_blocks"): (
        "the blocks open in the process: a plain thread without a context is served by them "
        "rather than going live"
    ),
    ("core/deferred.py", "_pending"): "blocks waiting for their framework to be imported",
    (
        "core/filelock.py",
        "_folders",
    ): "one thread lock per locked folder (fcntl locks are per process)",
    ("core/layers.py", "_answering"): "the one switch the layers under a live call step aside by",
    ("core/live_guard.py", "_scopes"): (
        "the live-call guards switched on, for every thread of the process (a test's worker "
        "threads too)"
    ),
    ("core/modes.py", "_policy"): (
        "the process-wide rules a runner set (the pytest plugin, chaincassette run), which beat "
        "the mode a block passes"
    ),
    ("core/options.py", "_declared"): "the registry of the options adapters declare",
    ("core/runs.py", "_process"): (
        "the liveness locks this process holds (a held flock is how other processes see it "
        "alive) and the state folders its runs recorded in, for the cleanup at their end"
    ),
    ("core/patching.py", "_registry"): "the registry of patches, for undo_all",
    ("core/registry.py", "_hooks"): "the registry of adapters",
    ("integrations/langchain/tools.py", "_capture"): (
        "where the tool being recorded in this context leaves its outcome (LangChain formats "
        "it in a function of its own, called from BaseTool.run)"
    ),
    ("integrations/langchain/tools.py", "_inside"): (
        "a tool recorded here runs live: the tools it calls are part of its outcome"
    ),
    ("integrations/langchain/trace.py", "_recorder"): (
        "the run-tree handler of this context's block, registered with LangChain's "
        "configure hook (its public way to add a handler to every run)"
    ),
    ("integrations/langchain/trace.py", "_last_model_run"): (
        "the run of the model call in progress, for a provider method that takes no run manager"
    ),
    ("integrations/llama_index/playback.py", "_pending"): (
        "the hit a decorated replay helper returns: LlamaIndex's event decorators put every "
        "keyword argument into the events, so it cannot travel as one"
    ),
    ("integrations/llama_index/trace.py", "_expected"): (
        "the key of the call whose span the provider's own endpoint is about to open"
    ),
}


def state_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    # an instance of a class the module defines is a registry object too (``runs._process``)
    classes = {s.name for s in tree.body if isinstance(s, ast.ClassDef)}
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in statement.decorator_list:
                text = ast.unparse(decorator)
                if "lru_cache" in text or text.split("(")[0].endswith("cache"):
                    found.add(statement.name)
            continue
        if isinstance(statement, ast.Assign):
            targets, value = statement.targets, statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets, value = [statement.target], statement.value
        else:
            continue
        mutable = isinstance(value, DISPLAYS)
        if isinstance(value, ast.Call):
            called = ast.unparse(value.func)
            name = called.split(".")[-1]
            mutable = name in CONTAINERS or "lru_cache" in called or called.endswith("cache")
            mutable = mutable or called in classes
        if not mutable:
            continue
        for target in targets:
            if isinstance(target, ast.Name) and not target.id.isupper() and target.id != "__all__":
                found.add(target.id)
    return found


def main() -> int:
    seen: set[tuple[str, str]] = set()
    problems = []
    for folder in ("core", "integrations"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            for name in sorted(state_names(path)):
                seen.add((relative, name))
                if (relative, name) not in ALLOWED:
                    problems.append(f"{relative}: module-level state {name!r}, not listed")
    for entry in sorted(set(ALLOWED) - seen):
        problems.append(f"{entry[0]}: {entry[1]!r} is listed but gone")
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
