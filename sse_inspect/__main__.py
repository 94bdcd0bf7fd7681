"""`python -m sse_inspect`: the `sse-inspect` command line."""

from sse_inspect.cli import main

main()
