"""Secrets by value, by the common key formats and by their look, in what a cassette stores.

The end-to-end proof (a LangGraph agent leaking planted secrets through every path, every
file it writes read back) is ``tests/langchain/test_secrets_by_value.py``; here each rule
is pinned alone, and the random-token rule is measured on the repository's cassettes.
"""

from __future__ import annotations

import json
import os
import random
import string
import subprocess
import urllib.parse
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from chaincassette import Cassette, CassetteSecretError, key_of, normalize, storage
from chaincassette.entropy import looks_random, random_tokens
from chaincassette.redact import RANDOM_TOKEN, Redactor, SecretMaskedWarning
from chaincassette.secret_env import is_secret_variable, secret_values, worth_masking

ROOT = Path(__file__).resolve().parents[2]
_ALNUM = string.ascii_letters + string.digits


def rand(n: int, alphabet: str = _ALNUM) -> str:
    return "".join(random.SystemRandom().choice(alphabet) for _ in range(n))


# -- which variables, which values -------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY",
        "ACME_API_KEY",
        "SLACK_BOT_TOKEN",
        "GITHUB_TOKEN",
        "STRIPE_SECRET_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_ACCESS_KEY_ID",
        "DB_PASSWORD",
        "PGPASSWORD",
        "CLIENT_SECRET",
        "AZURE_SEARCH_ADMIN_KEY",
        "WATSONX_APIKEY",
        "HF_TOKEN",
        "GITLAB_PAT",
    ],
)
def test_secret_variable_names(name: str) -> None:
    assert is_secret_variable(name)


@pytest.mark.parametrize(
    "name", ["PATH", "HOME", "TOKENIZERS_PARALLELISM", "HF_TOKEN_PATH", "KEYBOARD", "MONKEY"]
)
def test_ordinary_variable_names(name: str) -> None:
    assert not is_secret_variable(name)


@pytest.mark.parametrize(
    ("value", "named", "masked"),
    [
        ("test", False, False),  # placeholders and words are everywhere: never masked
        ("EMPTY", False, False),
        ("postgres", False, False),
        ("not-needed", False, False),
        ("12345678", False, False),
        ("hunter22", False, True),  # a digit: a key's look
        ("CorrectHorse", False, True),
        ("correct-horse-battery-staple", False, True),  # long enough whatever it is
        ("abcd", True, True),  # named by the user: masked from 4 characters
        ("abc", True, False),
    ],
)
def test_which_values_are_masked(value: str, named: bool, masked: bool) -> None:
    assert worth_masking(value, named=named) is masked


def test_secret_values_name_their_variable_and_the_user_adds_more() -> None:
    environ = {
        "ACME_API_KEY": "k3y-Value-1",
        "MY_SETTING": "s3tting-value",
        "PATH": "/usr/bin:/bin",
        "DB_PASSWORD": "postgres",
    }
    assert secret_values(environ) == {"k3y-Value-1": "ACME_API_KEY"}
    assert secret_values(environ, ["my_setting"]) == {
        "k3y-Value-1": "ACME_API_KEY",
        "s3tting-value": "MY_SETTING",
    }


# -- masking by value ---------------------------------------------------------------------------


def test_a_value_is_masked_wherever_it_sits_also_url_quoted_and_json_escaped() -> None:
    value = 'Zq8m/N3pL0"vXc7'
    redactor = Redactor(environ={"ACME_TOKEN": value})
    stored = redactor.redact(
        {
            "messages": [{"role": "system", "content": f"use {value} please"}],
            "params": {"endpoint": "https://h/x?t=" + urllib.parse.quote(value, safe="")},
            "args": json.dumps({"token": value}),
        }
    )
    assert value not in json.dumps(stored) and "Zq8m" not in json.dumps(stored)
    assert "<redacted:env:ACME_TOKEN>" in stored["messages"][0]["content"]
    assert [f.kind for f in redactor.find({"x": f"a {value}"})] == ["the value of $ACME_TOKEN"]


def test_a_variable_unset_before_the_save_is_still_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    value = "t0ken-" + rand(12)
    monkeypatch.setenv("ACME_TOKEN", value)
    path = tmp_path / "c.yaml"
    cassette = Cassette(path, mode="record")
    cassette.begin({"kind": "chat", "prompt": "p"}).answer(lambda: "ok")  # recorded while it is set
    monkeypatch.delenv("ACME_TOKEN")  # a test's monkeypatch undone before the cassette saves
    cassette.set_trace([{"id": 1, "parent": None, "name": "tool", "outputs": f"saw {value}"}])
    assert cassette.save()
    assert value not in path.read_text() and "<redacted:env:ACME_TOKEN>" in path.read_text()


