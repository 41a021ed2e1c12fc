"""Triton code as it is published, run on mytriton: ``import triton`` gives mytriton.

Three ways in, one effect (``install_as_triton``):

- ``mytriton.install_as_triton()`` before the library is imported;
- ``python -m mytriton.as_triton script.py [ARGS]`` (or ``-m module [ARGS]``);
- ``pytest -p mytriton.as_triton``, a pytest plugin that installs before
  any conftest.py is read.

``triton`` and the submodules libraries import (modules.MODULES) are then
mytriton's: the kernel language is mytriton's own, the host modules are shims
with Triton's names. A name mytriton lacks is an AttributeError (or a
ModuleNotFoundError) naming it where it is used. ``TRITON_INTERPRET=1``
selects the NumPy interpreter, as it selects Triton's.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
from typing import Any, Callable, Iterator

from mytriton.as_triton.modules import MODULES


def install_as_triton() -> None:
    """Make ``import triton`` and its submodules give mytriton for the rest
    of this process. Call it before anything imports Triton: a Triton
    already imported stays what those modules hold, so that is an error."""
    api = importlib.import_module(MODULES["triton"])
    present = sys.modules.get("triton")
    if present is api:
        return
    if present is not None:
        where = getattr(present, "__file__", None) or "?"
        raise RuntimeError(f"triton is already imported (from {where}); call mytriton.install_as_triton() "
                           "before anything imports triton")
    for name, provider in MODULES.items():
        sys.modules[name] = importlib.import_module(provider)
    sys.meta_path.insert(0, _OtherTritonModules())
    probe = sys.modules.get(_TORCH_PROBE)
    if probe is not None:
        _answer_torch(probe)
    else:
        sys.meta_path.insert(0, _WhenTorchLoads(_TORCH_PROBE, _answer_torch))
    if _TORCH_COMPILER not in sys.modules:
        sys.meta_path.insert(0, _WhenTorchLoads(_TORCH_COMPILER, None))


# PyTorch asks once whether Triton is installed (this module's
# has_triton_package, cached) and, where it is, imports Triton's compiler
# internals as its own compiler loads (torch._inductor, which transformers
# imports): the Triton code torch.compile generates needs real Triton. So the
# question is answered, while ``import triton`` fails, as soon as PyTorch
# loads the module that asks it; PyTorch keeps that answer.
_TORCH_PROBE = "torch.utils._triton"
# The module through which torch.compile's compiler imports Triton's own
# (``import triton`` then ``from triton.compiler import CompiledKernel``,
# outside its ``try``): loaded with no Triton, it takes the stand-ins PyTorch
# keeps for a machine without one, as the answer above says there is none.
_TORCH_COMPILER = "torch._inductor.runtime.triton_compat"


@contextlib.contextmanager
def _triton_hidden() -> Iterator[None]:
    """``import triton`` fails inside (mytriton's stays installed outside)."""
    installed_triton = sys.modules.pop("triton", None)
    hidden = _NoTriton()
    sys.meta_path.insert(0, hidden)
    try:
        yield
    finally:
        sys.meta_path.remove(hidden)
        if installed_triton is not None:
            sys.modules["triton"] = installed_triton


def _answer_torch(probe: Any) -> None:
    with _triton_hidden():
        for question in ("has_triton_package", "get_triton_version"):
            if callable(getattr(probe, question, None)):
                getattr(probe, question)()


class _WhenTorchLoads:
    """Runs a module of PyTorch's as it loads with Triton hidden, then
    ``after`` (answering its question before anything asks it)."""

    def __init__(self, name: str, after: Callable[[Any], None] | None) -> None:
        self.name, self.after = name, after

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            with _triton_hidden():
                run(module)
            if self.after is not None:
                self.after(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


class _NoTriton:
    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname == "triton" or fullname.startswith("triton."):
            raise ModuleNotFoundError(f"No module named '{fullname}'", name=fullname)
        return None


def installed() -> bool:
    """Whether ``import triton`` gives mytriton in this process."""
    return sys.modules.get("triton") is sys.modules.get(MODULES["triton"], False)


class _OtherTritonModules:
    """Refuses, by name, a submodule of Triton that mytriton does not give
    (``triton.compiler``), instead of Python's 'triton is not a package'."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname.startswith("triton.") and fullname not in MODULES and installed():
            raise ModuleNotFoundError(f"No module named '{fullname}': triton is mytriton here, which gives "
                                      f"{', '.join(MODULES)}", name=fullname)
        return None


def pytest_load_initial_conftests(early_config: Any, parser: Any, args: Any) -> None:
    """``pytest -p mytriton.as_triton``: installed before the conftest.py
    files, which import the library, are read."""
    install_as_triton()
