// mix.js: the seed-000 user, at a constant arrival rate (k6).
//
// Each iteration is one user task: submit (http-fetch or factorial, 5:1 by iteration number,
// so the ratio is exact rather than random), poll its status at once and then every second
// until SUCCEEDED or FAILED, then GET the result. Requests are tagged `rt` so the summary
// has a p99 per request type. A failure is anything the seed would have counted: a
// non-expected status, a task that ends FAILED, a task not done by TASK_DEADLINE_S, or a
// result GET that is not 200 once the task is complete.
//
// env: TQ_URL, ORIGIN_URL, RATE (iterations/s), DURATION (e.g. 45s), SIZE (origin bytes),
// FACT_N, PRE_VUS, MAX_VUS, WARMUP_S, SUMMARY (path of the JSON summary written by handleSummary).
import http from 'k6/http';
import exec from 'k6/execution';
import { sleep } from 'k6';
import { Counter } from 'k6/metrics';

const BASE = __ENV.TQ_URL;
const ORIGIN = __ENV.ORIGIN_URL;
const RATE = parseInt(__ENV.RATE || '700', 10);
const SIZE = parseInt(__ENV.SIZE || '1024', 10);
const FACT_N = parseInt(__ENV.FACT_N || '100', 10);
const TASK_DEADLINE_S = 30;
const TYPES = ['submit_fetch', 'submit_factorial', 'status', 'result'];

const WARMUP_S = parseFloat(__ENV.WARMUP_S || '5');
const DURATION_S = parseFloat((__ENV.DURATION || '45s').replace('s', ''));

const failures = new Counter('failures');
// steady_reqs counts requests sent between WARMUP_S and the end of the arrival phase: the
// sustained rate, without the ramp-up (no polls yet) or the drain (no new submissions).
const steadyReqs = new Counter('steady_reqs');
const tasksDone = new Counter('tasks_done');

const thresholds = { failures: ['count==0'], tasks_done: ['count>0'] };
for (const rt of TYPES) {
  // Thresholds make k6 keep a sub-metric per request type in the summary.
  thresholds[`http_req_duration{rt:${rt}}`] = ['p(99)<100'];
  thresholds[`http_reqs{rt:${rt}}`] = ['count>=0'];
  thresholds[`failures{rt:${rt}}`] = ['count==0'];
}

export const options = {
  discardResponseBodies: true,
  summaryTrendStats: ['avg', 'med', 'p(90)', 'p(99)', 'max', 'count'],
  // 409 (not finished) is never requested here (results are fetched after completion), so
  // only 2xx counts as expected in http_req_failed.
  scenarios: {
    mix: {
      executor: 'constant-arrival-rate',
      rate: RATE,
      timeUnit: '1s',
      duration: __ENV.DURATION || '45s',
      preAllocatedVUs: parseInt(__ENV.PRE_VUS || String(Math.ceil(RATE * 3)), 10),
      maxVUs: parseInt(__ENV.MAX_VUS || String(Math.ceil(RATE * 4)), 10),
      gracefulStop: '35s',
    },
  },
  thresholds,
};

const JSON_HEADERS = { 'Content-Type': 'application/json' };

function counted(res) {
  const t = (Date.now() - exec.scenario.startTime) / 1000;
  if (t >= WARMUP_S && t < DURATION_S) steadyReqs.add(1);
  return res;
}

let warned = 0;

function fail(rt, why) {
  failures.add(1, { rt, why });
  if (warned < 5) {
    warned += 1; // a few per VU: enough to name the cause without flooding the log
    console.warn(`FAIL ${rt}: ${why}`);
  }
}

export default function () {
  const isFetch = exec.scenario.iterationInTest % 6 !== 5;
  const rt = isFetch ? 'submit_fetch' : 'submit_factorial';
  const body = isFetch
    ? JSON.stringify({ type: 'http-fetch', url: `${ORIGIN}/anything?size=${SIZE}` })
    : JSON.stringify({ type: 'factorial', n: FACT_N });
  const sub = counted(http.post(`${BASE}/tasks/submissions`, body, {
    headers: JSON_HEADERS, tags: { rt, name: rt }, responseType: 'text',
  }));
  if (sub.status !== 202) {
    fail(rt, `status ${sub.status} ${sub.error || ''}`);
    return;
  }
  const id = sub.json('id');
  const deadline = Date.now() + TASK_DEADLINE_S * 1000;
  let state = '';
  for (;;) {
    const st = counted(http.get(`${BASE}/tasks/submissions/${id}`, {
      tags: { rt: 'status', name: 'status' }, responseType: 'text',
    }));
    if (st.status !== 200) {
      fail('status', `status ${st.status} ${st.error || ''}`);
      return;
    }
    state = st.json('status');
    if (state === 'SUCCEEDED' || state === 'FAILED') break;
    if (Date.now() > deadline) {
      fail('status', 'not done in time');
      return;
    }
    sleep(1);
  }
  const res = counted(http.get(`${BASE}/tasks/${id}`, { tags: { rt: 'result', name: 'result' } }));
  if (res.status !== 200) {
    fail('result', `status ${res.status} ${res.error || ''}`);
    return;
  }
  if (state === 'FAILED') {
    fail(rt, 'task FAILED');
    return;
  }
  tasksDone.add(1);
}

export function handleSummary(data) {
  const out = {};
  out[__ENV.SUMMARY || 'k6-summary.json'] = JSON.stringify(data);
  return out;
}