def test_allow_secrets_keeps_a_value_the_user_allows() -> None:
    redactor = Redactor(allow=[r"demo-key-\d+"], environ={"DEMO_API_KEY": "demo-key-123"})
    assert redactor.redact_text("demo-key-123") == "demo-key-123"
    assert list(redactor.find("demo-key-123")) == []


def test_a_response_is_stored_masked_and_this_run_gets_the_masked_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "acme-" + rand(20)
    monkeypatch.setenv("ACME_INTERNAL_TOKEN", secret)
    path = tmp_path / "c.yaml"
    request = {"kind": "chat", "messages": [{"role": "user", "content": "what is my token?"}]}
    recorder = Cassette(path, mode="record")
    with pytest.warns(SecretMaskedWarning, match=r"\$ACME_INTERNAL_TOKEN.*replay"):
        live = recorder.begin(request).answer(lambda: f"it is {secret}")
    assert recorder.save()
    assert live == "it is <redacted:env:ACME_INTERNAL_TOKEN>"
    assert secret not in path.read_text()
    assert Cassette(path).begin(request).response == live  # and the replay agrees
    # the key is computed before redaction: the request with the secret still matches
    asked = {"kind": "chat", "messages": [{"role": "user", "content": f"repeat {secret}"}]}
    cassette = Cassette(tmp_path / "k.yaml", mode="record")
    cassette.begin(asked).answer(lambda: "ok")
    cassette.save()
    stored = cassette.interactions[0]
    assert stored.key == key_of(normalize(asked)) and secret not in json.dumps(stored.request)


def test_mode_off_hands_the_response_through_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "acme-" + rand(20)
    monkeypatch.setenv("ACME_INTERNAL_TOKEN", secret)
    cassette = Cassette(tmp_path / "off.yaml", mode="off")
    assert cassette.begin({"kind": "chat", "prompt": "p"}).answer(lambda: secret) == secret


def test_a_stream_that_splits_a_value_across_chunks_is_masked_across_them() -> None:
    secret = "acme-" + rand(20)
    redactor = Redactor(environ={"ACME_TOKEN": secret})
    parts = [secret[:3], secret[3:11], secret[11:] + " done"]
    stream = {
        "chunks": [{"message": {"data": {"content": p, "type": "AIMessageChunk"}}} for p in parts]
    }
    with pytest.warns(SecretMaskedWarning):
        masked = redactor.mask_response(
            {"chunks": [{"x": "before "}, *stream["chunks"]]}, where="c.yaml"
        )
    text = "".join(str(c.get("x") or c["message"]["data"]["content"]) for c in masked["chunks"])
    assert text == "before <redacted:env:ACME_TOKEN> done"
    assert all(c["message"]["data"]["type"] == "AIMessageChunk" for c in masked["chunks"][1:])


def test_redact_env_names_a_variable_the_name_rules_miss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEPLOY_HOOK", "hook-" + rand(10))
    path = tmp_path / "c.yaml"
    cassette = Cassette(path, mode="record", redact_env=["DEPLOY_HOOK"])
    hook = os.environ["DEPLOY_HOOK"]
    cassette.begin({"kind": "chat", "prompt": f"call {hook}"}).answer(lambda: "ok")
    cassette.save()
    assert hook not in path.read_text() and "<redacted:env:DEPLOY_HOOK>" in path.read_text()


# -- the common key formats ---------------------------------------------------------------------


#: (kind, a fresh key of that kind): built when the test runs, so no key is committed and
#: every pytest-xdist worker collects the same test ids.
FORMATS: list[tuple[str, Callable[[], str]]] = [
    ("slack-token", lambda: f"xoxb-{rand(11, string.digits)}-{rand(12, string.digits)}-{rand(24)}"),
    ("slack-webhook", lambda: f"https://hooks.slack.com/services/T{rand(8)}/B{rand(8)}/{rand(24)}"),
    ("gitlab-token", lambda: "glpat-" + rand(19) + "7"),
    ("github-token", lambda: "ghp_" + rand(36)),
    ("github-token", lambda: "ghs_" + rand(36)),
    ("github-fine-grained-token", lambda: "github_pat_" + rand(22) + "_" + rand(59)),
    ("stripe-key", lambda: "sk_live_" + rand(23) + "1"),
    ("stripe-key", lambda: "rk_live_" + rand(23) + "1"),
    ("aws-access-key", lambda: "AKIA" + rand(16, string.ascii_uppercase + string.digits)),
    ("google-key", lambda: "AIza" + rand(35)),
    ("huggingface-token", lambda: "hf_" + rand(34)),
    ("jwt", lambda: f"eyJ{rand(20)}.eyJ{rand(30)}.{rand(40)}"),
    ("npm-token", lambda: "npm_" + rand(36)),
]


