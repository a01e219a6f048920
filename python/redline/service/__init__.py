"""service: the service under load, where redline starts it or watches it.

- :mod:`.monitor`: one sample a second of the service's CPU, load, memory, fds, threads and
  connections, on the load's own clock (:class:`~.monitor.ProcessMonitor` for a process tree,
  :class:`~.monitor.CommandMonitor` for a command redline starts and stops,
  :class:`~.monitor.PrometheusMonitor` for a metrics endpoint); ``find --monitor-*``,
  ``--vary``'s services (:mod:`redline.experiment.service`) and the demo take their samples
  from here;
- :mod:`.exposition`: Prometheus text pages read with prometheus_client's parser, once per
  page shape (:class:`~.exposition.Pages`; the exporters of ``--watch``, ``--throughput``,
  ``--backlog`` and ``--monitor-prometheus``);
- :mod:`.tether`: a child process that cannot outlive redline (the kernel stops it when redline
  dies, however it dies), for every service redline starts.

Nothing here sends load or reads the engine; nothing is imported here (psutil loads with
:mod:`.monitor`).
"""
