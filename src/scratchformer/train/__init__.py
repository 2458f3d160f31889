"""Training: one loop and its optimizer (loop, optim), two objectives (classify, masked_lm), the run that
records it (run: curves, probe snapshots, resumable state; resume: the key and file), the ensemble's members,
distributed launch."""
