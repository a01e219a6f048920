"""redline as a library, no command line: a URL run, a scenario that runs itself (its own
profile and thresholds), a capacity search and a comparison, each a typed result whose
to_json() is the command's --json document.

Run: .venv/bin/python examples/python_api.py [URL]   (default: a test server started here)
It prints one JSON line of what redline counted, for tests/test_examples.py to hold against
the server's own count."""

import json
import sys

import redline

# A scenario declares its flows, profile and thresholds (this file is a scenario file too:
# `redline run examples/python_api.py --host URL` runs it).
shop = redline.Scenario(users=4, iterations=10, thresholds=["errors<1%"])


@shop.flow
def browse(u):
    u.get("/?latency=2ms", name="home", status=200)
    u.get("/?latency=4ms", name="item", status=200)


def tour(url: str) -> dict[str, int]:
    """tour runs each part against ``url`` and returns the requests redline saw answered
    and those it sent or meant to send that got no answer (the search's cut-off ones)."""
    # A run: 1,500 requests from 4 virtual users.
    base = redline.run(url + "/?latency=2ms", connections=4, requests=1500)
    print(f"run:      {base.rps:.0f} req/s, p99 {base.latency.p99:.2f} ms")

    # The scenario above runs itself: users=2 merged over its profile, 10 iterations each.
    outcome = shop.run(host=url, users=2)
    print(f"scenario: passed={outcome.passed}", *(t.line for t in outcome.thresholds))

    # A capacity search: where it runs best and where it breaks.
    found = redline.find(
        url + "/?latency=2ms", max_load=8, min_step=1, max_step=2, confirm=2, max_time=12
    )
    limit = found.answers.limit
    capacity = "none found" if limit.capacity_rps is None else f"{limit.capacity_rps:.0f} req/s"
    print(f"find:     capacity {capacity}, stopped by {limit.reason}")

    # A comparison with the first run, gated as CI would (a median three times the base's).
    again = redline.run(url + "/?latency=2ms", connections=4, requests=1500)
    verdict = redline.compare(base, again, fail_on=["p50:+200%"])
    print(verdict.text(), f"gate passed: {verdict.passed}", *verdict.failures, sep="\n")

    search = found.document["run"]  # the search's one live run, as the engine reported it
    return {
        "answered": base.requests + again.requests + outcome.result.requests + search["requests"],
        "unanswered": search["intended"] - search["requests"],
    }


if __name__ == "__main__":
    if len(sys.argv) > 1:
        counted = tour(sys.argv[1])
    else:
        with redline.Target() as target:
            counted = tour(target.url)
    print(json.dumps(counted))
