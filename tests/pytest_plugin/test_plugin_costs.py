"""What the plugin costs a session and what it leaves behind, in real pytest runs.

A session that uses no cassette imports neither the engine nor YAML nor any framework
(the live-call guard waits until the program imports a framework, and then works); the
session's class patches are undone when it ends (an inner session leaves those of the
session around it); a finished test keeps nothing of its cassette alive.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from chaincassette import patching, use_cassette

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("langchain_core") is None, reason="needs LangChain"
)

FAKE_PROVIDER = Path(__file__).parents[1] / "langchain" / "fake_provider.py"
HEAVY = (
    "chaincassette.cassette",
    "chaincassette.context",
    "chaincassette.storage",
    "yaml",
    "langchain_core",
    "llama_index.core",
    "httpx",
    "chaincassette.integrations.langchain.boundary",
)

#: Writes, at the very end of the session, which modules the process imported.
MODULES_CONFTEST = """
import json, sys
import pytest

@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    with open("modules.json", "w") as out:
        json.dump(sorted(sys.modules), out)
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", *args)


def imported(pytester: pytest.Pytester) -> set[str]:
    return set(json.loads((pytester.path / "modules.json").read_text()))


def test_a_session_that_uses_no_cassette_imports_no_engine_yaml_or_framework(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(MODULES_CONFTEST)
    pytester.makepyfile(test_plain="def test_sum():\n    assert 1 + 1 == 2\n")
    run(pytester).assert_outcomes(passed=1)  # replay mode: the live-call guard is on
    modules = imported(pytester)
    assert "chaincassette.integrations.pytest_plugin.plugin" in modules
    assert "chaincassette.integrations.pytest_plugin.guard" in modules
    assert modules.isdisjoint(HEAVY), sorted(modules.intersection(HEAVY))
    assert not (pytester.path / ".chaincassette").exists()


def test_the_guard_waits_for_the_framework_and_then_refuses_its_live_calls(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(MODULES_CONFTEST)
    pytester.makepyfile(
        test_late="""
        def chat():
            from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
            from langchain_core.messages import AIMessage
            return GenericFakeChatModel(messages=iter([AIMessage(content="hi")])).invoke("q")

        def test_plain():
            import sys
            assert "langchain_core" not in sys.modules

        def test_imports_langchain_and_calls_a_model():
            chat()

        def test_calls_it_again():
            chat()
        """
    )
    result = run(pytester)
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*LiveCallBlocked: live chat model call (GenericFakeChatModel) outside a cassette "
            "in test test_late.py::test_imports_langchain_and_calls_a_model*",
            "*LiveCallBlocked: live chat model call (GenericFakeChatModel) outside a cassette "
            "in test test_late.py::test_calls_it_again*",
        ]
    )
    assert "chaincassette.integrations.langchain.boundary" in imported(pytester)


def test_a_swallowed_miss_is_caught_when_the_test_itself_first_imports_the_engine(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_own="""
        def test_swallows_a_miss(tmp_path):
            import sys
            assert "chaincassette.cassette" not in sys.modules
            from chaincassette import Cassette, CassetteMiss

            cassette = Cassette(tmp_path / "empty.yaml", mode="replay")
            try:
                cassette.begin({"kind": "chat", "model": "m", "messages": []})
            except CassetteMiss:
                pass  # the code under test caught it
        """
    )
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*CassetteMiss raised during the test and caught by the code under test (1 miss in all)*"]
    )


PROGRAM = """
import sys
sys.path.insert(0, {provider_dir!r})
import pytest
from langchain_core.language_models.chat_models import BaseChatModel
from fake_provider import FakeProviderChat
from chaincassette import patching

def attributes():
    classes = [BaseChatModel, FakeProviderChat, *patching.all_subclasses(BaseChatModel)]
    return {{(cls.__qualname__, name): value for cls in classes for name, value in vars(cls).items()}}

before = attributes()
code = pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--cassette-mode=record"])
after = attributes()
changed = sorted(str(key) for key in before if after.get(key) is not before[key])
print("exit", int(code), "installed", len(patching.installed()), "changed", changed)
"""

SUITE = """
import sys
sys.path.insert(0, {provider_dir!r})
from fake_provider import FakeProviderChat

def test_chat(cassette):
    assert FakeProviderChat().invoke("hello").content
    assert cassette.stats.recorded == 1
"""


def test_the_session_undoes_its_class_patches_when_it_ends(pytester: pytest.Pytester) -> None:
    provider_dir = str(FAKE_PROVIDER.parent)
    pytester.makepyfile(test_chat=SUITE.format(provider_dir=provider_dir))
    program = pytester.path / "program.py"
    program.write_text(PROGRAM.format(provider_dir=provider_dir))
    done = subprocess.run(
        [sys.executable, str(program)],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert "exit 0 installed 0 changed []" in done.stdout, done.stdout + done.stderr


def test_an_inner_session_leaves_the_patches_of_the_session_around_it(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(FAKE_PROVIDER.parent)
    from fake_provider import FakeProviderChat

    provider_dir = str(FAKE_PROVIDER.parent)
    pytester.makepyfile(test_chat=SUITE.format(provider_dir=provider_dir))
    with use_cassette(tmp_path / "outer.yaml", mode="record"):
        FakeProviderChat().invoke("hello")  # this session's patches, installed
    outer = patching.installed()
    assert outer
    pytester.runpytest_inprocess("-p", "no:randomly", "--cassette-mode=record").assert_outcomes(
        passed=1
    )
    assert patching.installed() == outer

    patching.undo_all()  # a session that starts with nothing patched ends with nothing
    pytester.runpytest_inprocess("-p", "no:randomly", "--cassette-mode=record").assert_outcomes(
        passed=1
    )
    assert patching.installed() == []


def test_inner_sessions_leave_no_patches_of_the_module_copies_they_forgot(
    pytester: pytest.Pytester,
) -> None:
    """``pytester`` forgets the modules an in-process session imported: the next one imports
    the integrations again, and the patch registry kept every forgotten copy (its
    ``Patches``, the module they hold alive) for the rest of the process."""
    import gc

    def alive() -> int:
        gc.collect()
        return sum(isinstance(o, patching.Patches) for o in gc.get_objects())

    pytester.makepyfile(test_chat=SUITE.format(provider_dir=str(FAKE_PROVIDER.parent)))
    counts = []
    for _ in range(3):
        inner = pytester.runpytest_inprocess("-p", "no:randomly", "--cassette-mode=record")
        inner.assert_outcomes(passed=1)
        counts.append(alive())
    assert counts[0] == counts[1] == counts[2], counts


def test_a_finished_test_keeps_nothing_of_its_cassette_alive(pytester: pytest.Pytester) -> None:
    provider_dir = str(FAKE_PROVIDER.parent)
    pytester.makepyfile(
        test_refs=f"""
        import gc, sys, weakref
        sys.path.insert(0, {provider_dir!r})
        from fake_provider import FakeProviderChat

        REFS = []

        def test_uses_a_cassette(cassette):
            FakeProviderChat().invoke("hello")
            REFS.append(weakref.ref(cassette))

        def test_after_it():
            gc.collect()
            assert REFS and REFS[0]() is None
        """
    )
    run(pytester, "--cassette-mode=record").assert_outcomes(passed=2)
    run(pytester).assert_outcomes(passed=2)  # replayed
