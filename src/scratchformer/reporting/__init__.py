"""Reports built by asking ``dvc`` and ``git``: README/docs tables and the review of two revisions.

This package shells out to DVC and git and imports the model library; the library never
imports it, so training and prediction work where DVC is not installed.
"""
