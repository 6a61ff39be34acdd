"""No private member of another object, unless listed here with its reason (``make lint``).

Every LangChain or LlamaIndex upgrade may change what is private; what chaincassette
relies on is this list. Found: an attribute ``x._name`` read on anything but ``self``/
``cls``; ``getattr``/``setattr``/``hasattr``/``delattr`` of a ``"_name"``; a ``"_name"`` in
a module-level constant (the method names a patch wraps). Exits non-zero on a use the list
does not hold, and on an entry no code uses any more.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROVIDER_METHODS = "the provider methods a chat model implements: LangChain's documented "
PROVIDER_METHODS += "extension points, and the only place a streamed call can be served"

SDK_PARSE = "the SDK's own last parsing step (a resource's client, its _process_response_data):"
SDK_PARSE += " a recorded answer becomes the SDK's own object exactly as a live one does"

#: (file, name): why it is used.
ALLOWED: dict[tuple[str, str], str] = {
    ("core/error_codec.py", "_pytest"): (
        "a module name, not a member: pytest's outcome exceptions live in _pytest, and are "
        "control flow, never a recorded error"
    ),
    ("integrations/langchain/boundary.py", "_generate"): PROVIDER_METHODS,
    ("integrations/langchain/boundary.py", "_agenerate"): PROVIDER_METHODS,
    ("integrations/langchain/boundary.py", "_stream"): PROVIDER_METHODS,
    ("integrations/langchain/boundary.py", "_astream"): PROVIDER_METHODS,
    ("integrations/langchain/boundary.py", "_get_llm_string"): (
        "the string LangChain keys a model call by (model class, its fields, the call's "
        "arguments): the keys of committed cassettes are read from it"
    ),
    ("integrations/langchain/completion_streams.py", "_stream"): (
        "the provider methods a completion LLM implements (documented extension points)"
    ),
    ("integrations/langchain/completion_streams.py", "_astream"): (
        "the provider methods a completion LLM implements (documented extension points)"
    ),
    ("integrations/langchain/completions.py", "_generate_helper"): (
        "BaseLLM runs the prompts no cache answered here: its only per-prompt hook "
        "(providers' _generate takes a whole batch)"
    ),
    ("integrations/langchain/completions.py", "_agenerate_helper"): (
        "BaseLLM's async per-prompt hook, as _generate_helper"
    ),
    ("integrations/langchain/tools.py", "_format_output"): (
        "where BaseTool.run turns a tool's outcome into its output: the one place its raw "
        "content, artifact and status meet"
    ),
    ("integrations/langchain/tools.py", "_filter_injected_args"): (
        "the arguments LangChain itself reports to callbacks (injected state and "
        "tool_call_id left out): a tool's key must not hold them"
    ),
    ("integrations/llama_index/activation.py", "_llm"): (
        "Settings.llm builds OpenAI's default LLM when none is set, and its setter gives the "
        "LLM the global callback manager: _llm reads and writes the setting as it is"
    ),
    ("integrations/llama_index/boundary.py", "_prepare_chat_with_tools"): (
        "FunctionCallingLLM's hook that providers implement to shape a tool call: the only "
        "place the provider-neutral tools and messages of the call are known"
    ),
    ("integrations/llama_index/embeddings.py", "_get_query_embedding"): (
        "the provider methods a BaseEmbedding implements (LlamaIndex's documented extension points)"
    ),
    ("integrations/llama_index/embeddings.py", "_aget_query_embedding"): "as _get_query_embedding",
    ("integrations/llama_index/embeddings.py", "_get_text_embedding"): "as _get_query_embedding",
    ("integrations/llama_index/embeddings.py", "_aget_text_embedding"): "as _get_query_embedding",
    ("integrations/llama_index/embeddings.py", "_get_text_embeddings"): "as _get_query_embedding",
    ("integrations/llama_index/embeddings.py", "_aget_text_embeddings"): "as _get_query_embedding",
    ("integrations/llama_index/llm.py", "_prepare_chat_with_tools_compat"): (
        "FunctionCallingLLM's tool-call hooks, forwarded to the wrapped LLM, whose own they are"
    ),
    ("integrations/llama_index/llm.py", "_validate_chat_with_tools_response"): (
        "FunctionCallingLLM's tool-call hooks, forwarded to the wrapped LLM, whose own they are"
    ),
    ("integrations/sdk/retries.py", "_sleep_for_retry"): (
        "the SDKs' sleep between attempts, with no public hook: put off after a replayed attempt, "
        "waited only before a live one (a replayed connection error has no retry-after to shorten)"
    ),
    ("integrations/sdk/methods.py", "_client"): SDK_PARSE,
    ("integrations/sdk/methods.py", "_process_response_data"): SDK_PARSE,
    ("integrations/sdk/methods.py", "_request_id"): (
        "the request id an SDK sets on a parsed answer from its response header: replay sets it "
        "as the SDK does"
    ),
    ("integrations/sdk/methods.py", "_workspace_id"): (
        "Anthropic's workspace id, set on a parsed answer as its SDK does"
    ),
}
_ACCESSORS = frozenset({"getattr", "setattr", "hasattr", "delattr"})


def _private(name: object) -> bool:
    return isinstance(name, str) and name.startswith("_") and not name.startswith("__")


def uses(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            if ast.unparse(node.value) not in ("self", "cls", "super()"):
                found.add(node.attr)
        elif (
            isinstance(node, ast.Call)
            and ast.unparse(node.func) in _ACCESSORS
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and _private(node.args[1].value)
        ):
            found.add(node.args[1].value)
    for statement in tree.body:  # module-level constants: the names of patched members
        if isinstance(statement, ast.Assign) and all(
            isinstance(t, ast.Name) and t.id.isupper() for t in statement.targets
        ):
            for node in ast.walk(statement.value):
                if isinstance(node, ast.Constant) and _private(node.value):
                    found.add(node.value)
    return found


def main() -> int:
    seen: set[tuple[str, str]] = set()
    problems = []
    for folder in ("core", "integrations"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            for name in sorted(uses(path)):
                seen.add((relative, name))
                if (relative, name) not in ALLOWED:
                    problems.append(f"{relative}: uses the private member {name!r}, not listed")
    for entry in sorted(set(ALLOWED) - seen):
        problems.append(f"{entry[0]}: {entry[1]!r} is listed but no longer used")
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
