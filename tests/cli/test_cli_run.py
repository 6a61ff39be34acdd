"""``chaincassette run``: record an unmodified program, replay it in fresh processes, offline.

The LangGraph and LlamaIndex programs talk to a fake OpenAI-compatible server on
127.0.0.1 while recording; for replay the server is shut down (its port refuses
connections) and no API key is set, so any call that escaped the cassette would fail.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.scripts import forecast
from fakes.wire import FakeServer

from chaincassette.cli.runner import NotPython, split_command

PROGRAMS = Path(__file__).parent / "programs"
CLI = [sys.executable, "-m", "chaincassette"]


def chaincassette(
    *args: str, env: dict[str, str], seed: str = "0"
) -> subprocess.CompletedProcess[str]:
    """The CLI in a fresh process with its own hash seed."""
    return subprocess.run(
        [*CLI, *args],
        env=env | {"PYTHONHASHSEED": seed},
        capture_output=True,
        text=True,
        timeout=600,  # a hang guard: loaded CI machines are slow
    )


@pytest.fixture
def base_env(tmp_path: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and k != "CHAINCASSETTE_MODE"
    }
    env["CALLS_LOG"] = str(tmp_path / "calls.log")
    return env


def test_split_command() -> None:
    this = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    assert split_command(["python", "-u", "app.py", "a b"]) == (
        sys.executable,
        ["-u"],
        "path",
        "app.py",
        ["a b"],
    )
    assert split_command([this, "-W", "ignore", "-m", "pkg.cli", "-x"]) == (
        sys.executable,
        ["-W", "ignore"],
        "module",
        "pkg.cli",
        ["-x"],
    )
    assert split_command(["python2.7", "app.py"])[0] == "python2.7"  # another version: as asked
    assert split_command(["/opt/py/bin/python3", "app.py"])[0] == "/opt/py/bin/python3"
    assert split_command(["python", "-c", "print(1)", "x"])[2:] == ("code", "print(1)", ["x"])
    assert split_command(["agent.py", "q"]) == (sys.executable, [], "path", "agent.py", ["q"])
    for bad in ([], ["node", "app.js"], ["python"], ["python", "-m"]):
        with pytest.raises(NotPython):
            split_command(bad)


def test_usage_errors(tmp_path: Path, base_env: dict[str, str]) -> None:
    from chaincassette.cli import main

    assert main(["run", "--record", str(tmp_path / "x"), "--", "node", "app.js"]) == 2
    assert main(["run", "--replay", str(tmp_path / "missing.yaml"), "--", "python", "app.py"]) == 2
    assert main(["run", "--", "python", "app.py"]) == 2


def test_record_then_replay_a_program_in_fresh_processes(
    tmp_path: Path, base_env: dict[str, str]
) -> None:
    cassette = tmp_path / "bug-report"
    program = str(PROGRAMS / "plain_program.py")
    recorded = chaincassette(
        "run", "--record", str(cassette), "--", sys.executable, program, "hello", env=base_env
    )
    assert recorded.returncode == 3, recorded.stderr  # the program's own exit status, saved anyway
    assert json.loads(recorded.stdout) == {"argv": ["hello"], "reply": "olleh", "main": "__main__"}
    assert "recorded 1 interaction(s)" in recorded.stderr
    assert (tmp_path / "bug-report.yaml").is_file()
    replays = [
        chaincassette(
            "run",
            "--replay",
            str(cassette) + ".yaml",
            "--",
            sys.executable,
            program,
            "hello",
            env=base_env,
            seed=seed,
        )
        for seed in ("1", "2")
    ]
    assert [r.stdout for r in replays] == [recorded.stdout] * 2
    assert [r.returncode for r in replays] == [3, 3]
    assert Path(base_env["CALLS_LOG"]).read_text().splitlines() == ["hello"]

    swallowed = chaincassette(
        "run",
        "--replay",
        str(cassette) + ".yaml",
        "--",
        sys.executable,
        program,
        "other",
        env=base_env,
    )
    assert json.loads(swallowed.stdout)["reply"] == "fallback"
    assert swallowed.returncode == 3  # the program's own failure status wins (0 would become 1)
    assert (
        "the program caught 1 cassette miss; its output is not the recorded one" in swallowed.stderr
    )
    assert "no recording matches this request" in swallowed.stderr


needs_langchain_openai = pytest.mark.skipif(
    importlib.util.find_spec("langchain_openai") is None
    or importlib.util.find_spec("langgraph") is None,
    reason="langchain-openai and langgraph are needed",
)
needs_llama_openai = pytest.mark.skipif(
    importlib.util.find_spec("llama_index.llms.openai") is None,
    reason="llama-index-llms-openai is needed",
)


def record_and_replay(
    program: Path, question: str, tmp_path: Path, env: dict[str, str]
) -> tuple[str, list[str], int]:
    cassette = tmp_path / "run.yaml"
    with FakeServer(forecast) as provider:
        record_env = env | {"AGENT_BASE_URL": provider.url, "OPENAI_API_KEY": "sk-test-" + "x" * 32}
        recorded = chaincassette(
            "run",
            "--record",
            str(cassette),
            "--",
            sys.executable,
            str(program),
            question,
            env=record_env,
        )
        assert recorded.returncode == 0, recorded.stderr
        calls = provider.requests
        url = provider.url
    # the server is gone: its port refuses connections, and no API key is set
    replay_env = env | {"AGENT_BASE_URL": url}
    replays = []
    for seed in ("11", "12"):
        replayed = chaincassette(
            "run",
            "--replay",
            str(cassette),
            "--",
            sys.executable,
            str(program),
            question,
            env=replay_env,
            seed=seed,
        )
        assert replayed.returncode == 0, replayed.stderr
        replays.append(replayed.stdout)
    return recorded.stdout, replays, calls


@needs_langchain_openai
def test_unmodified_langgraph_program(tmp_path: Path, base_env: dict[str, str]) -> None:
    recorded, replays, calls = record_and_replay(
        PROGRAMS / "langgraph_agent.py", "Weather in Rome?", tmp_path, base_env
    )
    assert "ai: Forecast: 12C and sunny in Rome." in recorded.splitlines()
    assert "chunk: Rome." in recorded.splitlines()  # the streaming path was recorded too
    assert calls == 4
    assert replays == [recorded, recorded]


@needs_llama_openai
def test_unmodified_llamaindex_program(tmp_path: Path, base_env: dict[str, str]) -> None:
    recorded, replays, calls = record_and_replay(
        PROGRAMS / "llamaindex_agent.py", "Weather in Rome?", tmp_path, base_env
    )
    assert "answer: Forecast: 12C and sunny in Rome." in recorded.splitlines()
    assert calls == 3
    assert replays == [recorded, recorded]


def test_run_help_shows_mode_in_the_usage_line(capsys: pytest.CaptureFixture[str]) -> None:
    from chaincassette.cli import main

    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = capsys.readouterr().out
    assert out.startswith(
        "usage: chaincassette run (--record NAME | --replay FILE) [--mode MODE] [--quiet] -- "
        "COMMAND..."
    )
    assert "--mode MODE" in out


def test_mode_is_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from chaincassette.cli import main

    program = str(PROGRAMS / "plain_program.py")
    assert main(["run", "--record", str(tmp_path / "x"), "--mode", "replay", "--", program]) == 2
    assert "--mode must be record, new_episodes or once" in capsys.readouterr().err
    (tmp_path / "x.yaml").write_text("version: 1\nrecorded_with: {}\ninteractions: []\n...\n")
    replay = ["run", "--replay", str(tmp_path / "x.yaml"), "--mode", "record", "--", program]
    assert main(replay) == 2
    assert "--mode goes with --record" in capsys.readouterr().err


def test_a_replay_miss_names_the_command_that_records_it(
    tmp_path: Path, base_env: dict[str, str]
) -> None:
    cassette = tmp_path / "bug.yaml"
    program = str(PROGRAMS / "plain_program.py")
    chaincassette("run", "--record", str(cassette), "--", program, "hello", env=base_env)
    missed = chaincassette("run", "--replay", str(cassette), "--", program, "other", env=base_env)
    assert missed.returncode == 3
    assert (
        "re-record this cassette so it holds only the new calls (keeping the old ones would "
        f"leave them unused): chaincassette run --record {cassette} -- "
        f"{program} other\n" in missed.stderr
    )
    assert "--cassette-mode" not in missed.stderr and "CHAINCASSETTE_MODE" not in missed.stderr


def test_the_rerecord_command_names_the_mode_unless_it_is_the_default() -> None:
    from chaincassette.cli.runner import rerecord_command, with_mode

    template = rerecord_command(Path("bugs/{x}.yaml"), ["python", "agent.py", "Why {x}?"])
    again = "-- python agent.py 'Why {x}?'"
    assert with_mode(template, "record") == f"chaincassette run --record bugs/{{x}}.yaml {again}"
    for mode in ("new_episodes", "once"):
        assert with_mode(template, mode) == (
            f"chaincassette run --record bugs/{{x}}.yaml --mode {mode} {again}"
        )


def test_nothing_recorded_says_what_is_intercepted(
    tmp_path: Path, base_env: dict[str, str]
) -> None:
    result = chaincassette(
        "run", "--record", str(tmp_path / "none"), "--", "python", "-c", "print(1)", env=base_env
    )
    assert result.returncode == 1 and result.stdout == "1\n"
    assert "nothing was recorded" in result.stderr
    assert "however they are built" in result.stderr and "LlamaIndex" in result.stderr
    assert "Settings.llm" not in result.stderr


@pytest.fixture(scope="module")
def foreign_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An interpreter without chaincassette, like a virtual environment nobody activated."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    assert subprocess.run([python, "-c", "import chaincassette"], capture_output=True).returncode
    return python


def test_a_bare_python_runs_with_chaincassettes_interpreter(
    tmp_path: Path, base_env: dict[str, str], foreign_python: Path
) -> None:
    env = base_env | {"PATH": f"{foreign_python.parent}{os.pathsep}{base_env['PATH']}"}
    program = str(PROGRAMS / "plain_program.py")
    for head in ("python", "python3", f"python{sys.version_info[0]}.{sys.version_info[1]}"):
        result = chaincassette(
            "run", "--record", str(tmp_path / head), "--", head, program, "hi", env=env
        )
        assert result.returncode == 3, result.stderr
        assert json.loads(result.stdout)["reply"] == "ih"


def test_an_interpreter_without_chaincassette_is_a_clear_error(
    tmp_path: Path, base_env: dict[str, str], foreign_python: Path
) -> None:
    program = str(PROGRAMS / "plain_program.py")
    result = chaincassette(
        "run", "--record", str(tmp_path / "x"), "--", str(foreign_python), program, env=base_env
    )
    assert result.returncode == 2
    assert f"{foreign_python} cannot import chaincassette" in result.stderr
    assert "activate" in result.stderr and sys.executable in result.stderr
    assert "Traceback" not in result.stderr


WORKERS_PROGRAM = """
import subprocess, sys
from chaincassette import recorded, use_cassette

