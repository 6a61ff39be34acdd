"""Class patches made once per process and put back exactly by ``undo``/``undo_all``."""

from __future__ import annotations

import pytest

from chaincassette.patching import Patches, all_subclasses, undo_all, watch_subclasses


class Base:
    def hello(self) -> str:
        return "base"


class Child(Base):
    pass


class GrandChild(Child):
    def hello(self) -> str:
        return "grandchild"


def test_install_applies_once_and_undo_restores_own_and_missing_attributes() -> None:
    applied = []

    def apply(patches: Patches) -> None:
        applied.append(1)
        patches.replace(Base, "hello", lambda self: "patched")
        patches.replace(Child, "hello", lambda self: "patched child")  # Child had none of its own

    patches = Patches(apply)
    patches.install()
    patches.install()  # a second block, a second cache: nothing more to do
    assert applied == [1] and patches.active
    assert Base().hello() == "patched" and Child().hello() == "patched child"
    patches.undo()
    assert not patches.active
    assert Base().hello() == "base" and Child().hello() == "base"
    assert "hello" not in Child.__dict__
    patches.install()  # after an undo, the next user installs them again
    assert applied == [1, 1] and Base().hello() == "patched"
    undo_all()
    assert Base().hello() == "base" and not patches.active


def test_a_failing_apply_leaves_nothing_patched() -> None:
    def apply(patches: Patches) -> None:
        patches.replace(Base, "hello", lambda self: "half done")
        raise RuntimeError("boom")

    patches = Patches(apply)
    with pytest.raises(RuntimeError):
        patches.install()
    assert Base().hello() == "base" and not patches.active


def test_classes_defined_after_the_install_are_wrapped_until_the_undo() -> None:
    class Root:
        def hello(self) -> str:
            return "root"

    class Early(Root):
        def hello(self) -> str:
            return "early"

    def wrap(cls: type) -> None:
        patches.wrap_methods(cls, ["hello"], lambda name, f: lambda self: f"wrapped {f(self)}")

    patches = Patches(lambda p: watch_subclasses(p, Root, wrap, hook="__init_subclass__"))
    patches.install()

    class Late(Root):
        def hello(self) -> str:
            return "late"

    assert Early().hello() == "wrapped early" and Late().hello() == "wrapped late"
    assert Root().hello() == "root"  # the base is no subclass of itself
    patches.undo()
    assert Early().hello() == "early" and Late().hello() == "late"
    assert "__init_subclass__" not in Root.__dict__

    class AfterUndo(Root):
        def hello(self) -> str:
            return "after"

    assert AfterUndo().hello() == "after"


def test_all_subclasses_at_any_depth() -> None:
    assert set(all_subclasses(Base)) == {Child, GrandChild}
