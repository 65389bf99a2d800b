"""`python -m judged.flows.cli`: the same as the `judged` console script."""

from judged.flows.cli import main

main()