@recorded(name="provider.ask")
def ask(prompt):
    return {"text": prompt.upper()}

if len(sys.argv) > 2:  # a worker: opens the same cassette in record mode, as a pool would
    with use_cassette(sys.argv[1], mode="record"):
        for n in range(5):
            ask(f"worker {sys.argv[2]} question {n}")
else:
    ask("parent question")
    workers = [subprocess.Popen([sys.executable, __file__, sys.argv[1], str(w)]) for w in range(3)]
    assert all(w.wait() == 0 for w in workers)
"""


def test_record_keeps_what_the_worker_processes_of_one_run_recorded(
    tmp_path: Path, base_env: dict[str, str]
) -> None:
    import yaml

    program = tmp_path / "workers.py"
    program.write_text(WORKERS_PROGRAM)
    cassette = tmp_path / "workers.yaml"
    env = {k: v for k, v in base_env.items() if k != "CHAINCASSETTE_RUN"}
    for _ in range(2):  # the second run rewrites from scratch, and again keeps everything
        done = chaincassette(
            "run", "--record", str(cassette), "--", "python", str(program), str(cassette), env=env
        )
        assert done.returncode == 0, done.stderr
        prompts = [
            i["request"]["args"]["prompt"]
            for i in yaml.safe_load(cassette.read_text())["interactions"]
        ]
        assert sorted(prompts) == sorted(
            ["parent question"] + [f"worker {w} question {n}" for w in range(3) for n in range(5)]
        )


def record_twice(program: Path, tmp_path: Path, env: dict[str, str]) -> tuple[Path, Path]:
    """Two recordings of one program, each against its own server (other random ids)."""
    paths = []
    for name in ("first", "second"):
        cassette = tmp_path / f"{name}.yaml"
        with FakeServer(forecast) as provider:
            record_env = env | {"AGENT_BASE_URL": provider.url, "OPENAI_API_KEY": "sk-" + "x" * 40}
            done = chaincassette(
                "run",
                "--record",
                str(cassette),
                "--",
                sys.executable,
                str(program),
                "Weather?",
                env=record_env,
            )
            assert done.returncode == 0, done.stderr
        paths.append(cassette)
    return paths[0], paths[1]


@needs_langchain_openai
def test_diff_of_two_recordings_of_a_langgraph_program_has_no_change_in_meaning(
    tmp_path: Path, base_env: dict[str, str]
) -> None:
    first, second = record_twice(PROGRAMS / "langgraph_agent.py", tmp_path, base_env)
    assert first.read_text() != second.read_text()  # other chatcmpl-, call_ and fp_ ids
    diff = chaincassette("diff", str(first), str(second), env=base_env)
    assert diff.returncode == 0, diff.stdout + diff.stderr
    assert "no change in meaning" in diff.stdout
    assert "chatcmpl-" not in diff.stdout and "fp_" not in diff.stdout
    listed = chaincassette("diff", "--all", str(first), str(second), env=base_env)
    assert "chatcmpl-" in listed.stdout  # --all lists the provider details


@needs_llama_openai
def test_show_of_a_streamed_llamaindex_agent_reads_as_a_transcript(
    tmp_path: Path, base_env: dict[str, str]
) -> None:
    first, second = record_twice(PROGRAMS / "llamaindex_agent.py", tmp_path, base_env)
    assert "chunks:" in first.read_text()  # FunctionAgent streams its model calls
    shown = chaincassette("show", str(first), env=base_env)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    for expected in (
        "  user: Weather?",
        '  assistant: → get_weather(city="Paris")',
        "  tool: 12C and sunny in Paris",
        "  assistant: Forecast: 12C and sunny in Paris.",
    ):
        assert expected in lines, shown.stdout
    assert any("continues [0]" in line for line in lines), shown.stdout
    assert sum(line.startswith("  (streamed, ") for line in lines) >= 2, shown.stdout
    for raw in ('"chunks"', "__pydantic__", "chatcmpl-", '"blocks"'):  # no raw JSON
        assert raw not in shown.stdout, shown.stdout
    diff = chaincassette("diff", str(first), str(second), env=base_env)
    assert diff.returncode == 0 and "no change in meaning" in diff.stdout, diff.stdout


def test_summary_is_printed_when_the_program_raises(
    tmp_path: Path, base_env: dict[str, str]
) -> None:
    cassette = tmp_path / "crash.yaml"
    program = str(PROGRAMS / "raising_program.py")
    recorded = chaincassette("run", "--record", str(cassette), "--", program, "hi", env=base_env)
    assert recorded.returncode == 1
    assert "RuntimeError: the program crashed after its model call" in recorded.stderr
    assert "Traceback (most recent call last)" in recorded.stderr
    assert f"chaincassette: recorded 1 interaction(s) (0 missed) · {cassette}" in recorded.stderr
    assert cassette.is_file()
    replayed = chaincassette("run", "--replay", str(cassette), "--", program, "hi", env=base_env)
    assert replayed.returncode == 1
    assert json.loads(replayed.stdout)["reply"] == json.loads(recorded.stdout)["reply"] == "HI"
    assert f"chaincassette: replayed 1 interaction(s) (0 missed) · {cassette}" in replayed.stderr


def test_empty_provider_keys_count_as_unset_on_replay(
    tmp_path: Path, base_env: dict[str, str]
) -> None:
    cassette = tmp_path / "keys.yaml"
    program = str(PROGRAMS / "raising_program.py")
    empty = base_env | {"OPENAI_API_KEY": ""}
    recorded = chaincassette("run", "--record", str(cassette), "--", program, "k", env=empty)
    assert json.loads(recorded.stdout)["key"] == "empty"  # recording never invents a key
    replayed = chaincassette("run", "--replay", str(cassette), "--", program, "k", env=empty)
    assert json.loads(replayed.stdout) == {"reply": "K", "key": "set"}


def _chaincassette_frames(stderr: str) -> list[str]:
    """Traceback lines that point into chaincassette's own code."""
    import chaincassette
    import chaincassette.integrations

    roots = {
        str(Path(chaincassette.__file__).parent),
        *chaincassette.integrations.__path__,
    }
    return [
        line
        for line in stderr.splitlines()
        if line.strip().startswith('File "') and any(root in line for root in roots)
    ]


