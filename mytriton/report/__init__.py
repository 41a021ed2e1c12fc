"""The HTML report of one compile (``compile --html FILE``, ``DIR/index.html``).

One self-contained page: the kernel's source, every stage's text, the CUDA
and the PTX side by side, each stage line linked to the Python line it comes
from, the remarks of the ``tl.dot`` path and the layout pictures.

``locations`` reads the source lines out of each stage's text, ``collect``
watches a compile and gathers what the page shows, ``page`` writes the HTML
(every piece of input escaped, every stage bounded in size) and ``assets``
holds its style sheet and script. Nothing here is imported unless a page is
asked for.
"""
