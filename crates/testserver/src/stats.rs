//! The server's own counters: what it saw, so tests can compare it with what a client reported.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::form::Outcome;
use crate::task::Outcome as TaskOutcome;

/// TargetStats is a snapshot of what the server saw since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TargetStats {
    /// requests is the number of complete request heads parsed, `/__stats` excluded; counted on
    /// arrival, so requests that were reset, hung or are still being delayed count too.
    pub requests: u64,
    /// connections is the number of connections accepted.
    pub connections: u64,
    /// queue_waiting: requests waiting for a capacity slot now (0 without capacity mode).
    pub queue_waiting: u64,
    /// queue_busy: requests in service (holding a slot) now.
    pub queue_busy: u64,
    /// queue_peak: the most requests ever waiting at once, as the waiting tasks count
    /// themselves (one whose start has passed counts until its thread wakes it, so under a
    /// queue limit Q this can briefly exceed Q; the limit itself is judged on the schedule).
    pub queue_peak: u64,
    /// queue_served: requests that completed their service time.
    pub queue_served: u64,
    /// queue_refused: requests shed (503) by the queue limit.
    pub queue_refused: u64,
    /// contention_busy: requests in service now in contention mode.
    pub contention_busy: u64,
    /// contention_peak: the most requests ever in service at once in contention mode.
    pub contention_peak: u64,
    /// contention_served: requests that completed their service in contention mode.
    pub contention_served: u64,
    /// rate_accepted: requests the rate limit let through.
    pub rate_accepted: u64,
    /// rate_refused: requests the rate limit refused (503, or the refuse status).
    pub rate_refused: u64,
    /// form_pages: `GET /form` answered 200.
    pub form_pages: u64,
    /// sessions_issued: session cookies set (first visits to `/form`).
    pub sessions_issued: u64,
    /// forms_posted: `POST /form` accepted (302 to `/thanks`).
    pub forms_posted: u64,
    /// forms_invalid: `POST /form` with a session but a bad body (400 or 413).
    pub forms_invalid: u64,
    /// missing_cookie: `POST /form` or `GET /thanks` refused (403) for lack of a session
    /// cookie this server issued.
    pub missing_cookie: u64,
    /// thanks_pages: `GET /thanks` answered 200.
    pub thanks_pages: u64,
    /// tasks_submitted: `POST /tasks/submissions` accepted (202).
    pub tasks_submitted: u64,
    /// tasks_polled: `GET /tasks/submissions/ID` answered 200 (any status).
    pub tasks_polled: u64,
    /// tasks_running: the status polls among them that answered `RUNNING` (the others said
    /// the task was done: a tally's truth).
    pub tasks_running: u64,
    /// tasks_results: `GET /tasks/ID` answered 200 (a finished task's result).
    pub tasks_results: u64,
    /// tasks_refused: the task app's other answers (400, 404, 405, 409, 413, 422).
    pub tasks_refused: u64,
    /// tasks_succeeded: the status polls among `tasks_polled` that answered `SUCCEEDED`.
    pub tasks_succeeded: u64,
    /// tasks_failed: the status polls among `tasks_polled` that answered `FAILED`.
    pub tasks_failed: u64,
    /// tasks_resubmitted: the submissions among `tasks_submitted` that retried a failed task
    /// (`X-Retry-Of`).
    pub tasks_resubmitted: u64,
    /// stream_responses: streamed answers begun (`/sse`, and completions asked to stream):
    /// heads written.
    pub stream_responses: u64,
    /// stream_events: SSE events of streamed answers handed to the client's socket, a
    /// completion's closing chunk and `data: [DONE]` included.
    pub stream_events: u64,
    /// completion_tokens: completion tokens written, streamed or whole.
    pub completion_tokens: u64,
    /// ws_sockets: WebSocket upgrades answered (`/ws`, `socket.rs`).
    pub ws_sockets: u64,
    /// ws_received: WebSocket data messages (text or binary) read from clients.
    pub ws_received: u64,
    /// ws_sent: WebSocket echoes written to clients.
    pub ws_sent: u64,
    /// ws_dropped: sockets the probe dropped without a close frame (`drop=N`).
    pub ws_dropped: u64,
    /// ws_closed: sockets the probe closed with a close frame (`close_after=N`).
    pub ws_closed: u64,
    /// idle_closed: HTTP/1.1 connections closed for waiting longer than the idle timeout for
    /// a request (`TargetConfig::idle_timeout`).
    pub idle_closed: u64,
    /// grpc_calls: gRPC calls answered (`grpc.rs`), whatever their status.
    pub grpc_calls: u64,
    /// grpc_received: gRPC request messages read (one a unary call; a client stream's all).
    pub grpc_received: u64,
    /// grpc_messages: gRPC reply messages written.
    pub grpc_messages: u64,
    /// grpc_failed: gRPC calls ended with a status other than OK.
    pub grpc_failed: u64,
    /// grpc_deadline: the calls among `grpc_failed` ended DEADLINE_EXCEEDED because the
    /// deadline their `grpc-timeout` gave passed before their answer was due.
    pub grpc_deadline: u64,
}

