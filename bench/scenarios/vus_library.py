"""vus_library.py SCENARIO.py [redline run options]: `redline run` for a scenario through the
Python API only (redline.scenario + redline.run), without importing the CLI, for
bench/scenarios/vus.py --library."""

import sys

from redline.scenario.command import build_run_parser_args, cmd_run_scenario

sys.exit(cmd_run_scenario(build_run_parser_args(sys.argv[1:])))
