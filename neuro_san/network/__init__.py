"""Agent networks: the validated model, and reading it from HOCON, YAML or JSON files."""
