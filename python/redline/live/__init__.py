"""live: a run or a search watched while it runs, in browsers (``--web``: a page updated each
interval by server-sent events, with a stop button and the final report linked at the end)
and by Prometheus (``--prometheus``: ``/metrics`` in the text format).

- :mod:`~redline.live.session`: :class:`LiveSession`, fed by the run's own callbacks
- :mod:`~redline.live.events`: what the page is sent (figures, steps, chart patches)
- :mod:`~redline.live.metrics`: the Prometheus books (:class:`Ledger`)
- :mod:`~redline.live.histogram`: cumulative bucket counts from the engine's HdrHistograms
- :mod:`~redline.live.hub`, :mod:`~redline.live.server`: fan-out and the HTTP server
- :mod:`~redline.live.page`, ``page.js``: the page
- :mod:`~redline.live.command`: the CLI's flags
"""

from redline.live.address import Address, parse_address
from redline.live.session import Kind, LiveSession, StopRequested

__all__ = ["Address", "Kind", "LiveSession", "StopRequested", "parse_address"]
