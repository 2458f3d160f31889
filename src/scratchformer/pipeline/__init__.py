"""One module per DVC stage, each with a ``run(params, paths…)`` over files.

The scripts in ``stages/`` only parse paths and call ``run``; all paths are
arguments, so the same code runs on the real corpus and on test fixtures.
"""
