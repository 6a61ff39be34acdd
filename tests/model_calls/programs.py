"""Programs the tests run in fresh processes: ``python programs.py SCENARIO CASSETTE MODE URL``.

Each prints one JSON line: what the program computed (answers, vectors as exact floats,
the path it took). ``CASSETTE`` ``-`` runs without ``use_cassette`` (for ``chaincassette
run``, which provides the cassette from outside).
"""

from __future__ import annotations

import asyncio
import json
import sys
from contextlib import nullcontext
from typing import Any

from chaincassette import use_cassette

DOCS = [
    "Paris weather today is sunny and mild.",
    "Berlin trains run late on Sundays.",
    "Tokyo ramen shops open at noon.",
    "Lisbon trams climb steep hills daily.",
]
QUESTION = "What is the weather in Paris today?"
KEY = "not-a-real-key"


def lc_rag(url: str) -> dict[str, Any]:
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnablePassthrough
    from langchain_core.vectorstores import InMemoryVectorStore
    from langchain_openai import ChatOpenAI, OpenAIEmbeddings

    embeddings = OpenAIEmbeddings(
        model="text-embedding-3-small",
        base_url=url,
        api_key=KEY,  # type: ignore[arg-type]
        check_embedding_ctx_length=False,
        max_retries=0,
    )
    store = InMemoryVectorStore.from_texts(DOCS, embeddings)
    retriever = store.as_retriever(search_kwargs={"k": 2})
    prompt = ChatPromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")
    model = ChatOpenAI(model="gpt-4o-mini", base_url=url, api_key=KEY, max_retries=0)  # type: ignore[arg-type]

    def join(docs: list[Any]) -> str:
        return "\n".join(d.page_content for d in docs)

    chain = (
        {"context": retriever | join, "question": RunnablePassthrough()}
        | prompt
        | model
        | StrOutputParser()
    )
    answer = chain.invoke(QUESTION)
    async_query = asyncio.run(embeddings.aembed_query("trams in Lisbon"))
    return {
        "answer": answer,
        "stored": sorted((v["text"], v["vector"]) for v in store.store.values()),
        "query": embeddings.embed_query(QUESTION),
        "async_query": async_query,
    }


def li_rag(url: str) -> dict[str, Any]:
    from llama_index.core import Document, Settings, VectorStoreIndex
    from llama_index.embeddings.openai import OpenAIEmbedding
    from llama_index.llms.openai import OpenAI

    Settings.llm = OpenAI(model="gpt-4o-mini", api_base=url, api_key=KEY, max_retries=0)
    Settings.embed_model = OpenAIEmbedding(
        model_name="text-embedding-3-small", api_base=url, api_key=KEY, max_retries=0
    )
    index = VectorStoreIndex.from_documents([Document(text=t) for t in DOCS])
    response = index.as_query_engine(similarity_top_k=2).query(QUESTION)
    stored = index.vector_store.data.embedding_dict  # type: ignore[attr-defined]
    by_text = {
        index.docstore.get_node(node_id).get_content(): vector  # type: ignore[union-attr]
        for node_id, vector in stored.items()
    }
    batch = asyncio.run(Settings.embed_model.aget_text_embedding_batch(["Tokyo", "Berlin"]))
    return {
        "answer": str(response),
        "sources": sorted(n.node.get_content() for n in response.source_nodes),
        "stored": [by_text[t] for t in sorted(by_text)],
        "query": Settings.embed_model.get_query_embedding(QUESTION),
        "async_batch": batch,
    }


class Counter:
    """Counts model starts and errors (the path a run took)."""

    def __init__(self) -> None:
        from langchain_core.callbacks import BaseCallbackHandler

        owner = self
        self.events: list[str] = []

        class Handler(BaseCallbackHandler):
            def on_chat_model_start(self, serialized: Any, messages: Any, **kw: Any) -> None:
                owner.events.append(f"start:{(kw.get('invocation_params') or {}).get('model')}")

            def on_llm_error(self, error: BaseException, **kw: Any) -> None:
                owner.events.append(f"error:{type(error).__name__}")

        self.handler = Handler()


