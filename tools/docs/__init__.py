"""The generators of README.md and docs/: every number in them comes from here, never from a hand.

    report.py           ``python -m tools.docs.report readme|review|ablations|layers|seeds``
    pages.py            which block of which page is made from what; fills them all
    results.py          the results, comparison, recipe, members and headline tables
    speed.py            docs/speed.md's peer comparison and epoch profile (benchmarks/peers.py, profile_epoch.py)
    ablations.py        docs/ablations.md: shape ablations averaged over seeds, Pre-LN vs Post-LN
    seeds.py            runs that differ only in seed, as mean ± std
    walkthrough.py      docs/walkthrough.md: the page (``python -m tools.docs.walkthrough``)
    walkthrough_measure.py  its code excerpts and the numbers it quotes, measured

They ask ``dvc`` (through ``scratchformer.reporting``) and import the library; the library
never imports them. Tables are written by ``scratchformer.render.markdown``.
"""
