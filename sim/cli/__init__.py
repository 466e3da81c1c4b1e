"""Command-line front end: thin wrappers over functions that tests can call directly."""