@pytest.mark.parametrize(
    ("kind", "make"), FORMATS, ids=[f"{kind}-{n}" for n, (kind, _) in enumerate(FORMATS)]
)
def test_common_key_formats_are_masked_in_requests_and_refused_in_responses(
    kind: str, make: Callable[[], str], tmp_path: Path
) -> None:
    secret = make()
    redactor = Redactor(environ={})
    assert redactor.redact_text(f"key: {secret} end") == f"key: <redacted:{kind}> end"
    path = tmp_path / "c.yaml"
    cassette = Cassette(path, mode="record")
    cassette.begin({"kind": "chat", "prompt": "p"}).answer(lambda: f"here: {secret}")
    with pytest.raises(CassetteSecretError, match=f"{kind} at interactions\\[0\\].response"):
        cassette.save()
    assert not path.exists()


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("api-key: {h}", "azure-key"),
        ('"subscriptionKey": "{h}"', "azure-key"),
        ("AZURE_OPENAI_API_KEY={h}", "azure-key"),
        ("aws_secret_access_key = {a}", "aws-secret-key"),
    ],
)
def test_keys_of_no_prefix_are_found_after_a_key_name(text: str, kind: str) -> None:
    key = rand(32, "0123456789abcdef") if kind == "azure-key" else rand(40, _ALNUM + "/+")
    filled = text.format(h=key, a=key)
    masked = Redactor(environ={}).redact_text(filled)
    before, _, after = filled.partition(key)
    assert masked == f"{before}<redacted:{kind}>{after}"  # the key's name stays readable


def test_a_hash_is_no_azure_key_without_a_key_name() -> None:
    digest = rand(32, "0123456789abcdef")
    for text in (f"md5 {digest}", f"etag: {digest}", f"cache_key: {digest}"):
        assert Redactor(environ={}).redact_text(text) == text


def test_a_private_key_block_is_masked_whole() -> None:
    body = "\n".join(rand(64, _ALNUM + "+/") for _ in range(4))
    text = f"cfg:\n-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----\nok"
    assert Redactor(environ={}).redact_text(text) == "cfg:\n<redacted:private-key>\nok"


def test_new_formats_stay_out_of_keys() -> None:
    """Key rules are another issue's: a Slack token in a prompt changes the key as before."""
    one = {"kind": "chat", "prompt": "xoxb-1234567890-" + "a" * 20}
    other = {"kind": "chat", "prompt": "xoxb-1234567890-" + "b" * 20}
    assert key_of(normalize(one)) != key_of(normalize(other))


# -- the random-token rule ----------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_random_tokens_are_masked_in_stored_copies_only(seed: int) -> None:
    # seeded: the rule lets a few random keys pass as words or low entropy (by design,
    # ``entropy``; about 1 in 70 of 40 characters), so a fresh draw each run would flake
    token = "".join(random.Random(seed).sample(_ALNUM, 40))
    redactor = Redactor(environ={})
    assert redactor.redact_text(f"secret is {token}.") == f"secret is <redacted:{RANDOM_TOKEN}>."
    assert list(redactor.find(f"secret is {token}")) == []  # no proof: it never refuses a save


@pytest.mark.parametrize(
    "text",
    [
        "call_" + "aB3" * 10,  # provider ids name what they are
        "toolu_01" + "Xy9" * 10,
        "chatcmpl-" + "Ab1" * 10,
        "0123456789abcdef" * 4,  # hashes and keys
        "3f9c0a52-e1b7-4c2d-9a1e-5b0e7c1d2a94",
        "getWeatherForecastForCity2024AndNextWeek",  # identifiers and paths
        "AzureChatOpenAIGpt4oMini2024EastUsDeployment",
        "X9kSomethingLikeThisWithNumbers12345abc",
        "tests/cassettes/TestAgent/test_weather_2024_summary",
        "data:image/png;base64," + "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ" * 2,
        "Q" + "Ab1" * 80,  # longer than any key: a vector, a signature
        "wH3UjwlWhT894kMyrYjlPwYirGojJNE/HOlhdUFM3D8=",  # a base64 vector of four float64s
        "raPkn9cJ4z8c4M/4HcbsPyCYk1hG/co/+IusT9khsj9Wrm4mNtDVPw==",
    ],
)
def test_what_a_cassette_holds_legitimately_is_not_random(text: str) -> None:
    assert list(random_tokens(text)) == [], text


