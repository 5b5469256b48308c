"""The engine: seeds, scoring, judges, the agent, reflection and the transfer protocol."""
