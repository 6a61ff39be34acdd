"""langchain-core's own cache tests, run against ``CassetteCache``.

The two test modules of the installed langchain-core version (chat models and LLMs:
``tests/unit_tests/language_models/{chat_models,llms}/test_cache.py``) are taken from its
source distribution, fetched once with pip into a cache folder (``LANGCHAIN_CORE_SDIST``
names a local copy instead), and nothing of them is committed here. A conftest written for
the run swaps their ``InMemoryCache`` for a ``CassetteCache`` on a fresh cassette (its
``_cache``, which the tests read and write, is ``CassetteCache.stored()``, an entry written
into it is handed over with ``update``), and runs them twice in
fresh pytest processes: recording (mode ``once``, each cache its own new file), then
replaying those files (mode ``replay``). Both runs must end the same way, every test passing
(``DIFFERENCES`` would name one that does not, as the README would).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import textwrap
import xml.etree.ElementTree as ElementTree
from importlib import metadata
from pathlib import Path

import pytest

MODULES = (
    "tests/unit_tests/language_models/chat_models/test_cache.py",
    "tests/unit_tests/language_models/llms/test_cache.py",
)
#: Each test that does not pass against a CassetteCache, and why (the README's list).
DIFFERENCES: dict[str, str] = {}
#: Upstream's own expected failures (streams never reach a BaseCache).
UPSTREAM_XFAIL = {"test_global_cache_stream"}

CONFTEST = '''
"""Written by chaincassette's test_basecache_contract: InMemoryCache is a CassetteCache."""
import os
from pathlib import Path

import pytest

from chaincassette.integrations.langchain import CassetteCache

FOLDER = Path(os.environ["CONTRACT_CASSETTES"])
MODE = os.environ["CONTRACT_MODE"]
_made = {"test": "", "count": 0}


class Entries(dict):
    """``InMemoryCache._cache`` as the tests read and write it: what the cache stored
    (``stored()``); an entry set is handed to the cache with ``update``."""

    def __init__(self, cache):
        super().__init__(cache.stored())
        self.cache = cache

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        self.cache.update(key[0], key[1], value)


class CassetteBackedCache(CassetteCache):
    """``InMemoryCache()`` of the tests: a CassetteCache on the test's next cassette."""

    def __init__(self) -> None:
        _made["count"] += 1
        name = f"{_made['test']}-{_made['count']}.yaml"
        super().__init__(FOLDER / name, mode=MODE)

    @property
    def _cache(self):
        return Entries(self)

    @_cache.setter
    def _cache(self, entries):  # one cache's entries given to another: BaseCache.update
        self.clear()
        for (prompt, llm_string), value in entries.items():
            self.update(prompt, llm_string, value)


@pytest.fixture(autouse=True)
def cassette_backed(request):
    _made["test"], _made["count"] = request.node.name, 0
    request.module.InMemoryCache = CassetteBackedCache
    yield
'''


def _sdist() -> Path:
    """langchain-core's source distribution of the installed version (fetched once)."""
    given = os.environ.get("LANGCHAIN_CORE_SDIST")
    if given:
        return Path(given)
    version = metadata.version("langchain-core")
    folder = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "chaincassette-tests"
    found = sorted(folder.glob(f"langchain_core-{version}.tar.gz"))
    if found:
        return found[0]
    folder.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", f"langchain-core=={version}"]
    command += ["--no-deps", "--no-binary", ":all:", "--dest", str(folder), "--quiet"]
    fetched = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    found = sorted(folder.glob(f"langchain_core-{version}.tar.gz"))
    if not found:
        pytest.fail(f"could not fetch langchain-core {version}'s sdist: {fetched.stderr[-2000:]}")
    return found[0]


def _unpack(sdist: Path, target: Path) -> None:
    """The two test modules, with the packages around them (``__init__.py``), as they
    are laid out upstream: one test checks the module path in a model's ``llm_string``."""
    wanted = set(MODULES)
    for module in MODULES:
        parts = Path(module).parts
        wanted |= {str(Path(*parts[:n], "__init__.py")) for n in range(1, len(parts))}
    with tarfile.open(sdist) as archive:
        for member in archive.getmembers():
            inner = Path(*Path(member.name).parts[1:])
            if member.isfile() and str(inner) in wanted:
                destination = target / inner
                destination.parent.mkdir(parents=True, exist_ok=True)
                source = archive.extractfile(member)
                assert source is not None
                destination.write_bytes(source.read())
    missing = [m for m in MODULES if not (target / m).exists()]
    assert not missing, f"{sdist.name} holds no {missing}"


def _run(suite: Path, cassettes: Path, mode: str) -> dict[str, str]:
    """Run the modules in a fresh pytest process: each test's outcome, by name."""
    report = suite / f"report-{mode}.xml"
    env = {**os.environ, "CONTRACT_CASSETTES": str(cassettes), "CONTRACT_MODE": mode}
    env.pop("CHAINCASSETTE_MODE", None)
    command = [sys.executable, "-m", "pytest", *MODULES, "-q", "-p", "no:cacheprovider"]
    command += ["-p", "no:chaincassette", "-p", "no:randomly", "-p", "no:xdist"]
    command += ["-o", "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=function"]
    command += ["--rootdir", str(suite), "-c", str(suite / "pytest.ini"), f"--junitxml={report}"]
    done = subprocess.run(
        command, cwd=suite, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    outcomes: dict[str, str] = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        kinds = {child.tag for child in case}
        if "failure" in kinds or "error" in kinds:
            outcome = "failed"
        elif "skipped" in kinds:
            skipped = case.find("skipped")
            kind = skipped.get("type", "") if skipped is not None else ""
            outcome = "xfailed" if "xfail" in kind else "skipped"
        else:
            outcome = "passed"
        outcomes[case.get("name", "?")] = outcome
    return outcomes


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("langchain_core_cache_tests")
    _unpack(_sdist(), folder)
    (folder / "pytest.ini").write_text("[pytest]\n")
    (folder / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    return folder


def test_langchain_core_cache_tests_pass_against_cassette_cache(
    suite: Path, tmp_path: Path
) -> None:
    cassettes = tmp_path / "cassettes"
    cassettes.mkdir()
    recorded = _run(suite, cassettes, "once")
    assert len(recorded) >= 20, recorded  # both modules ran, not an empty collection
    expected = {
        name: "failed" if name in DIFFERENCES else "xfailed" if name in UPSTREAM_XFAIL else "passed"
        for name in recorded
    }
    assert recorded == expected
    assert sorted(p.name for p in cassettes.iterdir())  # the caches really wrote cassettes
    replayed = _run(suite, cassettes, "replay")  # the same tests, from what they recorded
    assert replayed == recorded
