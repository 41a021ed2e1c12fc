"""``lark``, imported when a text is first parsed, not when the IR modules
are: a launch prints and emits IR but parses none, and importing lark costs
a process ~60 ms (measured on the 2-core machine: 57 ms of a first launch's
130). The IR text modules say ``from mytriton.ir.lark_module import lark``;
type checkers see the module itself."""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any


class _Deferred:
    """Stands for a module until an attribute of it is first read."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str) -> Any:
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attribute)


if TYPE_CHECKING:
    import lark
else:
    lark = _Deferred("lark")
