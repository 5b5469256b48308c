"""Input guards: redaction, confined paths, regex budgets, bounds, terminal and JSON text, the edit format."""
