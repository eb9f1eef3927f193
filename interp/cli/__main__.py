"""`python -m interp.cli`: the same as the `interp` command."""

from interp.cli import main

main()
