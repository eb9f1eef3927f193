"""User-facing errors: one line that says what is wrong and how to fix it; the CLI exits with code 2."""


class InterpError(Exception):
    """Bad input from the user (a path, an alias, a config key, a prompt that does not fit)."""
