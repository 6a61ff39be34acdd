"""Where a test's cassette lives: ``<test module dir>/cassettes/<module>/<test>.yaml`` (as
pytest-recording does), or ``<cassette dir>/<module path>/<test>.yaml``. A name that loses
information to sanitizing or capping gets a short hash, so two tests never share a file.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

MAX_NAME_CHARS = 100
HASH_CHARS = 8
SUFFIXES = {"yaml": ".yaml", "json": ".json"}
CASSETTE_SUFFIXES = (".yaml", ".yml", ".json")

_UNSAFE = re.compile(r"[^A-Za-z0-9._\-]+")


def short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_CHARS]


def sanitize(text: str) -> str:
    """``text`` with every run of unsafe characters replaced by ``_``."""
    return _UNSAFE.sub("_", text).strip("_.") or "_"


def test_file_stem(
    name: str, class_names: list[str] | tuple[str, ...] = (), *, unmasked: str | None = None
) -> str:
    """The file name (without suffix) of a test called ``name`` (``test_x[param-id]``).

    ``TestAgent.test_x[gpt-4o-0]``: classes joined with dots, the parametrize id kept
    in brackets. Lossy sanitizing or truncation appends ``-<hash>`` of the original; so
    does ``unmasked``, the name before the secrets in it were masked (the hash is of it:
    two tests whose ids differ by a secret never share a file).
    """
    original = ".".join([*class_names, name if unmasked is None else unmasked])
    base, bracket, param = name.partition("[")
    if bracket and param.endswith("]"):
        param_id = param[:-1]
        stem = ".".join([*(sanitize(c) for c in class_names), sanitize(base)])
        stem = f"{stem}[{sanitize(param_id)}]"
        exact = sanitize(param_id) == param_id
    else:
        stem = ".".join([*(sanitize(c) for c in class_names), sanitize(name)])
        exact = stem == original
    if not exact or unmasked not in (None, name) or len(stem) > MAX_NAME_CHARS:
        tag = f"-{short_hash(original)}"
        stem = stem[: MAX_NAME_CHARS - len(tag)] + tag
    return stem


def module_cassette_dir(module_path: Path, rootdir: Path, cassette_dir: Path | None) -> Path:
    """The folder that holds every cassette of one test module."""
    module_path = Path(module_path)
    if cassette_dir is None:
        return module_path.parent / "cassettes" / module_path.stem
    try:
        relative = module_path.with_suffix("").relative_to(rootdir)
    except ValueError:  # a module outside rootdir: fall back to its name
        relative = Path(module_path.stem)
    return Path(cassette_dir) / relative


def cassette_path(
    module_dir: Path, stem_or_name: str, *, is_name: bool = False, format: str | None = None
) -> Path:
    """The cassette file in ``module_dir``; a marker ``name`` may carry folders and a suffix."""
    if is_name and stem_or_name.lower().endswith(CASSETTE_SUFFIXES):
        return module_dir / stem_or_name
    return module_dir / f"{stem_or_name}{SUFFIXES.get((format or 'yaml').lower(), '.yaml')}"


def owner_module_exists(cassette: Path, record_root: Path, cassette_dir: Path | None) -> bool:
    """Whether some test module could own ``cassette`` under either layout."""
    if cassette_dir is not None and cassette.is_relative_to(cassette_dir):
        parts = cassette.relative_to(cassette_dir).parts[:-1]
        return any(
            (record_root / Path(*parts[:n])).with_suffix(".py").is_file()
            for n in range(1, len(parts) + 1)
        )
    parts = cassette.parts
    if "cassettes" not in parts[:-1]:
        return True  # not in a layout we know: never call it orphaned
    at = len(parts) - 1 - list(reversed(parts[:-1])).index("cassettes") - 1
    folder = Path(*parts[:at])
    return (folder / f"{parts[at + 1]}.py").is_file() if at + 1 < len(parts) - 1 else True