def test_opaque_provider_tokens_are_left_alone() -> None:
    signature = "".join(random.SystemRandom().sample(_ALNUM, 60))
    block = {"type": "thinking", "thinking": "hm", "signature": signature}
    assert Redactor(environ={}).redact({"messages": [{"content": [block]}]}) == {
        "messages": [{"content": [block]}]
    }


def test_the_rule_finds_almost_every_random_key() -> None:
    rng = random.Random(7)
    keys = [
        "".join(rng.choice(_ALNUM) for _ in range(n)) for n in (32, 40, 48, 64) for _ in range(250)
    ]
    found = sum(looks_random(k) for k in keys)
    assert found / len(keys) > 0.9


@pytest.mark.parametrize("length", [64, 100, 160, 200])
def test_the_rule_finds_almost_every_long_random_key(length: int) -> None:
    """Random base62 has lowercase runs, more the longer it is: read as words, they let
    9% of 64-character keys and 57% of 160-character ones through."""
    rng = random.Random(length)
    keys = ["".join(rng.choice(_ALNUM) for _ in range(length)) for _ in range(400)]
    assert sum(looks_random(k) for k in keys) / len(keys) > 0.97


#: Recordings of the fake providers (``tests/providers``), whose thinking signatures and
#: encrypted reasoning are random bytes by design: the random-token rule is right about them.
FAKE_PROVIDER_RECORDINGS = ROOT / "tests" / "providers" / "rules_1"


def committed_cassettes() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "*.yaml", "*.json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [ROOT / name for name in listed if (ROOT / name).is_file()]


def strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)] + [str(k) for k in value]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return [value] if isinstance(value, str) else []


def test_the_rules_never_fire_on_the_repository_s_own_cassettes() -> None:
    """The false-positive measurement: every string of every committed cassette, requests,
    responses, metadata and traces alike, through the random-token rule and the redactor."""
    paths = committed_cassettes()
    assert paths, "the repository commits cassettes"
    redactor = Redactor(environ={})
    scanned = fired = 0
    for path in paths:
        document = storage.read(path, storage.detect_format(path))
        assert document is not None
        for interaction in document.interactions:
            assert redactor.redact(interaction["request"]) == interaction["request"], path
            assert redactor.redact(interaction.get("meta") or {}) == (interaction.get("meta") or {})
            assert list(redactor.find(interaction["response"], check_names=False)) == []
        assert redactor.redact(document.trace) == document.trace, path
        if FAKE_PROVIDER_RECORDINGS in path.parents:
            continue  # their signatures are os.urandom: random, rightly (and left alone above)
        for text in strings(json.loads(json.dumps(storage.expanded(document)))):
            scanned += 1
            fired += bool(list(random_tokens(text)))
    assert scanned > 500 and fired == 0


def test_redaction_keeps_its_cost_linear_in_what_it_reads() -> None:
    import time

    request = {"messages": [{"role": "user", "content": "word " * 400} for _ in range(100)]}
    redactor = Redactor(environ={"ACME_TOKEN": "t0k3n-" + rand(10)})
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        redactor.redact(request)
    assert time.perf_counter() - start < 0.5  # 200 KB; about 5 ms on an idle machine


def test_a_refused_response_can_be_stored_redacted_for_a_journal_or_a_finalize() -> None:
    key = "sk-proj-" + rand(30) + "1"
    value = "acme-" + rand(20)
    redactor = Redactor(environ={"ACME_TOKEN": value})
    response = {"generations": [{"text": f"{key} and {value}", "id": "call_" + rand(30)}]}
    assert [f.kind for f in redactor.find(response, check_names=False)] == [
        "the value of $ACME_TOKEN"
    ]
    redacted = redactor.redact_response(response)
    assert list(redactor.find(redacted, check_names=False)) == []
    assert redacted["generations"][0] == {
        "text": "<redacted:openai-key> and <redacted:env:ACME_TOKEN>",
        "id": response["generations"][0]["id"],  # ids are no secrets: nothing else changes
    }


