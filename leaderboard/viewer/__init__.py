"""The published run viewer (`harness leaderboard publish`, `harness grid ... publish`): what each
reward rewarded, step by step, and every method's answers side by side (build.py; the schema it
reads: schema.py and docs/CONTRACTS.md, "Published run viewer")."""
