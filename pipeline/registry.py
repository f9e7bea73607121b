"""Strategies by name: a context selection, an ordering, a fusion or a chunker registers itself
in its own module, so adding one is adding one file (and its test).

A :class:`Registry` knows the package its strategies live in and imports every module of it
on the first lookup; each module registers its strategy with ``@REGISTRY.register("name")``.
The settings check a configured name against the registry, so a new strategy is a valid
setting, a CLI choice and a row of ``docs/configuration.md`` without touching any other file.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """The strategies of one ``kind``, registered by the modules of ``package``."""

    def __init__(self, kind: str, package: str) -> None:
        self.kind = kind
        self.package = package
        self._entries: dict[str, T] = {}
        self._loaded = False
        self._lock = threading.RLock()  # a strategy module may look another up while it loads

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: register the decorated strategy under ``name``."""

        def add(entry: T) -> T:
            if name in self._entries and self._entries[name] is not entry:
                raise ValueError(f"two {self.kind} strategies are named {name!r}")
            self._entries[name] = entry
            return entry

        return add

    def names(self) -> tuple[str, ...]:
        """Every registered name, alphabetical."""
        self._load()
        return tuple(sorted(self._entries))

    def __getitem__(self, name: str) -> T:
        self._load()
        if name not in self._entries:
            raise ValueError(f"unknown {self.kind} {name!r}; choose one of {', '.join(self.names())}")
        return self._entries[name]

    def check(self, name: str) -> str:
        """``name`` if a strategy has it (for settings validators), else :class:`ValueError` naming them."""
        self[name]
        return name

    def _load(self) -> None:
        with self._lock:
            if self._loaded:
                return
            package = importlib.import_module(self.package)
            for module in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
                importlib.import_module(f"{self.package}.{module.name}")
            self._loaded = True
