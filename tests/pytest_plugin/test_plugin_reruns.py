"""A flaky test rerun by pytest-rerunfailures (``--reruns``) while it records: the cassette
holds what the attempt that passed recorded, so its replay serves the passing answers (the
failed attempt's were kept too, and replayed first). A test that fails every attempt keeps
its last attempt's recordings, as one failing run keeps its own. The plugin never imports
pytest-rerunfailures: a rerun is a second setup of the test within one runtest protocol."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from chaincassette import Cassette

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("pytest_rerunfailures") is None
    or importlib.util.find_spec("langchain_core") is None,
    reason="needs pytest-rerunfailures and LangChain",
)

#: A scripted chat model whose answer changes at each call: the first attempt of
#: ``test_flaky`` gets "wrong" and fails, the second gets "right" and passes.
PROGRAM = """
import os
from pathlib import Path
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from chaincassette import use_cassette

STEADY = FakeListChatModel(responses=["hello"])
FLAKY = FakeListChatModel(responses=["wrong", "right", "third"])


def ask():
    assert STEADY.invoke("hi?").content == "hello"
    if os.environ.get("FLAKY"):
        assert FLAKY.invoke("question?").content == "right"


def test_flaky(cassette):
    ask()


def test_own_block():
    with use_cassette(Path(__file__).parent / "cassettes" / "own.yaml"):
        ask()
"""


def answers(path: Path) -> list[str]:
    """What the cassette's chat recordings answer, in order."""
    texts = []
    for interaction in Cassette(path, mode="replay").interactions:
        for generation in interaction.response["generations"]:
            texts.append(generation["message"]["data"]["content"])
    return texts


def outcomes(result: pytest.RunResult) -> dict[str, int]:
    return {k: v for k, v in result.parseoutcomes().items() if k != "warnings"}


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_agent=PROGRAM)
    return pytester


@pytest.mark.parametrize("test", ["test_flaky", "test_own_block"])
@pytest.mark.parametrize("mode", ["record", "once", "new_episodes"])
def test_a_rerun_keeps_what_the_passing_attempt_recorded(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: str, test: str
) -> None:
    """``record``, ``once`` on a test with no cassette yet, ``new_episodes`` on a cassette
    recorded before: the first attempt's answer is gone, the earlier recording stays."""
    own = test == "test_own_block"
    path = project.path / "cassettes" / ("own.yaml" if own else "test_agent/test_flaky.yaml")
    run = ["-p", "no:randomly", f"test_agent.py::{test}"]
    if mode == "new_episodes":  # the cassette holds the steady question already
        project.runpytest(*run, "--cassette-mode=once").assert_outcomes(passed=1)
        assert answers(path) == ["hello"]
    monkeypatch.setenv("FLAKY", "1")
    recording = project.runpytest(*run, "--reruns", "2", f"--cassette-mode={mode}")
    assert outcomes(recording) == {"passed": 1, "rerun": 1}
    assert answers(path) == ["hello", "right"]
    if not own:  # the summary counts the passing attempt's calls only
        recorded = 1 if mode == "new_episodes" else 2
        assert f" {recorded} recorded," in recording.stdout.str()
    project.runpytest(*run).assert_outcomes(passed=1)  # replays "right"
    project.runpytest(*run, "--cassette-strict").assert_outcomes(passed=1)


