"""What a trained model says: scores, acceptance checks, the probe, relevance, mistakes, predict, baselines."""
