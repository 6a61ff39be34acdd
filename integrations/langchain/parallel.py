"""The ``RunnableParallel`` branch a call is made in, named the same in every run.

``RunnableParallel`` tags each step's run ``map:key:<name>``, and only that run (the tag is
not inherited): a model call inside ``prompt | llm`` sees the sequence's config, not the
tag. So the trace handler, which sees every run start with its parent and tags, keeps each
run's keys from the outermost parallel down (``MapPaths``); a call reads those of the run
it is made in. Run ids are only looked up, never stored: they are new each run.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from langchain_core.runnables.config import var_child_runnable_config

MAP_KEY = "map:key:"


def map_keys(tags: list[str] | None, inherited: list[str] | None = None) -> tuple[str, ...]:
    """The parallel keys a run's own ``tags`` name (those it inherited name its parents')."""
    if not tags:
        return ()
    return tuple(
        t[len(MAP_KEY) :] for t in tags if t.startswith(MAP_KEY) and t not in (inherited or ())
    )


class MapPaths:
    """The parallel keys above each run of one capture that has any (runs start after their
    parent, so a run's path is complete when it starts; one write per run, reads lock-free)."""

    __slots__ = ("_paths",)

    def __init__(self) -> None:
        self._paths: dict[int, tuple[str, ...]] = {}

    def start(self, run: int, parent: int | None, tags: list[str] | None) -> None:
        """Note run ``run`` (child of ``parent``) and the keys its tags add."""
        path = self._paths.get(parent, ()) if parent is not None else ()
        for tag in tags or ():  # runs by the hundred: no generator for their few tags
            if tag.startswith(MAP_KEY):
                path += (tag[len(MAP_KEY) :],)
        if path:
            self._paths[run] = path

    def of(self, run: UUID | None) -> tuple[str, ...]:
        return self._paths.get(run.int, ()) if run is not None else ()


def branch(paths: MapPaths | None) -> str | None:
    """The parallel keys above the code running now (``outer/inner``), ``None`` outside any.
    LangChain's ``var_child_runnable_config`` holds the config the running runnable gives
    its children: its callback manager names that run (``parent_run_id``) and, directly
    in a parallel's step, carries the step's own ``map:key`` tag."""
    config = var_child_runnable_config.get()
    manager: Any = config.get("callbacks") if config else None
    if manager is None or isinstance(manager, list):
        return None
    own = map_keys(getattr(manager, "tags", None), getattr(manager, "inheritable_tags", None))
    above = paths.of(getattr(manager, "parent_run_id", None)) if paths is not None else ()
    path = above + own
    return "/".join(path) if path else None
