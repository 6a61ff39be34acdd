"""Where ``current_cassette()`` is visible, and the activation-hook registry."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from chaincassette import Cassette, current_cassette, register_hook, unregister_hook, use_cassette


def test_context_manager_sets_and_restores(tmp_path: Path) -> None:
    assert current_cassette() is None
    with use_cassette(tmp_path / "a.yaml", mode="off") as outer:
        assert current_cassette() is outer
        with use_cassette(tmp_path / "b.yaml", mode="off") as inner:
            assert current_cassette() is inner
        assert current_cassette() is outer
    assert current_cassette() is None


def test_visible_in_tasks_and_copy_context_threads_not_plain_threads(tmp_path: Path) -> None:
    seen: dict[str, object] = {}

    async def task() -> None:
        seen["task"] = current_cassette()

    async def main() -> Cassette:
        async with use_cassette(tmp_path / "a.yaml", mode="off") as cassette:
            await asyncio.gather(task())
            context = contextvars.copy_context()
            with ThreadPoolExecutor(1) as pool:
                seen["copied"] = pool.submit(context.run, current_cassette).result()
            plain = threading.Thread(target=lambda: seen.__setitem__("plain", current_cassette()))
            plain.start()
            plain.join()
            return cassette

    cassette = asyncio.run(main())
    assert seen == {"task": cassette, "copied": cassette, "plain": None}


def test_decorator_for_sync_and_async(tmp_path: Path) -> None:
    @use_cassette(tmp_path / "a.yaml", mode="off")
    def sync() -> Cassette | None:
        return current_cassette()

    @use_cassette(tmp_path / "b.yaml", mode="off")
    async def asynchronous() -> Cassette | None:
        return current_cassette()

    first, second = sync(), sync()
    assert first is not None and second is not None and first is not second
    assert first.path.name == "a.yaml"
    result = asyncio.run(asynchronous())
    assert result is not None and result.path.name == "b.yaml"
    assert current_cassette() is None


def test_hooks_enter_and_exit_in_order(tmp_path: Path) -> None:
    events: list[str] = []

    @contextlib.contextmanager
    def first_hook_cm(cassette: Cassette) -> Iterator[None]:
        events.append(f"enter1 {cassette.path.name}")
        yield
        events.append("exit1")

    def first(cassette: Cassette) -> contextlib.AbstractContextManager[None]:
        return first_hook_cm(cassette)

    def second(cassette: Cassette) -> None:
        events.append("second (no context manager)")

    register_hook(first)
    register_hook(second)
    try:
        with use_cassette(tmp_path / "a.yaml", mode="off"):
            events.append("body")
    finally:
        unregister_hook(first)
        unregister_hook(second)
    assert events == ["enter1 a.yaml", "second (no context manager)", "body", "exit1"]


def test_saves_on_exit_even_when_the_body_fails(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    with pytest.raises(RuntimeError, match="boom"), use_cassette(path, mode="record") as cassette:
        cassette.begin({"kind": "chat", "prompt": "paid for"}).answer(lambda: "answer")
        raise RuntimeError("boom")
    assert (
        Cassette(path).begin({"kind": "chat", "prompt": "paid for"}).answer(lambda: None)
        == "answer"
    )


def test_cassette_object_and_options_are_exclusive(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="not both"):
        use_cassette(Cassette(tmp_path / "a.yaml"), mode="record")


def test_one_use_cassette_object_entered_by_two_tasks_at_once(tmp_path: Path) -> None:
    shared = use_cassette(tmp_path / "a.yaml", mode="off")
    inside = asyncio.Event()

    async def first() -> Cassette | None:
        async with shared as cassette:
            inside.set()
            await asyncio.sleep(0.01)
            assert current_cassette() is cassette
        return current_cassette()

    async def second() -> Cassette | None:
        await inside.wait()
        async with shared as cassette:
            await asyncio.sleep(0.05)  # still inside when the first task leaves
            assert current_cassette() is cassette
        return current_cassette()

    async def main() -> list[Cassette | None]:
        return list(await asyncio.gather(first(), second()))

    assert asyncio.run(main()) == [None, None]


def test_blocks_leave_the_context_no_larger_than_the_first_one_did(tmp_path: Path) -> None:
    """A context only grows: a variable per ``use_cassette`` object would stay in it after
    the block, one more with every test of a suite."""

    def block(name: str) -> None:
        with use_cassette(tmp_path / f"{name}.yaml", mode="off"):
            assert current_cassette() is not None

    block("first")
    settled = len(contextvars.copy_context())
    for n in range(20):
        block(f"again-{n}")
    nested = use_cassette(tmp_path / "nested.yaml", mode="off")
    with nested, nested:
        pass
    assert len(contextvars.copy_context()) == settled
    assert current_cassette() is None


def test_the_same_object_nested_exits_its_innermost_block_first(tmp_path: Path) -> None:
    shared = use_cassette(tmp_path / "a.yaml", mode="off")
    with shared as outer:
        with use_cassette(tmp_path / "b.yaml", mode="off") as other:
            with shared as inner:
                assert inner is not outer  # given a path: each block its own cassette
                assert current_cassette() is inner
            assert current_cassette() is other
        assert current_cassette() is outer
    assert current_cassette() is None


def test_a_broken_integration_is_reported_and_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from importlib import metadata

    from chaincassette import Adapter, registry

    broken = metadata.EntryPoint(
        "broken", "no_such_module_xyz:activate", registry.ENTRY_POINT_GROUP
    )
    real = metadata.entry_points

    def entry_points(**kwargs: object) -> object:
        found = list(real(**kwargs))  # type: ignore[arg-type]
        return [broken, *found] if kwargs.get("group") == registry.ENTRY_POINT_GROUP else found

    monkeypatch.setattr(registry.metadata, "entry_points", entry_points)
    monkeypatch.setattr(registry, "_entry_points_loaded", False)
    with pytest.warns(RuntimeWarning, match="cannot load integration 'broken'"):
        hooks = registry.registered_hooks()
    names = {h.name for h in hooks if isinstance(h, Adapter)}
    assert {"langchain", "llama_index"} <= names
    assert registry._entry_points_loaded is False  # tried again next time


def test_a_hook_waits_for_the_module_it_requires(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "late_framework.py").write_text("LOADED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    events: list[str] = []

    @contextlib.contextmanager
    def installed(cassette: Cassette) -> Iterator[None]:
        import late_framework  # the hook may use its framework freely: it is imported by now

        events.append(f"enter {cassette.path.name} {late_framework.LOADED}")
        yield
        events.append("exit")

    def hook(cassette: Cassette) -> contextlib.AbstractContextManager[None]:
        return installed(cassette)

    hook.requires = "late_framework"  # type: ignore[attr-defined]
    register_hook(hook)
    try:
        with use_cassette(tmp_path / "a.yaml", mode="off"):
            events.append("block starts")
            import late_framework  # the program imports its framework late

            events.append("imported")
            assert type(late_framework.__loader__).__name__ == "SourceFileLoader"
        with use_cassette(tmp_path / "b.yaml", mode="off"):  # imported now: entered at once
            events.append("second block")
    finally:
        unregister_hook(hook)
        sys.modules.pop("late_framework", None)
    assert events == [
        "block starts",
        "enter a.yaml True",
        "imported",
        "exit",
        "enter b.yaml True",
        "second block",
        "exit",
    ]
    import chaincassette.deferred as deferred

    assert deferred._WATCHER not in sys.meta_path  # nothing left waiting, nothing left installed


def test_use_cassette_imports_no_framework_the_program_does_not_use(tmp_path: Path) -> None:
    import subprocess

    script = (
        "import sys\n"
        "from chaincassette import recorded, use_cassette\n"
        "@recorded\n"
        "def ask(q):\n"
        "    return q.upper()\n"
        f"with use_cassette({str(tmp_path / 'c.yaml')!r}, mode='record'):\n"
        "    ask('hi')\n"
        "print(sorted(m for m in ('langchain_core', 'llama_index.core') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"
