"""Data: traces to per-role samples, rejection-sampling filters, datasets and preference pairs."""
