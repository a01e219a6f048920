"""view: what a person watches while a run goes on, on the terminal.

- :mod:`.progress`: the live view of ``redline run URL``: on a terminal a rich panel redrawn
  once per interval (bar, live rate with a sparkline, the interval's percentiles, errors as
  they appear); elsewhere (logs, CI) one plain line per interval.

It only draws the engine's per-interval snapshots; nothing here measures anything. The other
views live with what they show: the web view (``--web``, ``redline ui``) and the metrics
exporters (``--prometheus``, ``--otlp``) are :mod:`redline.live`, kept a folder of its own
because it is a server, not a drawing (``redline.live`` is also its public import path);
``redline find``'s live view is :mod:`redline.find.view`; the written report, after the run,
is :mod:`redline.report`.
"""
