"""The llumlet: local scheduler, KV accounting, virtual usage, migration coordinator."""
