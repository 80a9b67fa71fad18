"""Hi-Agent's single-step GRPO with the foresight reward (TRL GRPOTrainer), alternating high and low
levels.
"""
