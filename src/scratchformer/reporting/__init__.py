"""What asks ``dvc`` and ``git``: the review of two revisions, the metrics check, ``dvc exp show``
read into flat records, the named recipes. The docs generators that use them live in ``tools/docs``.

This package shells out to DVC and git and imports the model library; the library never
imports it, so training and prediction work where DVC is not installed.
"""
