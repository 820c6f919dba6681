"""Subcommands of the ``grpolab`` CLI: one module per subcommand, each with ``register``."""
