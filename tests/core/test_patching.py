"""Shared, use-counted class patches: the last of overlapping users restores everything."""

from __future__ import annotations

import pytest

from chaincassette.patching import SharedPatches, all_subclasses


class Base:
    def hello(self) -> str:
        return "base"


class Child(Base):
    pass


class GrandChild(Child):
    def hello(self) -> str:
        return "grandchild"


def test_the_last_user_restores_own_and_missing_attributes() -> None:
    def apply(patches: SharedPatches) -> None:
        patches.replace(Base, "hello", lambda self: "patched")
        patches.replace(Child, "hello", lambda self: "patched child")  # Child had none of its own

    patches = SharedPatches(apply)
    with patches.installed():
        with patches.installed():  # an overlapping block
            assert Child().hello() == "patched child" and patches.users == 2
        assert Base().hello() == "patched" and patches.active  # the other block still needs it
    assert not patches.active
    assert Base().hello() == "base" and Child().hello() == "base"
    assert "hello" not in Child.__dict__


def test_a_failing_apply_leaves_nothing_patched() -> None:
    def apply(patches: SharedPatches) -> None:
        patches.replace(Base, "hello", lambda self: "half done")
        raise RuntimeError("boom")

    patches = SharedPatches(apply)
    with pytest.raises(RuntimeError):
        patches.install()
    assert Base().hello() == "base" and not patches.active


def test_all_subclasses_at_any_depth() -> None:
    assert set(all_subclasses(Base)) == {Child, GrandChild}
