"""experiment: one command, several service configurations. Which configuration runs best?

``redline find 'http://127.0.0.1:{port}/' --monitor-cmd 'svc --port {port} --workers
{workers}' --vary workers=1,2,4 [--repeat 3]`` starts the service fresh for each configuration,
waits until it listens, searches it (:func:`redline.find.find`), stops its whole process tree,
and puts the configurations' four answers side by side with :mod:`redline.compare`'s verdicts
between them and the best configuration. ``redline run … --vary`` does the same at a fixed
load (:func:`redline.run`), comparing the runs' figures (a scenario's per request name).

From Python, :func:`redline.experiment` (:mod:`.result`) is the one call, typed::

    import redline
    svc = "svc --port {port} --workers {workers}"
    result = redline.experiment("http://127.0.0.1:{port}/", svc, {"workers": [1, 2, 4]},
                                max_time=60)
    result = redline.experiment("http://127.0.0.1:{port}/", svc, {"workers": [1, 2, 4]},
                                measure="run", connections=16, duration="30s")
    print(result.text(), result.best.label if result.best else "no best")

Inside: :mod:`configurations` reads ``--vary`` and fills the placeholders, :mod:`service` starts
and stops one configuration's service, :mod:`runner` runs the searches or the runs (one loop)
into the experiment document, which :mod:`result` types, :mod:`measures` says what each kind
reads from its results, :mod:`ranking` compares them and names the best, :mod:`tables` shows the
document (docs/schema/experiment.schema.json).
"""

from __future__ import annotations

from typing import Any

from redline.exports import lazy_attribute

#: _HOME: where each public name lives; a part is loaded on first use, so that the CLI's
#: parser does not pull in the search (numpy, scipy) to start.
_HOME = {
    "experiment": "result",
    "ExperimentResult": "result",
    "run_experiment": "runner",
    "Measure": "measures",
    "Configuration": "configurations",
    "parse_vary": "configurations",
    "Service": "service",
    "render_text": "tables",
    "render_markdown": "tables",
    "render_html": "tables",
    "write_outputs": "tables",
}


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _HOME, name)


__all__ = list(_HOME)
