"""The agent's roles: one module per role (prompt template + typed output + parser).

``manager``, ``worker``, ``reflector`` and ``notetaker`` pair a Jinja template in ``prompts/``
with a parser returning the typed output of :mod:`agent_runtime.role_outputs`; ``caller`` makes
the traced model call with re-asks; ``rag`` connects retrieval from :mod:`agent_runtime.memory`.
Each role's spec (:mod:`agent_runtime.specs`) names its template, inputs, parser and output.
"""
