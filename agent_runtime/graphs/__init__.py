"""Agent graphs. ``mobile_agent_v3``: the paper's Algorithm 1 as a LangGraph ``StateGraph``."""
