"""Seed 003: survey takers. Each gets the form page (which sets a session cookie), posts the
form with that cookie, expects the 302 to /thanks and follows it, then thinks 1-2 s.
Against the bundled test server's form app:

    redline target &            # prints its URL
    redline run examples/survey.py --host http://127.0.0.1:PORT -u 50 -d 1m
"""

from redline.scenario import Scenario, between, contains

scenario = Scenario(users=20, duration="1m", thresholds=["errors<1%"])


@scenario.flow
def survey(u):
    with u.group("survey"):
        u.get("/form", name="form", status=200, checks=[contains("<form")])
        # The 302 itself, checked as such: not followed here...
        u.post(
            "/form",
            name="post",
            form={"name": f"user {u.vu}", "rating": u.choice([1, 2, 3, 4, 5])},
            status=302,
        )
        # ...and the same post with the redirect followed to /thanks (with the session cookie).
        u.post(
            "/form",
            name="post+thanks",
            form={"name": f"user {u.vu}", "rating": 5},
            follow_redirects=True,
            status=200,
        )
    u.think(between(1, 2))
