"""A recorded call's one redaction pass (``RecordingScan``) finds and masks exactly what the
separate passes do: the response's JSON text is sought at once, and a response is walked
only where that text shows a secret value or a known format's literal."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from chaincassette.canonical import json_copy_text
from chaincassette.redact import RecordingScan, Redactor, SecretMaskedWarning

KEY = "sk-proj-" + "Ab3dEfGh1jKlMnOpQrStUvWx"
REQUEST = {"kind": "chat", "messages": [{"role": "user", "content": "hi"}], "api_key": "x" * 9}
META = {"framework": "test", "tokens": 3}


def _message(content: Any) -> dict[str, Any]:
    return {"generations": [{"message": {"type": "ai", "data": {"content": content}}}]}


VALUES = {
    "plain": "Zq8mN3pL0vXc7Rt2",
    "quote": 'Zq8m/N3pL0"vXc7',
    "backslash": "Zq8m\\N3pL0vXc7",
    "tab": "Zq8m\tN3pL0vXc7xx",
    "accent": "Zq8méN3pL0vXc7",
    "accent and quote": 'Zq8mé"N3pL0vXc7',
}

RESPONSES: dict[str, Any] = {
    "nothing": _message("Paris is sunny today, 21 °C."),
    "a value": _message("your token is {value}, keep it"),
    "a value in a list": {"llm_output": {"ids": ["a", "b {value}"]}, "n": 1},
    "a value as a whole string": _message("{value}"),
    "a key format": _message(f"the key is {KEY}"),
    "a key format deep down": {"a": [{"b": [{"c": f"x {KEY} y"}]}]},
    "an aws key": _message("AKIAABCDEFGHIJKLMNOP is it"),
    "a private key": _message(
        "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----"
    ),
    "a url credential": _message("see https://h/x?api_key=abcdefgh1234 now"),
    "a key and a value": _message(f"{KEY} and {{value}}"),
    "a stream splitting a value": {"chunks": []},  # its chunks: ``_split``
}


def _filled(value: Any, secret: str) -> Any:
    if isinstance(value, dict):
        return {k: _filled(v, secret) for k, v in value.items()}
    if isinstance(value, list):
        return [_filled(v, secret) for v in value]
    return value.replace("{value}", secret) if isinstance(value, str) else value


def _split(response: Any, secret: str) -> Any:
    """A stream's chunks with the secret cut across them."""
    if "chunks" not in response:
        return _filled(response, secret)
    parts = ["pre " + secret[:4], secret[4:9], secret[9:] + " post"]
    return {"chunks": [{"message": {"data": {"content": p}}} for p in parts]}


def _separate(redactor: Redactor, response: Any) -> tuple[Any, ...]:
    copy, _ = json_copy_text(response)
    masked = redactor.mask_response(copy, where="c.yaml")
    return (masked, *redactor.stored(REQUEST, META, masked))


def _one_pass(redactor: Redactor, response: Any) -> tuple[Any, ...]:
    copy, text = json_copy_text(response)
    scan = RecordingScan(redactor, text)
    masked = scan.mask_response(copy, where="c.yaml")
    return (masked, *scan.stored(REQUEST, META, masked))


def _outcome(run: Any, redactor: Redactor, response: Any) -> tuple[Any, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run(redactor, response)
    # the redactor's own warnings only: another test's socket may be collected meanwhile
    return result, [str(w.message) for w in caught if issubclass(w.category, SecretMaskedWarning)]


@pytest.mark.parametrize("shape", list(RESPONSES))
@pytest.mark.parametrize("spelling", list(VALUES))
@pytest.mark.parametrize(
    "options",
    [{}, {"extra_patterns": [r"Zq8m\S*"]}, {"allow": [r"sk-proj-\w+"]}],
    ids=["defaults", "a user pattern", "an allowed key"],
)
def test_one_pass_finds_and_masks_what_the_separate_passes_do(
    shape: str, spelling: str, options: dict[str, Any]
) -> None:
    secret = VALUES[spelling]
    response = _split(RESPONSES[shape], secret)
    redactor = Redactor(environ={"ACME_TOKEN": secret}, **options)
    expected = _outcome(_separate, redactor, response)
    assert _outcome(_one_pass, redactor, response) == expected
    no_env = Redactor(environ={}, **options)
    assert _outcome(_one_pass, no_env, response) == _outcome(_separate, no_env, response)


def test_a_response_holding_a_key_format_is_found_by_the_one_pass() -> None:
    copy, text = json_copy_text(_message(f"the key is {KEY}"))
    scan = RecordingScan(Redactor(environ={}), text)
    masked = scan.mask_response(copy)
    assert masked is copy  # nothing to mask: the caller's fresh copy is kept
    assert [f.kind for f in scan.stored(REQUEST, META, masked)[2]] == ["openai-key"]


def test_each_pass_reads_the_variables_again_names_and_values() -> None:
    """The secret variables' names are judged again only when the names change, but every
    pass sees a variable set, changed or unset since the last one."""
    environ = {"PATH": "/bin", "HOME": "/root"}
    redactor = Redactor(environ=environ)
    assert redactor.redact_text("t0ken-Aa1bb2cc3dd") == "t0ken-Aa1bb2cc3dd"
    environ["ACME_TOKEN"] = "t0ken-Aa1bb2cc3dd"  # a new name
    assert redactor.redact_text("t0ken-Aa1bb2cc3dd") == "<redacted:env:ACME_TOKEN>"
    environ["ACME_TOKEN"] = "s3cond-Zz9yy8xx7"  # the same names, another value
    assert redactor.redact_text("s3cond-Zz9yy8xx7") == "<redacted:env:ACME_TOKEN>"
    del environ["ACME_TOKEN"]
    environ["OTHER_PASSWORD"] = "th1rd-Qq5ww4ee3"  # as many names, one of them new
    assert redactor.redact_text("th1rd-Qq5ww4ee3") == "<redacted:env:OTHER_PASSWORD>"
    assert redactor.redact_text("s3cond-Zz9yy8xx7") == "<redacted:env:ACME_TOKEN>"  # seen once
