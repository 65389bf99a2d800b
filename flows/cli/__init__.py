"""The `judged` command line: `app` with every command registered, and `main`, the console script's entry point.

Belongs here: the command modules (`app.py`: evaluation, warehouse and server commands; `compare.py`: `compare` and
`report`; `measures.py`: `measures`; `agreement.py`: `agreement`) and what they share (`common.py`: the application,
exit codes, failures, the spec options). The command modules import `common` and never each other; importing this
package registers every command on `app`.
"""

from judged.flows.cli.app import app, main
from judged.flows.cli import compare as _compare  # noqa: F401  (registers `compare` and `report` on `app`)
from judged.flows.cli import measures as _measures  # noqa: F401  (registers `measures` on `app`)
from judged.flows.cli import agreement as _agreement  # noqa: F401  (registers `agreement` on `app`)

__all__ = ["app", "main"]
