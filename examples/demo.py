"""The `make demo` walk-through: `redline demo` from Python.

It starts redline's target server (taskqueue's http-fetch origin) and taskqueue (SQLite in a
temporary directory) on 127.0.0.1, watches taskqueue's process tree, searches for its
capacity with `redline find`, prints the four answers, and writes demo-report.html and
demo-report.md here. Everything it started stops at the end, also on Ctrl-C.

    python examples/demo.py            # under 150 s
    python examples/demo.py --quick    # about one minute
"""

from __future__ import annotations

import sys

from redline.find.demo import demo

if __name__ == "__main__":
    try:
        sys.exit(demo(quick="--quick" in sys.argv[1:]))
    except KeyboardInterrupt:
        print("demo: interrupted; everything it started has been stopped", file=sys.stderr)
        sys.exit(130)