@needs_langchain_openai
def test_a_replay_stopped_by_a_miss_prints_the_report_once_in_a_few_lines(
    tmp_path: Path, base_env: dict[str, str]
) -> None:
    cassette = tmp_path / "run.yaml"
    program = str(PROGRAMS / "langgraph_agent.py")
    with FakeServer(forecast) as provider:
        env = base_env | {"AGENT_BASE_URL": provider.url, "OPENAI_API_KEY": "sk-test-" + "x" * 32}
        recorded = chaincassette("run", "--record", str(cassette), "--", program, "Hi?", env=env)
        assert recorded.returncode == 0, recorded.stderr
        url = provider.url
    missed = chaincassette(
        "run", "--replay", str(cassette), "--", program, "Weather in Oslo?",
        env=base_env | {"AGENT_BASE_URL": url, "PYTHONWARNINGS": "ignore"},
    )  # fmt: skip
    lines = missed.stderr.splitlines()
    assert missed.returncode == 1  # an uncaught exception, as before
    assert len(lines) <= 15, missed.stderr
    assert _chaincassette_frames(missed.stderr) == []
    assert missed.stderr.count("no recording matches this request") == 1
    assert 'langgraph_agent.py", line 22, in <module>' in missed.stderr
    assert "- messages[0] (user).content: Hi? → Weather in Oslo?" in missed.stderr
    assert "caught" not in missed.stderr
    assert lines[-1] == (
        f"chaincassette: replayed 0 interaction(s) (1 missed; the program stopped on it) · {cassette}"
    )