impl TargetStats {
    /// fields names every counter, in the order `/__stats` serves them: one list, so the JSON
    /// endpoint and the Python binding cannot drift apart.
    pub fn fields(&self) -> [(&'static str, u64); 40] {
        [
            ("requests", self.requests),
            ("connections", self.connections),
            ("queue_waiting", self.queue_waiting),
            ("queue_busy", self.queue_busy),
            ("queue_peak", self.queue_peak),
            ("queue_served", self.queue_served),
            ("queue_refused", self.queue_refused),
            ("contention_busy", self.contention_busy),
            ("contention_peak", self.contention_peak),
            ("contention_served", self.contention_served),
            ("rate_accepted", self.rate_accepted),
            ("rate_refused", self.rate_refused),
            ("form_pages", self.form_pages),
            ("sessions_issued", self.sessions_issued),
            ("forms_posted", self.forms_posted),
            ("forms_invalid", self.forms_invalid),
            ("missing_cookie", self.missing_cookie),
            ("thanks_pages", self.thanks_pages),
            ("tasks_submitted", self.tasks_submitted),
            ("tasks_polled", self.tasks_polled),
            ("tasks_running", self.tasks_running),
            ("tasks_results", self.tasks_results),
            ("tasks_refused", self.tasks_refused),
            ("tasks_succeeded", self.tasks_succeeded),
            ("tasks_failed", self.tasks_failed),
            ("tasks_resubmitted", self.tasks_resubmitted),
            ("stream_responses", self.stream_responses),
            ("stream_events", self.stream_events),
            ("completion_tokens", self.completion_tokens),
            ("ws_sockets", self.ws_sockets),
            ("ws_received", self.ws_received),
            ("ws_sent", self.ws_sent),
            ("ws_dropped", self.ws_dropped),
            ("ws_closed", self.ws_closed),
            ("idle_closed", self.idle_closed),
            ("grpc_calls", self.grpc_calls),
            ("grpc_received", self.grpc_received),
            ("grpc_messages", self.grpc_messages),
            ("grpc_failed", self.grpc_failed),
            ("grpc_deadline", self.grpc_deadline),
        ]
    }

    /// to_json renders the counters as one JSON object, e.g. `{"requests": 3, ...}`.
    pub fn to_json(&self) -> String {
        let pairs: Vec<String> = self
            .fields()
            .iter()
            .map(|(name, value)| format!("\"{name}\": {value}"))
            .collect();
        format!("{{{}}}\n", pairs.join(", "))
    }
}

/// Counters belong to one serving thread; cache-line aligned so threads never share a line,
/// and only that thread writes them (Relaxed is enough: readers want totals, not ordering).
#[derive(Debug, Default)]
#[repr(align(64))]
pub(crate) struct Counters {
    requests: AtomicU64,
    connections: AtomicU64,
    form_pages: AtomicU64,
    sessions_issued: AtomicU64,
    forms_posted: AtomicU64,
    forms_invalid: AtomicU64,
    missing_cookie: AtomicU64,
    thanks_pages: AtomicU64,
    tasks_submitted: AtomicU64,
    tasks_polled: AtomicU64,
    tasks_running: AtomicU64,
    tasks_results: AtomicU64,
    tasks_refused: AtomicU64,
    tasks_succeeded: AtomicU64,
    tasks_failed: AtomicU64,
    tasks_resubmitted: AtomicU64,
    stream_responses: AtomicU64,
    stream_events: AtomicU64,
    completion_tokens: AtomicU64,
    ws_sockets: AtomicU64,
    ws_received: AtomicU64,
    ws_sent: AtomicU64,
    ws_dropped: AtomicU64,
    ws_closed: AtomicU64,
    idle_closed: AtomicU64,
    grpc_calls: AtomicU64,
    grpc_received: AtomicU64,
    grpc_messages: AtomicU64,
    grpc_failed: AtomicU64,
    grpc_deadline: AtomicU64,
}

impl Counters {
    pub(crate) fn add_request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add_connection(&self) {
        self.connections.fetch_add(1, Ordering::Relaxed);
    }

