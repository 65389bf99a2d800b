"""What a command shows while it waits: on a terminal, rich's status line on stderr ("starting a local Prefect
server...", then the flow's latest step); otherwise nothing, so scripts and tests read clean output. Lines that
matter after the command (a server started in the background) are printed either way, on stderr.

Belongs here: the waiting display and the log handler that feeds it the flow's steps; not what the steps are.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

# The loggers of Prefect's flow and task runs (get_run_logger): their INFO lines are the flow's steps.
FLOW_LOGGERS = ("prefect.flow_runs", "prefect.task_runs")


class Feedback:
    """A command's waiting display on `stream` (stderr by default): live only when it is a terminal."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.live = self.stream.isatty()
        self._status: Any = None

    @contextmanager
    def waiting(self, text: str) -> Iterator[None]:
        """Show `text` with a spinner while the block runs (a terminal only); nested, the inner text replaces the
        outer one and the outer comes back after it."""
        if not self.live:
            yield
            return
        from rich.markup import escape

        text = escape(text)  # log lines hold brackets (labels such as nDCG@10[trec_eval:gain=linear])
        if self._status is not None:
            outer = self._status.status
            self._status.update(text)
            try:
                yield
            finally:
                self._status.update(outer)
            return
        from rich.console import Console

        with Console(file=self.stream).status(text) as status:
            self._status = status
            try:
                yield
            finally:
                self._status = None

    def update(self, text: str) -> None:
        if self._status is not None:
            from rich.markup import escape

            # One line: a status wider than the terminal wraps, and each redraw would leave a line behind.
            room = max(self._status.console.width - 4, 20)
            self._status.update(escape(text if len(text) <= room else text[: room - 1] + "…"))

    def say(self, line: str) -> None:
        """A line the user needs after the command, printed on the stream whether it is a terminal or not."""
        if self._status is not None:
            self._status.console.print(line, markup=False, highlight=False)
        else:
            print(line, file=self.stream, flush=True)

    @contextmanager
    def following_flow_logs(self, doing: str) -> Iterator[None]:
        """While the block runs a flow: `doing`, then each INFO line its flow and task runs log."""
        if not self.live:
            yield
            return
        handler = _StepHandler(lambda step: self.update(f"{doing}: {step}"))
        loggers = [logging.getLogger(name) for name in FLOW_LOGGERS]
        with self.waiting(f"{doing}..."):
            for logger in loggers:
                logger.addHandler(handler)
            try:
                yield
            finally:
                for logger in loggers:
                    logger.removeHandler(handler)


class _StepHandler(logging.Handler):
    """Passes each INFO (or higher) message of a flow or task run, cut to one short line, to `show`."""

    def __init__(self, show: Any) -> None:
        super().__init__(logging.INFO)
        self.show = show

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage().splitlines()[0] if record.getMessage() else ""
        except Exception:  # noqa: BLE001 (a message that cannot be formatted is not worth a crash of the display)
            return
        self.show(text if len(text) <= 100 else text[:99] + "…")
