"""live: a run or a search watched while it runs, in browsers (``--web``: a page updated each
interval by server-sent events, with a stop button and the final report linked at the end)
and by Prometheus (``--prometheus``: ``/metrics`` in the text format); or started from a form
in the browser (``redline ui``).

- :mod:`~redline.live.session`: :class:`LiveSession`, fed by the run's own callbacks
- :mod:`~redline.live.events`: what the page is sent (figures, steps, chart patches)
- :mod:`~redline.live.metrics`: the Prometheus books (:class:`Ledger`), per request name
- :mod:`~redline.live.otlp`: the same books pushed to an OpenTelemetry collector (``--otlp``)
- :mod:`~redline.live.hub`, :mod:`~redline.live.server`: fan-out and the HTTP server
- :mod:`~redline.live.page`, ``page.js``: the page
- :mod:`~redline.live.launcher`: ``redline ui``, the start page that starts runs from a form

The command line's flags and ``redline ui``'s parser are :mod:`redline.cli.live`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from redline.exports import lazy_attribute

if TYPE_CHECKING:
    from redline.live.address import Address, parse_address
    from redline.live.session import Kind, LiveSession, StopRequested

__all__ = ["Address", "Kind", "LiveSession", "StopRequested", "parse_address"]

#: Where each name lives: imported on first use, so that the CLI, which imports
#: ``redline.cli.live`` at start-up, pays for the server only when it is asked for.
_HOMES = {
    "Address": "address",
    "parse_address": "address",
    "Kind": "session",
    "LiveSession": "session",
    "StopRequested": "session",
}


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _HOMES, name)
