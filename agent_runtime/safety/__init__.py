"""A person stays in control: the action guard that says which actions need a person's approval
(:func:`assess`), and the built-in rules it reads (:mod:`agent_runtime.safety.rules`)."""

from agent_runtime.safety.guard import Assessment, assess
from agent_runtime.safety.rules import APPS, FAMILIES, AppRule, Family

__all__ = ["APPS", "FAMILIES", "AppRule", "Assessment", "Family", "assess"]
