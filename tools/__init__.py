"""Tools that work on the repository rather than on a model: the docs generators (``tools.docs``),
the offline template for ``dvc plots show`` and its screenshot script. Not part of the library."""
