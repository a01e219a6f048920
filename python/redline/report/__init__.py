"""report: a result written for people to read, in every form redline writes it.

- :mod:`.summary`: the end-of-run text on the terminal (laid out like wrk's);
- :mod:`.render`: a run's or a search's result as one self-contained HTML file and as
  Markdown (``redline report``, ``--html``/``--md``), and reading a result file back;
- :mod:`.charts`: the charts as data (:class:`~.charts.Chart`), which the report, the live
  web page (:mod:`redline.live`) and compare's page draw;
- :mod:`.page`: the one HTML page every report is (stylesheet, uPlot and ``assets/chart.js``
  inlined so it opens offline), shared with compare's and experiment's pages;
``redline report``'s parser, and the run report ``redline run`` and scenarios write, are
:mod:`redline.cli.report`'s.

Nothing is imported here: ``redline --help`` and ``redline run`` import :mod:`.summary` and
:mod:`redline.cli.report` without paying for the renderers (numpy, via the analysis) until a
report is asked for (tests/test_startup.py).
"""