def fallbacks(url: str) -> dict[str, Any]:
    from langchain_openai import ChatOpenAI

    counter = Counter()
    primary = ChatOpenAI(model="primary-model", base_url=url, api_key=KEY, max_retries=0)  # type: ignore[arg-type]
    backup = ChatOpenAI(model="backup-model", base_url=url, api_key=KEY, max_retries=0)  # type: ignore[arg-type]
    chain = primary.with_fallbacks([backup])
    answer = chain.invoke(QUESTION, config={"callbacks": [counter.handler]})
    return {"answer": answer.content, "events": counter.events}


def retry(url: str) -> dict[str, Any]:
    from langchain_openai import ChatOpenAI

    counter = Counter()
    model = ChatOpenAI(model="gpt-4o-mini", base_url=url, api_key=KEY, max_retries=0)  # type: ignore[arg-type]
    retrying = model.with_retry(stop_after_attempt=3, wait_exponential_jitter=False)
    answer = retrying.invoke(QUESTION, config={"callbacks": [counter.handler]})
    return {"answer": answer.content, "events": counter.events}


def agent(url: str) -> dict[str, Any]:
    """A LangGraph agent with an error path: a rate limit routes to ``back_off``."""
    from typing import TypedDict

    import openai
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, StateGraph

    model = ChatOpenAI(model="gpt-4o-mini", base_url=url, api_key=KEY, max_retries=0)  # type: ignore[arg-type]

    class State(TypedDict):
        question: str
        answer: str
        path: list[str]

    def ask(state: State) -> dict[str, Any]:
        try:
            reply = model.invoke(state["question"])
        except openai.RateLimitError as error:
            wait = error.response.headers.get("retry-after")
            return {"answer": f"rate limited: {error} (retry after {wait}s)",
                    "path": [*state["path"], "ask", "rate_limited"]}  # fmt: skip
        return {"answer": str(reply.content), "path": [*state["path"], "ask"]}

    def back_off(state: State) -> dict[str, Any]:
        return {
            "answer": "Sorry, try later. " + state["answer"],
            "path": [*state["path"], "back_off"],
        }

    graph = StateGraph(State)
    graph.add_node("ask", ask)
    graph.add_node("back_off", back_off)
    graph.add_edge(START, "ask")
    graph.add_conditional_edges(
        "ask", lambda s: "back_off" if s["path"][-1] == "rate_limited" else END
    )
    graph.add_edge("back_off", END)
    result = graph.compile().invoke({"question": QUESTION, "answer": "", "path": []})
    return {"answer": result["answer"], "path": result["path"]}


def completion_stream(url: str) -> dict[str, Any]:
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_openai import OpenAI

    tokens: list[str] = []

    class Tokens(BaseCallbackHandler):
        def on_llm_new_token(self, token: str, **kw: Any) -> None:
            tokens.append(token)

    llm = OpenAI(model="gpt-3.5-turbo-instruct", base_url=url, api_key=KEY, max_retries=0)  # type: ignore[arg-type]
    chunks = list(llm.stream("Tell me: Paris weather today?", config={"callbacks": [Tokens()]}))

    async def astream() -> list[str]:
        return [c async for c in llm.astream("Tell me: Berlin trains late?")]

    return {"chunks": chunks, "tokens": tokens, "async_chunks": asyncio.run(astream())}


SCENARIOS = {
    "lc_rag": lc_rag,
    "li_rag": li_rag,
    "fallbacks": fallbacks,
    "retry": retry,
    "agent": agent,
    "completion_stream": completion_stream,
}


def main() -> None:
    scenario, cassette, mode, url = sys.argv[1:5]
    block = nullcontext() if cassette == "-" else use_cassette(cassette, mode=mode)
    with block:
        result = SCENARIOS[scenario](url)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
