"""The evaluation wing's own packages come with ``pip install 'docfinder[eval]'``; a server
install leaves them out. Code that needs one asks for it here first, so a missing package is a
clear message naming the extra, not an ImportError from deep inside a run."""

from __future__ import annotations

import importlib

from pipeline.errors import ConfigurationError

INSTALL = "pip install 'docfinder[eval]'"


def require(purpose: str, *modules: str) -> None:
    """Raise :class:`ConfigurationError` naming the extra when any of ``modules`` cannot be imported."""
    missing = [module for module in modules if not _importable(module)]
    if missing:
        raise ConfigurationError(
            f"{purpose} needs the evaluation extra ({', '.join(missing)} not installed): {INSTALL}"
        )


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True
