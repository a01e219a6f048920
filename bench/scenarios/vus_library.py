"""vus_library.py SCENARIO.py --host URL [--var K=V] [--stages S] [--timeout T] [--json FILE]
[-q]: `redline run` for a scenario through the Python API only (redline.scenario.load and
run_compiled, as Scenario.run does), without importing the CLI, for
bench/scenarios/vus.py --library."""

import argparse
import sys

from redline.scenario import load
from redline.scenario.running import run_compiled

p = argparse.ArgumentParser(prog="vus_library")
p.add_argument("scenario")
p.add_argument("--host")
p.add_argument("--var", action="append", default=[])
p.add_argument("--stages")
p.add_argument("--timeout")
p.add_argument("--json")
p.add_argument("-q", "--quiet", action="store_true")
args = p.parse_args()
compiled = load(args.scenario, dict(v.split("=", 1) for v in args.var))
out = run_compiled(compiled, host=args.host, stages=args.stages, timeout=args.timeout)
if args.json:
    out.result.write_json(args.json)
print(out.result)
sys.exit(0 if out.passed else 1)
