"""Release checks over inventories: findings, policies, the gate, diffs, coverage summaries."""
