"""Public names that load their module on first use (PEP 562), for a package's ``__init__``.

``dynashard`` and ``dynashard.lambda_kit`` export names whose modules load the AWS SDK,
pydantic or Powertools; importing the package must not, so each name is looked up in
the package's table of exports and imported when first used.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, namespace: dict[str, Any], exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Return a package's module ``__getattr__`` and ``__dir__`` over a table of exports.

    Parameters
    ----------
    package : str
        The package's name (``__name__``), for the error message.
    namespace : dict
        The package's ``globals()``: a loaded name is cached there.
    exports : mapping of str to str
        Public name -> the module that defines it.

    Returns
    -------
    tuple of callable
        ``(__getattr__, __dir__)``. ``__getattr__(name)`` imports the name's module and
        returns the name (cached afterwards), raising ``AttributeError`` for a name not in
        ``exports``; ``__dir__()`` lists the exports and the package's own names.
    """

    def getattr_(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *exports})

    return getattr_, dir_
