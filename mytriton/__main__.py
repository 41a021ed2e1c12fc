"""``python -m mytriton``: the same command as ``mytriton``."""
from mytriton.cli import main

main(prog_name="mytriton")
