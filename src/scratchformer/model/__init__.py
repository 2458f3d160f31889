"""The network, written by hand: attention -> encoder block -> classifier, and its checkpoints."""
