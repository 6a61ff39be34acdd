"""Embedding replay per call: chaincassette against LangChain's ``CacheBackedEmbeddings``.

``.venv/bin/python benchmarks/bench_embeddings.py``. Every variant serves the same texts
from the same 1,536-dimension float32 vectors, all in one run (``interleaved_medians``):

- **no cache (floor)**: ``FixedEmbeddings``, an ``Embeddings`` that at once returns
  precomputed vectors: what any cache adds sits on top of this;
- **CacheBackedEmbeddings**: ``CacheBackedEmbeddings.from_bytes_store`` over an
  ``InMemoryByteStore`` (``query_embedding_cache=True``, SHA-256 keys), warmed, hit on
  every call;
- **use_cassette**: the calls of ``FixedEmbeddings`` recorded once, replayed inside a
  ``use_cassette(..., mode="replay", allow_playback_repeats=True)`` block (class-level
  interception, vectors decoded from base64 every call);
- **CassetteEmbeddings**: the explicit wrapper over the same cassette.
"""

from __future__ import annotations

import random
import struct
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from _timing import Variant, fmt, interleaved_medians, table
from langchain_classic.embeddings import CacheBackedEmbeddings
from langchain_core.embeddings import Embeddings
from langchain_core.stores import InMemoryByteStore

from chaincassette import Cassette, use_cassette
from chaincassette.integrations.langchain import CassetteEmbeddings

DIMENSIONS = 1536
TEXTS = [f"document number {i} about topic {i % 7}" for i in range(16)]
QUERY = "which document is about topic 3?"


def _float32(value: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


VECTORS = {
    text: [_float32(random.gauss(0, 0.05)) for _ in range(DIMENSIONS)] for text in [*TEXTS, QUERY]
}


class FixedEmbeddings(Embeddings):
    """A provider that answers at once with precomputed vectors (the floor)."""

    model = "text-embedding-3-small"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [list(VECTORS[t]) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return list(VECTORS[text])


def workloads() -> dict[str, Callable[[Embeddings], object]]:
    return {
        "embed_query": lambda model: model.embed_query(QUERY),
        "embed_documents (1 text)": lambda model: model.embed_documents(TEXTS[:1]),
        "embed_documents (16 texts)": lambda model: model.embed_documents(TEXTS),
    }


def record(path: Path) -> None:
    with use_cassette(path, mode="record"):
        for run in workloads().values():
            run(FixedEmbeddings())


def variants(path: Path, run: Callable[[Embeddings], object]) -> dict[str, Variant]:
    @contextmanager
    def floor() -> Iterator[Callable[[], object]]:
        model = FixedEmbeddings()
        yield lambda: run(model)

    @contextmanager
    def cache_backed() -> Iterator[Callable[[], object]]:
        model = CacheBackedEmbeddings.from_bytes_store(
            FixedEmbeddings(),
            InMemoryByteStore(),
            namespace="text-embedding-3-small",
            query_embedding_cache=True,
            key_encoder="sha256",
        )
        run(model)  # warm: every timed call is a hit
        yield lambda: run(model)

    @contextmanager
    def block() -> Iterator[Callable[[], object]]:
        model = FixedEmbeddings()
        with use_cassette(path, mode="replay", allow_playback_repeats=True):
            yield lambda: run(model)

    @contextmanager
    def wrapper() -> Iterator[Callable[[], object]]:
        cassette = Cassette(path, mode="replay", allow_playback_repeats=True)
        model = CassetteEmbeddings(FixedEmbeddings(), cassette=cassette)
        yield lambda: run(model)

    return {
        "no cache (floor)": floor,
        "CacheBackedEmbeddings (InMemoryByteStore)": cache_backed,
        "use_cassette (replay)": block,
        "CassetteEmbeddings (replay)": wrapper,
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        path = Path(tmp_name) / "embeddings.yaml"
        record(path)
        size = path.stat().st_size
        vectors = len(TEXTS) + 2
        print("## Embedding replay per call (1,536-dimension float32 vectors)\n")
        names: list[str] = []
        columns: dict[str, dict[str, float]] = {}
        for workload, run in workloads().items():
            times = interleaved_medians(variants(path, run), repeat=9, number=100)
            columns[workload] = times
            names = list(times)
        header = ["variant", *columns, *(f"÷ CacheBacked ({w})" for w in columns)]
        rows = []
        for name in names:
            row = [name, *(fmt(columns[w][name]) for w in columns)]
            base = "CacheBackedEmbeddings (InMemoryByteStore)"
            row += [f"{columns[w][name] / columns[w][base]:.2f}x" for w in columns]
            rows.append(row)
        print(table(header, rows))
        print(
            f"\ncassette: {vectors} vectors in {size:,} bytes of YAML "
            f"({size / vectors:,.0f} bytes per vector with its request; the vector itself is "
            f"{4 * DIMENSIONS:,} bytes, {len(__import__('base64').b64encode(bytes(4 * DIMENSIONS)))} "
            "base64 characters)"
        )


if __name__ == "__main__":
    main()
