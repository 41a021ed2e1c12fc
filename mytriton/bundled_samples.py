"""The sample kernels the README's commands use (``samples/*.py`` in a
checkout), which the wheel carries as ``mytriton.samples``: ``mytriton
samples DIR`` writes them where a user who installed the wheel can run
those commands."""
from __future__ import annotations

from pathlib import Path


def sample_sources() -> dict[str, str]:
    """Each sample's file name and text: from the installed package, else
    from the checkout beside it."""
    try:
        from importlib.resources import files

        folder = files("mytriton.samples")
        found = {entry.name: entry.read_text(encoding="utf-8") for entry in folder.iterdir()
                 if entry.name.endswith(".py") and entry.is_file()}
        if found:
            return dict(sorted(found.items()))
    except (ModuleNotFoundError, OSError):
        pass  # not installed from a wheel (a checkout on PYTHONPATH): read the checkout's samples/
    checkout = Path(__file__).resolve().parents[1] / "samples"
    return {path.name: path.read_text(encoding="utf-8") for path in sorted(checkout.glob("*.py"))}
