"""runs: one load run, from its options to its result; what :func:`redline.run` is made of.

- :mod:`.options`: the spellings of values (durations, stages, headers, ``@file`` bodies);
- :mod:`.run_options`: :class:`~.run_options.RunOptions`, one run's options typed, frozen
  and spelled once, and the engine's ``RunConfig`` they become;
- :mod:`.runner`: :func:`~.runner.run` (``redline.run``), the live handle a search or a
  watched run drives, the engine's defaults, and the cluster options a run takes;
- :mod:`.result`: :class:`~.result.Result`, the typed view of the engine's report;
- :mod:`.usage`: the CPU the engine's worker threads took (a search judges each step by it,
  an injector reports it);
- :mod:`.target`: :class:`~.target.Target`, the bundled test server a run can be aimed at
  (``redline target``).

The public names are :mod:`redline`'s own (``redline.run``, ``redline.RunOptions``,
``redline.Result``, ``redline.Target``, ...); nothing is imported here.

Why ``runs`` and not ``run``: ``redline.run`` is the public function. A subpackage named
``run`` would be set as the attribute ``run`` of :mod:`redline` by the import machinery the
first time any of its modules was imported, and ``redline.run(...)`` would then be a module.
"""
