"""Per-call replay time of a raw ``openai`` SDK chat call against a ``ChatOpenAI`` replay.

Both replay the same request (1, 10 and 50 messages) from a cassette recorded once against
``fake_openai.py``, in one run (``interleaved_medians``):

- **openai SDK, no cassette (floor)**: ``client.chat.completions.create`` over an
  ``httpx.MockTransport`` that returns the recorded body at once: what the SDK itself costs
  (building the request, parsing the answer into a ``ChatCompletion``);
- **ChatOpenAI, use_cassette**: ``ChatOpenAI.invoke`` replayed by the LangChain layer;
- **openai SDK, use_cassette**: ``client.chat.completions.create`` replayed by the SDK layer
  (``integrations/sdk/methods.py``: the key from the method's arguments, the recorded body
  parsed by the SDK's own last step);
- **of which Cassette.begin**: the engine keying that call's canonical request (a plain dict,
  normalized and hashed whole on every call; the LangChain layer resumes its conversation's
  prefix through ``stable_messages``, which issue 23 replaces by a per-cassette resume).

Target (issue 26): the SDK replay within 1.5x of the ``ChatOpenAI`` replay.

Run: .venv/bin/python benchmarks/bench_sdk.py [--store]   (``--store`` also writes the output
to ``benchmarks/results/<date>-<time>-sdk.md``)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
from langchain_core.messages import BaseMessage
from langchain_openai import ChatOpenAI

sys.path.insert(0, str(Path(__file__).parent))
from _timing import Variant, fmt, interleaved_medians, table
from bench_langchain import prompt  # the same conversations
from fake_openai import ANSWER, serving

from chaincassette import Cassette, use_cassette
from chaincassette.integrations.sdk.requests import chat_completions

SIZES = (1, 10, 50)
MODEL = "gpt-4o-mini"
KEY = "sk-bench"
DEAD = "http://127.0.0.1:9/v1"


def as_dicts(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    roles = {"human": "user", "ai": "assistant", "system": "system"}
    return [{"role": roles[m.type], "content": m.content} for m in messages]


def _sdk_call(client: openai.OpenAI, messages: list[dict[str, Any]]) -> Callable[[], object]:
    def call() -> object:
        completion = client.chat.completions.create(model=MODEL, messages=messages, temperature=0)  # type: ignore[arg-type]
        assert completion.choices[0].message.content == ANSWER
        return completion

    return call


def _floor(body: bytes, messages: list[dict[str, Any]]) -> Variant:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "application/json"}, content=body)

    client = openai.OpenAI(
        base_url=DEAD, api_key=KEY, http_client=httpx.Client(transport=httpx.MockTransport(answer))
    )

    @contextmanager
    def variant() -> Iterator[Callable[[], object]]:
        yield _sdk_call(client, messages)

    return variant


def _replayed(path: Path, call: Callable[[], object]) -> Variant:
    @contextmanager
    def variant() -> Iterator[Callable[[], object]]:
        with use_cassette(Cassette(path, mode="replay", allow_playback_repeats=True)):
            yield call

    return variant


def _chat_openai(messages: list[BaseMessage]) -> Callable[[], object]:
    model = ChatOpenAI(model=MODEL, temperature=0.0, base_url=DEAD, api_key=KEY, max_retries=0)

    def call() -> object:
        answer = model.invoke(messages)
        assert answer.content == ANSWER
        return answer

    return call


def _keyed(path: Path, messages: list[dict[str, Any]]) -> Variant:
    @contextmanager
    def variant() -> Iterator[Callable[[], object]]:
        cassette = Cassette(path, mode="replay", allow_playback_repeats=True)
        body = {"model": MODEL, "messages": messages, "temperature": 0}

        def call() -> object:
            begun = cassette.begin(chat_completions(json.loads(json.dumps(body)), ""))
            assert begun.hit
            return begun

        yield call

    return variant


def record(tmp: Path) -> bytes:
    """Record both cassettes once against the fake server; returns one recorded body."""
    with serving() as base_url:
        model = ChatOpenAI(model=MODEL, temperature=0.0, base_url=base_url, api_key=KEY)
        client = openai.OpenAI(base_url=base_url, api_key=KEY)
        with use_cassette(tmp / "langchain.yaml", mode="record"):
            for n in SIZES:
                model.invoke(prompt(n))
        with use_cassette(tmp / "sdk.yaml", mode="record"):
            for n in SIZES:
                _sdk_call(client, as_dicts(prompt(n)))()
    stored = Cassette(tmp / "sdk.yaml", mode="replay").interactions[0].response
    return json.dumps(stored["body"]).encode()


NAMES = {
    "floor": "openai SDK, no cassette (floor)",
    "langchain": "ChatOpenAI, use_cassette",
    "sdk": "openai SDK, use_cassette",
    "keyed": "of which Cassette.begin (engine keying)",
}


def measure(*, repeat: int = 9, number: int = 100) -> dict[int, dict[str, float]]:
    results: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        body = record(tmp)
        client = openai.OpenAI(base_url=DEAD, api_key=KEY, max_retries=0)
        for n in SIZES:
            messages = prompt(n)
            variants = {
                "floor": _floor(body, as_dicts(messages)),
                "langchain": _replayed(tmp / "langchain.yaml", _chat_openai(messages)),
                "sdk": _replayed(tmp / "sdk.yaml", _sdk_call(client, as_dicts(messages))),
                "keyed": _keyed(tmp / "sdk.yaml", as_dicts(messages)),
            }
            results[n] = interleaved_medians(variants, repeat=repeat, number=number)
    return results


def report(results: dict[int, dict[str, float]]) -> str:
    header = ["variant", *(f"{n} msg" for n in SIZES)]
    rows = [[name, *(fmt(results[n][key]) for n in SIZES)] for key, name in NAMES.items()]
    targets = []
    for n in SIZES:
        r = results[n]
        ratio = r["sdk"] / r["langchain"]
        met = "met" if ratio <= 1.5 else "missed"
        rest = (r["sdk"] - r["keyed"]) / r["langchain"]
        targets.append(
            [f"{n}", f"{ratio:.2f}x", met, f"{r['keyed'] / r['sdk']:.0%}", f"{rest:.2f}x"]
        )
    target_header = [
        "messages",
        "SDK ÷ ChatOpenAI (target ≤ 1.5x)",
        "",
        "engine keying's share",
        "SDK without the keying ÷ ChatOpenAI",
    ]
    return "\n".join([table(header, rows), "", table(target_header, targets)])


def store(output: str) -> Path:
    """Write ``output`` as a results file, headed like the other stored runs."""
    here = Path(__file__).parent
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True
    ).stdout.strip()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    stamp = time.strftime("%Y-%m-%d-%H%M", time.gmtime())
    path = here / "results" / f"{stamp}-sdk.md"
    head = f"# bench_sdk.py, {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, commit {commit}, load {load}"
    command = "Command: `.venv/bin/python benchmarks/bench_sdk.py --store`"
    path.write_text(f"{head}\n\n{command}\n\n{output}\n")
    return path


def main() -> None:
    output = "## Raw openai SDK chat call against ChatOpenAI, replayed, per call\n\n" + report(
        measure()
    )
    print(output)
    if "--store" in sys.argv:
        print(f"\nstored: {store(output)}")


if __name__ == "__main__":
    main()
