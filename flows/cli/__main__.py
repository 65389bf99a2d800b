"""`python -m judged.flows.cli`: the same as the `judged` console script."""

from judged.flows.console import main

main()
