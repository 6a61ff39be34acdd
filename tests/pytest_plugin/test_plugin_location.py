"""Where a test's cassette lives: names, sanitizing, the length cap, the two layouts."""

from __future__ import annotations

import hashlib
from pathlib import Path

from chaincassette.integrations.pytest_plugin import location


def test_plain_and_class_names_are_kept() -> None:
    assert location.test_file_stem("test_agent") == "test_agent"
    assert (
        location.test_file_stem("test_agent", ["TestOuter", "TestInner"])
        == "TestOuter.TestInner.test_agent"
    )


def test_parametrize_id_kept_in_brackets_when_safe() -> None:
    assert location.test_file_stem("test_x[gpt-4o-0.5]") == "test_x[gpt-4o-0.5]"


def test_unsafe_ids_are_sanitized_and_hashed_so_they_cannot_collide() -> None:
    a = location.test_file_stem("test_x[What is Docker?]")
    b = location.test_file_stem("test_x[What is Docker!]")
    assert a.startswith("test_x[What_is_Docker]-") and b.startswith("test_x[What_is_Docker]-")
    assert a != b
    assert "/" not in location.test_file_stem("test_x[a/../../b]")
    # the hash is of the original name, so it is the same in every process and run
    digest = hashlib.sha256(b"test_x[a/b]").hexdigest()[:8]
    assert location.test_file_stem("test_x[a/b]") == f"test_x[a_b]-{digest}"


def test_long_names_are_capped_with_a_hash() -> None:
    one = location.test_file_stem(f"test_x[{'a' * 300}]")
    two = location.test_file_stem(f"test_x[{'a' * 299}b]")
    assert len(one) == location.MAX_NAME_CHARS and len(two) == location.MAX_NAME_CHARS
    assert one != two


def test_default_layout_is_beside_the_module(tmp_path: Path) -> None:
    module = tmp_path / "tests" / "test_agent.py"
    folder = location.module_cassette_dir(module, tmp_path, None)
    assert folder == tmp_path / "tests" / "cassettes" / "test_agent"
    assert location.cassette_path(folder, "test_one") == folder / "test_one.yaml"
    assert location.cassette_path(folder, "test_one", format="json") == folder / "test_one.json"


def test_cassette_dir_layout_mirrors_module_paths(tmp_path: Path) -> None:
    module = tmp_path / "tests" / "unit" / "test_agent.py"
    root = tmp_path / "recordings"
    folder = location.module_cassette_dir(module, tmp_path, root)
    assert folder == root / "tests" / "unit" / "test_agent"


def test_marker_names_may_carry_folders_and_suffixes(tmp_path: Path) -> None:
    assert (
        location.cassette_path(tmp_path, "shared/agent", is_name=True)
        == tmp_path / "shared/agent.yaml"
    )
    assert location.cassette_path(tmp_path, "agent.json", is_name=True) == tmp_path / "agent.json"
