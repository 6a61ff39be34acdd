"""The canonical request of a chat call, from the model object where its llm_string is silent.

LangChain's ``llm_string`` holds a model's serialized constructor, but only for models that
are lc-serializable; for the others it holds ``asdict()``, which is ``_identifying_params``
plus ``_type`` — and ChatOllama identifies itself by nothing more, so its key once said
``model: chat-ollama`` whatever the model and temperature (issue 27). Key rules 2 complete
such a request from the model's public pydantic fields: each one set to something other
than its default (as LangChain's own serialization keeps them), less what every chat model
has (callbacks, cache, tags…), client and transport settings, secrets, and defaults made
afresh for each instance (ids). Parameters of the call itself (``invoke(..., temperature=…)``)
win over the model's.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import FakeListChatModel, FakeMessagesListChatModel
from langchain_core.language_models.chat_models import BaseChatModel
from pydantic import SecretBytes, SecretStr
from pydantic.fields import FieldInfo

from chaincassette.cassette import Earlier
from chaincassette.keyrules import is_client_setting

from .messages import canonical_messages
from .requests import MODEL_NAME_FIELDS, TOP_LEVEL_FIELDS, ModelFields, chat_request, plain_value

#: Fields every chat model has: how LangChain runs it, never what the model reads.
FRAMEWORK_FIELDS = frozenset(BaseChatModel.model_fields)
#: Fields that configure how a client is built or checks the server.
CLIENT_FIELD_WORDS = frozenset({"client", "validate"})
#: Fields that name the model although their name reads like a client setting: a SageMaker
#: endpoint is the deployed model (rules 1 left it out of the key with every endpoint).
MODEL_IDENTITY_FIELDS = ("endpoint_name",)
#: Provider packages whose client sends tool results without the ids of the calls they
#: answer, so the provider matches them by position and their order is what the model
#: reads: ``_convert_messages_to_ollama_messages`` and Gemini's ``function_response`` parts.
POSITIONAL_RESULTS = ("langchain_ollama", "langchain_google_genai")


#: Fields LangChain's scripted fakes move on every call (their place in the script): state,
#: not what the model reads, so never keyed (a replay never calls the model, and the field
#: would stay where it started). A fake of a program's own that counts its calls in a field
#: gets a miss naming it, whose hint is ``ignore=["params.<field>"]``.
STATE_FIELDS: tuple[tuple[type[BaseChatModel], frozenset[str]], ...] = (
    (FakeListChatModel, frozenset({"i"})),
    (FakeMessagesListChatModel, frozenset({"i"})),
)


def model_request(
    model: BaseChatModel,
    messages: Any,
    llm_string: str,
    fields: ModelFields | None,
    *,
    stream: bool,
) -> tuple[dict[str, Any], Earlier | None]:
    """(the canonical request of one chat call, how key rules 1 built it when they built it
    otherwise: ``Cassette.begin``'s ``earlier``)."""
    request = chat_request(canonical_messages(messages), llm_string, fields, stream=stream)
    before = None
    if names_no_model(request):
        before = request
        request = with_own_fields(request, own_fields(model))
    if type(model).__module__.split(".", 1)[0] in POSITIONAL_RESULTS:
        request["tool_result_ids"] = False
    if before is None:
        return request, None

    def earlier(rules: int) -> dict[str, Any] | None:
        return before if rules < 2 else None

    return request, earlier


def across_streaming(earlier: Earlier | None) -> Earlier | None:
    """``earlier`` for a cassette that serves streamed and whole answers alike (no ``stream``)."""
    if earlier is None:
        return None

    def without_stream(rules: int) -> dict[str, Any] | None:
        before = earlier(rules)
        return None if before is None else {k: v for k, v in before.items() if k != "stream"}

    return without_stream


def names_no_model(request: dict[str, Any]) -> bool:
    """Whether the llm_string named no model: LangChain then gave its ``_type`` instead."""
    params = request.get("params")
    kind = params.get("_type") if isinstance(params, dict) else None
    return kind is not None and request.get("model") == kind


def with_own_fields(request: dict[str, Any], own: dict[str, Any]) -> dict[str, Any]:
    """``request`` (not changed) completed by the model's own fields (``own_fields``, not
    changed either): its name, and every parameter the call itself did not set."""
    own = dict(own)
    out = {**request, "params": dict(request.get("params") or {})}
    for name in (*MODEL_NAME_FIELDS, *MODEL_IDENTITY_FIELDS):
        value = own.pop(name, None)
        if isinstance(value, str) and value and out["model"] == request["model"]:
            out["model"] = value
    for name, value in own.items():
        holder = out if name in TOP_LEVEL_FIELDS else out["params"]
        holder.setdefault(name, value)
    return out


def own_fields(model: BaseChatModel) -> dict[str, Any]:
    """The model's answer-changing fields set to other than their defaults, as JSON."""
    out: dict[str, Any] = {}
    state = {n for kind, names in STATE_FIELDS if isinstance(model, kind) for n in names}
    for name, info in type(model).model_fields.items():
        if (
            name in state
            or name in FRAMEWORK_FIELDS
            or (_client_field(name) and name not in MODEL_IDENTITY_FIELDS)
        ):
            continue
        value = getattr(model, name, None)
        if value is None or isinstance(value, (SecretStr, SecretBytes)):
            continue
        if name not in model.model_fields_set and _new_for_each_instance(info):
            continue
        if info.is_required() or value != info.get_default(call_default_factory=True):
            out[name] = plain_value(value)
    return out


def _new_for_each_instance(info: FieldInfo) -> bool:
    """Whether the field's default is made afresh and differs each time (an id): a value no
    other process can give again, so keying it would make the recording unreachable."""
    if info.default_factory is None:
        return False
    return bool(
        info.get_default(call_default_factory=True) != info.get_default(call_default_factory=True)
    )


def _client_field(name: str) -> bool:
    return is_client_setting(name) or not CLIENT_FIELD_WORDS.isdisjoint(name.lower().split("_"))
