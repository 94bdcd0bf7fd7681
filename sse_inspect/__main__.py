from sse_inspect.cli import main

main()
