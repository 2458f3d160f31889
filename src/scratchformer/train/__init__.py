"""Training: one loop and its optimizer (loop, optim), the objectives (objective: the classifier's, classify: its
training; pretraining: masked_lm, replaced_token), the run that records it (run: curves, probe snapshots, resumable
state; resume: the key and file), the ensemble's members, distributed launch."""