    /// add_idle_closed counts a connection closed by the idle timeout.
    pub(crate) fn add_idle_closed(&self) {
        self.idle_closed.fetch_add(1, Ordering::Relaxed);
    }

    /// add_stream counts a streamed answer begun.
    pub(crate) fn add_stream(&self) {
        self.stream_responses.fetch_add(1, Ordering::Relaxed);
    }

    /// add_pieces counts `events` SSE events and `tokens` completion tokens written.
    pub(crate) fn add_pieces(&self, events: u64, tokens: u64) {
        self.stream_events.fetch_add(events, Ordering::Relaxed);
        self.completion_tokens.fetch_add(tokens, Ordering::Relaxed);
    }

    /// add_socket counts a WebSocket upgrade answered.
    pub(crate) fn add_socket(&self) {
        self.ws_sockets.fetch_add(1, Ordering::Relaxed);
    }

    /// add_socket_messages counts WebSocket messages read and written.
    pub(crate) fn add_socket_messages(&self, received: u64, sent: u64) {
        self.ws_received.fetch_add(received, Ordering::Relaxed);
        self.ws_sent.fetch_add(sent, Ordering::Relaxed);
    }

    /// add_socket_end counts a socket the probe ended: dropped, or closed with a frame.
    pub(crate) fn add_socket_end(&self, dropped: bool) {
        let counter = if dropped {
            &self.ws_dropped
        } else {
            &self.ws_closed
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// add_grpc counts a gRPC call of `received` request messages answered with `messages`
    /// replies, `failed` when its status was not OK, `late` when that was its deadline's.
    pub(crate) fn add_grpc(&self, received: u64, messages: u64, failed: bool, late: bool) {
        self.grpc_calls.fetch_add(1, Ordering::Relaxed);
        self.grpc_received.fetch_add(received, Ordering::Relaxed);
        self.grpc_messages.fetch_add(messages, Ordering::Relaxed);
        self.grpc_failed
            .fetch_add(u64::from(failed), Ordering::Relaxed);
        self.grpc_deadline
            .fetch_add(u64::from(late), Ordering::Relaxed);
    }

    /// add_form counts one answer of the form app under its outcome.
    pub(crate) fn add_form(&self, outcome: &Outcome) {
        let counter = match outcome {
            Outcome::FormPage { new_session } => {
                if *new_session {
                    self.sessions_issued.fetch_add(1, Ordering::Relaxed);
                }
                &self.form_pages
            }
            Outcome::Posted => &self.forms_posted,
            Outcome::BadForm(_) | Outcome::TooLarge => &self.forms_invalid,
            Outcome::NoSession => &self.missing_cookie,
            Outcome::ThanksPage => &self.thanks_pages,
            Outcome::NotAllowed => return,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// add_task counts one answer of the task app under its outcome.
    pub(crate) fn add_task(&self, outcome: &TaskOutcome) {
        let counter = match outcome {
            TaskOutcome::Submitted(_) => &self.tasks_submitted,
            TaskOutcome::Resubmitted(_) => {
                self.tasks_resubmitted.fetch_add(1, Ordering::Relaxed);
                &self.tasks_submitted
            }
            TaskOutcome::Status { task, done } => {
                let told = match (done, task.failed()) {
                    (false, _) => &self.tasks_running,
                    (true, true) => &self.tasks_failed,
                    (true, false) => &self.tasks_succeeded,
                };
                told.fetch_add(1, Ordering::Relaxed);
                &self.tasks_polled
            }
            TaskOutcome::Result(_) => &self.tasks_results,
            _ => &self.tasks_refused,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Board holds every thread's counters and sums them on demand (no lock on the request path).
#[derive(Debug)]
pub(crate) struct Board {
    threads: Vec<Counters>,
}

impl Board {
    pub(crate) fn new(threads: usize) -> Board {
        Board {
            threads: (0..threads.max(1)).map(|_| Counters::default()).collect(),
        }
    }

    /// thread returns the counters of serving thread `index` (clamped, never panics).
    pub(crate) fn thread(&self, index: usize) -> &Counters {
        let last = self.threads.len().saturating_sub(1);
        &self.threads[index.min(last)]
    }

    pub(crate) fn snapshot(&self) -> TargetStats {
        self.threads.iter().fold(TargetStats::default(), |sum, c| {
            let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
            TargetStats {
                requests: sum.requests + get(&c.requests),
                connections: sum.connections + get(&c.connections),
                form_pages: sum.form_pages + get(&c.form_pages),
                sessions_issued: sum.sessions_issued + get(&c.sessions_issued),
                forms_posted: sum.forms_posted + get(&c.forms_posted),
                forms_invalid: sum.forms_invalid + get(&c.forms_invalid),
                missing_cookie: sum.missing_cookie + get(&c.missing_cookie),
                thanks_pages: sum.thanks_pages + get(&c.thanks_pages),
                tasks_submitted: sum.tasks_submitted + get(&c.tasks_submitted),
                tasks_polled: sum.tasks_polled + get(&c.tasks_polled),
                tasks_running: sum.tasks_running + get(&c.tasks_running),
                tasks_results: sum.tasks_results + get(&c.tasks_results),
                tasks_refused: sum.tasks_refused + get(&c.tasks_refused),
                tasks_succeeded: sum.tasks_succeeded + get(&c.tasks_succeeded),
                tasks_failed: sum.tasks_failed + get(&c.tasks_failed),
                tasks_resubmitted: sum.tasks_resubmitted + get(&c.tasks_resubmitted),
                stream_responses: sum.stream_responses + get(&c.stream_responses),
                stream_events: sum.stream_events + get(&c.stream_events),
                completion_tokens: sum.completion_tokens + get(&c.completion_tokens),
                ws_sockets: sum.ws_sockets + get(&c.ws_sockets),
                ws_received: sum.ws_received + get(&c.ws_received),
                ws_sent: sum.ws_sent + get(&c.ws_sent),
                ws_dropped: sum.ws_dropped + get(&c.ws_dropped),
                ws_closed: sum.ws_closed + get(&c.ws_closed),
                idle_closed: sum.idle_closed + get(&c.idle_closed),
                grpc_calls: sum.grpc_calls + get(&c.grpc_calls),
                grpc_received: sum.grpc_received + get(&c.grpc_received),
                grpc_messages: sum.grpc_messages + get(&c.grpc_messages),
                grpc_failed: sum.grpc_failed + get(&c.grpc_failed),
                grpc_deadline: sum.grpc_deadline + get(&c.grpc_deadline),
                ..sum
            }
        })
    }
}
