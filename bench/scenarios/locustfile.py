"""The seed-000 flow for Locust (FastHttpUser), the same as bench/scenarios/seed000_flow.py:
submit, take the id, poll the status until SUCCEEDED or FAILED (FAILED fails), get the
result; no wait time. Stats: submit, status, result. Used by bench/scenarios/run.py."""

from locust import FastHttpUser, constant, task


class TaskUser(FastHttpUser):
    wait_time = constant(0)

    @task
    def flow(self) -> None:
        with self.client.post(
            "/tasks/submissions",
            json={"type": "factorial", "n": 100},
            name="submit",
            catch_response=True,
        ) as r:
            if r.status_code != 202:
                r.failure(f"status {r.status_code}")
                return
            tid = r.json()["id"]
        while True:
            with self.client.get(
                f"/tasks/submissions/{tid}", name="status", catch_response=True
            ) as r:
                st = r.json().get("status") if r.status_code == 200 else None
                if st == "FAILED":
                    r.failure("FAILED")
                    return
                if st == "SUCCEEDED":
                    break
                if st is None:
                    r.failure(f"status {r.status_code}")
                    return
        self.client.get(f"/tasks/{tid}", name="result")
