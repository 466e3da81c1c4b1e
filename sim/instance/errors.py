"""The simulator's own bugs, as exceptions (in a module of their own: the compiled engine,
``sim.native``, cannot build subclasses of AssertionError, and need not)."""


class BlockLeakError(AssertionError):
    """The block ledger does not add up: a simulator bug, never a user error."""
