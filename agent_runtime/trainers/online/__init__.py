"""Online RL on rollouts of the real agent graph: TRPO (Mobile-Agent-v3) and DGRPO (MobileRL)."""