def test_who_caught_which_miss_is_said_right(tmp_path: Path, base_env: dict[str, str]) -> None:
    cassette = tmp_path / "bug.yaml"
    program = str(PROGRAMS / "plain_program.py")
    chaincassette("run", "--record", str(cassette), "--", program, "hello", env=base_env)
    wrapped = tmp_path / "agent.py"
    wrapped.write_text(
        "from chaincassette import recorded\n"
        "@recorded(name='provider.ask')\n"
        "def ask(question): return {}\n"
        "try:\n    ask('caught')\nexcept Exception:\n    pass\n"
        "try:\n    ask('wrapped')\n"
        "except Exception as error:\n    raise RuntimeError('the agent gave up') from error\n"
    )
    result = chaincassette("run", "--replay", str(cassette), "--", str(wrapped), env=base_env)
    assert result.returncode == 1
    assert _chaincassette_frames(result.stderr) == []
    assert "RuntimeError: the agent gave up\nraised from this cassette miss:\n" in result.stderr
    assert f'  File "{wrapped}", line 11, in <module>\n' in result.stderr
    assert result.stderr.count("no recording matches this request") == 2  # the report + the one
    assert (
        "the program stopped on a cassette miss and caught 1 more before it; the first of "
        "those: no recording matches this request" in result.stderr
    )
    assert len(result.stderr.splitlines()) <= 15, result.stderr


def test_a_crash_keeps_its_traceback_without_the_bootstraps_frames(
    tmp_path: Path, base_env: dict[str, str]
) -> None:
    program = str(PROGRAMS / "raising_program.py")
    crashed = chaincassette(
        "run", "--record", str(tmp_path / "c.yaml"), "--", program, "hi", env=base_env
    )
    assert crashed.returncode == 1
    assert crashed.stderr.startswith("Traceback (most recent call last):\n")
    assert f'  File "{program}", line 18, in <module>\n' in crashed.stderr
    assert "bootstrap.py" not in crashed.stderr and "runpy" not in crashed.stderr
    assert "RuntimeError: the program crashed after its model call" in crashed.stderr
