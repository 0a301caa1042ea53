"""Everything that touches bytes: the artifact contract, stdin/stdout, YAML, outside formats."""