def test_a_test_failing_every_attempt_keeps_its_last_attempts_recordings(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three attempts, three answers asked for: the cassette holds one, the last attempt's,
    as a single failing run (``-p no:rerunfailures``) holds its one."""
    project.makepyfile(
        test_fails="""
        from langchain_core.language_models.fake_chat_models import FakeListChatModel

        MODEL = FakeListChatModel(responses=["a", "b", "c"])

        def test_fails(cassette):
            assert MODEL.invoke("question?").content == "never"
        """
    )
    path = project.path / "cassettes" / "test_fails" / "test_fails.yaml"
    single = project.runpytest("-p", "no:rerunfailures", "test_fails.py", "--cassette-mode=record")
    single.assert_outcomes(failed=1)
    assert answers(path) == ["a"]
    rerun = project.runpytest("test_fails.py", "--reruns", "2", "--cassette-mode=record")
    assert outcomes(rerun) == {"failed": 1, "rerun": 2}
    assert answers(path) == ["c"]


@pytest.mark.parametrize("mode", ["replay", "once", "new_episodes"])
def test_a_rerun_replays_again_what_its_failed_attempt_replayed(
    project: pytest.Pytester, mode: str
) -> None:
    """A cassette object that outlives the attempt (a session fixture's) replays the rerun
    what it replayed the failed attempt: the rerun asked again and missed (``replay``,
    ``once``: 'already played 1 time in this run'), or recorded the call again, live
    (``new_episodes``)."""
    project.makeconftest(
        """
        from pathlib import Path
        import pytest
        from chaincassette import Cassette

        @pytest.fixture(scope="session")
        def session_cassette():
            return Cassette(Path(__file__).parent / "cassettes" / "session.yaml")
        """
    )
    project.makepyfile(
        test_session="""
        import itertools
        from chaincassette import use_cassette
        from test_agent import ask

        ATTEMPTS = itertools.count()

        def test_flaky_elsewhere(session_cassette):
            with use_cassette(session_cassette):
                ask()
            assert next(ATTEMPTS) > 0  # the first attempt fails, after its model call
        """
    )
    path = project.path / "cassettes" / "session.yaml"
    run = ["-p", "no:randomly", "test_session.py"]
    project.runpytest(*run, "-p", "no:rerunfailures", "--cassette-mode=once")
    assert answers(path) == ["hello"]
    rerun = project.runpytest(*run, "--reruns", "1", f"--cassette-mode={mode}")
    assert outcomes(rerun) == {"passed": 1, "rerun": 1}, rerun.stdout.str()
    assert answers(path) == ["hello"]


def test_a_record_rerun_recording_nothing_leaves_the_cassette_as_it_was(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``record`` rewrites the cassette at its first save: a failed attempt's save dropped
    the older recordings, and its retraction left the file empty when the last attempt
    failed before its first call (one failing run recording nothing leaves it as it was)."""
    project.makepyfile(
        test_early="""
        import itertools, os
        from langchain_core.language_models.fake_chat_models import FakeListChatModel

        MODEL = FakeListChatModel(responses=["hello", "other"])
        ATTEMPTS = itertools.count()

        def test_early(cassette):
            attempt = next(ATTEMPTS) if os.environ.get("FLAKY") else None
            if attempt == 1:
                raise RuntimeError("fails before its model call")
            assert MODEL.invoke("hi?").content == "hello"
            assert attempt is None, "fails after its model call"
        """
    )
    path = project.path / "cassettes" / "test_early" / "test_early.yaml"
    run = ["-p", "no:randomly", "test_early.py"]
    project.runpytest(*run, "--cassette-mode=once").assert_outcomes(passed=1)
    assert answers(path) == ["hello"]
    monkeypatch.setenv("FLAKY", "1")
    rerun = project.runpytest(*run, "--reruns", "1", "--cassette-mode=record")
    assert outcomes(rerun) == {"failed": 1, "rerun": 1}
    assert answers(path) == ["hello"]
    monkeypatch.delenv("FLAKY")
    project.runpytest(*run, "--cassette-strict").assert_outcomes(passed=1)


LLAMA_SESSION = """
from pathlib import Path
import pytest
from llama_index.core.base.llms.types import CompletionResponse, LLMMetadata
from llama_index.core.llms import CustomLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from chaincassette import Cassette
from chaincassette.integrations.llama_index import CassetteLLM

PATH = Path(__file__).parent / "cassettes" / "li.yaml"


class Echo(CustomLLM):  # a user's own LLM class: the boundary leaves LlamaIndex's alone
    @property
    def metadata(self):
        return LLMMetadata(model_name="echo")

    @llm_completion_callback()
    def complete(self, prompt, formatted=False, **kwargs):
        return CompletionResponse(text=f"echo: {prompt}")

    @llm_completion_callback()
    def stream_complete(self, prompt, formatted=False, **kwargs):
        yield self.complete(prompt)


@pytest.fixture(scope="session")
def complete():
    if WRAPPER:
        return CassetteLLM(Echo(), cassette=PATH).complete
    cassette = Cassette(PATH)

    def through_block(prompt):
        with use_cassette(cassette):
            return Echo().complete(prompt)

    return through_block
"""


@pytest.mark.skipif(importlib.util.find_spec("llama_index") is None, reason="needs LlamaIndex")
@pytest.mark.parametrize("wrapper", [True, False], ids=["CassetteLLM", "boundary"])
def test_a_rerun_recording_keeps_the_llm_description(
    pytester: pytest.Pytester, wrapper: bool
) -> None:
    """A LlamaIndex recording stores its LLM's description once per cassette, for
    ``CassetteLLM(None, ...)``: a session-wide LLM's rerun took back the recording that
    held it and recorded without it ('holds no LlamaIndex recording')."""
    pytester.makeconftest(
        f"WRAPPER = {wrapper}\nfrom chaincassette import use_cassette\n{LLAMA_SESSION}"
    )
    pytester.makepyfile(
        test_li="""
        import itertools
        ATTEMPTS = itertools.count()

        def test_li(complete):
            assert complete("hello there").text
            assert next(ATTEMPTS) > 0  # the first attempt fails
        """,
        replay_li="""
        from conftest import PATH
        from chaincassette.integrations.llama_index import CassetteLLM

        def test_replay():
            assert CassetteLLM(None, cassette=PATH, mode="replay").complete("hello there").text
        """,
    )
    run = ["-p", "no:randomly", "--reruns", "1", "--cassette-mode=once", "test_li.py"]
    assert outcomes(pytester.runpytest_subprocess(*run)) == {"passed": 1, "rerun": 1}
    pytester.runpytest_subprocess("replay_li.py").assert_outcomes(passed=1)


def test_a_rerun_is_not_answered_by_a_session_cache_with_what_it_took_back(
    pytester: pytest.Pytester,
) -> None:
    """A ``CassetteCache`` keeps what it stored with its cassette (``Cassette.state``):
    a session-wide one answered the rerun with the failed attempt's answer, whose recording
    had been taken back, so every attempt failed."""
    pytester.makeconftest(
        """
        from pathlib import Path
        import pytest
        from chaincassette.integrations.langchain import CassetteCache

        @pytest.fixture(scope="session")
        def cache():
            with CassetteCache(Path(__file__).parent / "cassettes" / "cache.yaml") as made:
                yield made
        """
    )
    pytester.makepyfile(
        test_cache="""
        from langchain_core.language_models.fake import FakeListLLM

        MODEL = FakeListLLM(responses=["wrong", "right"])

        def test_cache(cache):
            MODEL.cache = cache
            assert MODEL.invoke("question?") == "right"
        """
    )
    rerun = pytester.runpytest("-p", "no:randomly", "--reruns", "1", "--cassette-mode=once")
    assert outcomes(rerun) == {"passed": 1, "rerun": 1}
    recorded = Cassette(pytester.path / "cassettes" / "cache.yaml").interactions
    assert len(recorded) == 1 and "right" in str(recorded[0].response)
    assert "wrong" not in str(recorded[0].response)


#: One cassette for the whole session, used by two tests: ``test_first`` records into it
#: before ``test_flaky`` first opens it (the object holds a recording already then). The
#: test module imports it at collection (a conftest.py is imported before the mode is set).
HELD_BEFORE = {
    "session Cassette": """
        from pathlib import Path
        import pytest
        from chaincassette import Cassette, use_cassette

        @pytest.fixture(scope="session")
        def held():
            return Cassette(Path(__file__).parent / "cassettes" / "held.yaml")

        @pytest.fixture
        def ask(held):
            def asking(model, prompt):
                with use_cassette(held):
                    return model.invoke(prompt)
            return asking
        """,
    "module CassetteCache": """
        from pathlib import Path
        import pytest
        from chaincassette.integrations.langchain import CassetteCache

        CACHE = CassetteCache(Path(__file__).parent / "cassettes" / "held.yaml")


        @pytest.fixture
        def ask():
            def asking(model, prompt):
                model.cache = CACHE
                return model.invoke(prompt)
            return asking
        """,
}


@pytest.mark.parametrize("holder", sorted(HELD_BEFORE))
@pytest.mark.parametrize("mode", ["new_episodes", "record"])
def test_a_rerun_takes_back_only_its_attempt_from_a_cassette_that_recorded_before(
    pytester: pytest.Pytester, holder: str, mode: str
) -> None:
    """A cassette object that had recorded before the test first opened it (a session
    fixture's, a module's ``CassetteCache``) was left as the failed attempt made it: the
    rerun's answer was recorded beside the failed one, which the replay served first."""
    pytester.makepyfile(held=HELD_BEFORE[holder])
    pytester.syspathinsert()
    pytester.makepyfile(
        test_held="""
        from langchain_core.language_models.fake import FakeListLLM
        from held import *

        STEADY = FakeListLLM(responses=["hello"])
        FLAKY = FakeListLLM(responses=["wrong", "right", "third"])

        def test_first(ask):
            assert ask(STEADY, "hi?") == "hello"

        def test_flaky(ask):
            assert ask(FLAKY, "question?") == "right"
        """
    )
    run = ["-p", "no:randomly", "test_held.py"]
    rerun = pytester.runpytest(*run, "--reruns", "1", f"--cassette-mode={mode}")
    assert outcomes(rerun) == {"passed": 2, "rerun": 1}, rerun.stdout.str()
    recorded = Cassette(pytester.path / "cassettes" / "held.yaml").interactions
    assert [str(i.response) for i in recorded if "wrong" in str(i.response)] == []
    assert len(recorded) == 2
    for _ in range(2):
        pytester.runpytest(*run, "--cassette-strict").assert_outcomes(passed=2)
