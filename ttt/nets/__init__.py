"""Value and policy networks."""
