"""The Lark grammars of mytriton's textual IRs, shipped inside the package."""