def test_a_secret_used_as_a_field_name_is_masked_and_found_but_never_printed() -> None:
    value = "acme-" + rand(20)
    key = "sk-proj-" + rand(30) + "1"
    redactor = Redactor(environ={"ACME_TOKEN": value})
    assert redactor.redact({"metadata": {value: 1, key: 2, "plain": 3}}) == {
        "metadata": {"<redacted:env:ACME_TOKEN>": 1, "<redacted:openai-key>": 2, "plain": 3}
    }
    with pytest.warns(SecretMaskedWarning):
        masked = redactor.mask_response({"args": {value: 1}}, where="c.yaml")
    assert masked == {"args": {"<redacted:env:ACME_TOKEN>": 1}}
    found = list(redactor.find({"output": {key: {value: 1}}}, check_names=False))
    assert sorted(f.kind for f in found) == ["openai-key", "the value of $ACME_TOKEN"]
    assert all(key not in f.path and value not in f.path for f in found)
    assert redactor.redact_response({"output": {key: 1}}) == {
        "output": {"<redacted:openai-key>": 1}
    }


def test_a_base64_vector_is_told_from_a_random_key() -> None:
    import base64
    import struct

    rng = random.Random(3)
    for dims, code in ((4, "d"), (8, "f"), (16, "f")):
        vector = [rng.uniform(-1, 1) for _ in range(dims)]
        token = base64.b64encode(struct.pack(f"<{dims}{code}", *vector)).decode()
        assert not looks_random(token), token
    keys = [base64.b64encode(rng.randbytes(30)).decode() for _ in range(500)]
    assert sum(looks_random(k) for k in keys) > 450  # random bytes never read as numbers


def test_a_field_name_judged_by_value_only_is_still_judged_by_format() -> None:
    key = "sk-proj-" + rand(30) + "1"
    redactor = Redactor(environ={"ACME_TOKEN": "acme-" + rand(20)})
    assert redactor.mask_values({key: 1}) == {key: 1}  # values only, as a response is masked
    assert redactor.redact({key: 1}) == {"<redacted:openai-key>": 1}


def test_a_key_a_stream_cut_in_pieces_is_found_and_masked_across_them() -> None:
    key = "sk-proj-" + rand(30) + "1"
    text = f"the key: {key}."
    parts = [text[i : i + 4] for i in range(0, len(text), 4)]
    stream = {"chunks": [{"message": {"data": {"content": p}}} for p in parts]}
    redactor = Redactor(environ={})
    found = list(redactor.find(stream, "response", check_names=False))
    assert [(f.path, f.kind) for f in found] == [
        ("response.chunks[*].message.data.content (across chunks)", "openai-key")
    ]
    masked = redactor.redact_response(stream)
    assert "".join(c["message"]["data"]["content"] for c in masked["chunks"]) == (
        "the key: <redacted:openai-key>."
    )
    assert list(redactor.find(masked, "response", check_names=False)) == []


@pytest.mark.parametrize(
    "value", ["pa\\ss-12345678", "pa'ss-12345678", 'pa"ss-12345678', "pä-12345678"]
)
def test_a_value_is_masked_however_json_or_python_quoted_it(value: str) -> None:
    redactor = Redactor(environ={"DB_PASSWORD": value})
    config = {"password": value}
    error = ValueError(f"cannot connect with {config!r}")
    for text in (str(error), repr(error), json.dumps(str(error)), repr(value.encode())):
        assert "12345678" not in redactor.redact_text(text), text


def test_a_key_in_pieces_that_each_hold_the_text_so_far_is_masked_in_every_one() -> None:
    key = "ghp_" + rand(36)
    text = f'{{"token": "{key}"}}'
    stream = {"chunks": [{"arguments": text[:n]} for n in (5, 16, 30, len(text))]}
    redactor = Redactor(environ={})
    assert [f.kind for f in redactor.find(stream, "response", check_names=False)] == [
        "github-token"  # in the last piece, once: the growing pieces are not read joined
    ]
    masked = [c["arguments"] for c in redactor.redact_response(stream)["chunks"]]
    assert masked == [
        '{"tok',
        '{"token": "<redacted:github-token>',
        '{"token": "<redacted:github-token>',
        '{"token": "<redacted:github-token>"}',
    ]
