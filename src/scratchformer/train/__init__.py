"""Training: one loop, two objectives (classification, masked LM), resumable state, distributed launch."""
