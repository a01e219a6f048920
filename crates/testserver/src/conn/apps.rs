//! The apps a connection answers for the scenario probes: the form app's pages (`form.rs`:
//! the survey's form, its post and the thank-you page), the task app's submit, status and
//! result (`task.rs`), each queued in the connection's output and counted, and the redirect
//! to another server (`/redirect?to=URL`).

use super::*;

impl<S: Io> Conn<S> {
    /// answer_form queues the form app's answer (`form.rs`) and counts it.
    pub(super) fn answer_form(&mut self, page: Page, behaviour: &Behaviour, request: &Request) {
        let shared = Arc::clone(&self.shared);
        let session = request
            .session
            .as_deref()
            .is_some_and(|id| shared.sessions.valid(id));
        let visit = Visit {
            verb: request.verb,
            session,
            form_type: request.form_type,
            body: &self.body,
            too_large: self.body_over,
        };
        let outcome = form::decide(page, &visit);
        shared.board.thread(self.thread).add_form(&outcome);
        let cookie: String;
        let mut extra: [(&str, &str); 1] = [("", "")];
        let mut extras = 0;
        match &outcome {
            Outcome::FormPage { new_session: true } => {
                let id = shared.sessions.issue(self.rng.random());
                cookie = format!("session={id}; Path=/; HttpOnly");
                extra[0] = ("set-cookie", &cookie);
                extras = 1;
            }
            Outcome::Posted => {
                extra[0] = ("location", "/thanks");
                extras = 1;
            }
            Outcome::NotAllowed => {
                let allow = match page {
                    Page::Form => "GET, HEAD, POST",
                    Page::Thanks => "GET, HEAD",
                };
                extra[0] = ("allow", allow);
                extras = 1;
            }
            _ => {}
        }
        let reason: String;
        let (content_type, body): (&'static str, &[u8]) = match &outcome {
            Outcome::FormPage { .. } => ("text/html; charset=utf-8", form::PAGE.as_bytes()),
            Outcome::ThanksPage => ("text/html; charset=utf-8", form::THANKS.as_bytes()),
            Outcome::Posted => ("text/plain", b"see /thanks\n"),
            Outcome::NoSession => ("text/plain", b"no session: GET /form first\n"),
            Outcome::BadForm(why) => {
                reason = format!("{why}\n");
                ("text/plain", reason.as_bytes())
            }
            Outcome::TooLarge => ("text/plain", b"form body too large\n"),
            Outcome::NotAllowed => ("text/plain", b"method not allowed\n"),
        };
        let status = outcome.status();
        let framing = framing(behaviour);
        let head = Head {
            status,
            content_type,
            body_len: body.len() as u64,
            framing,
            close: behaviour.close || !request.keep_alive,
        };
        response::encode_head_with(&mut self.out, &head, &extra[..extras]);
        if response::has_body(status) && !request.head_only {
            response::encode_piece(&mut self.out, body, framing);
            response::encode_end(&mut self.out, framing);
        }
    }

    /// answer_task queues the task app's answer (`task.rs`) and counts it; head and body go
    /// out in one write with the rest of the batch.
    pub(super) fn answer_task(&mut self, ask: Ask, behaviour: &Behaviour, request: &Request) {
        let shared = Arc::clone(&self.shared);
        let outcome = if self.body_over {
            task::Outcome::Invalid(StatusCode::PAYLOAD_TOO_LARGE, "body too large")
        } else {
            let now = shared.started.elapsed();
            let outcome = task::decide(&shared.tasks, ask, request.verb, &self.body, now);
            task::submitted(
                &shared.tasks,
                outcome,
                request.retry_of,
                shared.failing.as_ref(),
            )
        };
        shared.board.thread(self.thread).add_task(&outcome);
        // The request body is no longer needed: its buffer holds the answer's.
        let out = &mut self.body;
        out.clear();
        let mut extra: [(&str, &str); 1] = [("", "")];
        let mut extras = 0;
        let content_type = match &outcome {
            task::Outcome::Submitted(kind) | task::Outcome::Resubmitted(kind) => {
                let now = shared.started.elapsed();
                let id = shared.tasks.issue(now, *kind, self.rng.random());
                out.extend_from_slice(b"{\"id\":\"");
                out.extend_from_slice(id.as_str().as_bytes());
                out.extend_from_slice(b"\",\"status\":\"QUEUED\"}");
                "application/json"
            }
            task::Outcome::Status { task, done } => {
                let id = shared.tasks.text(task.payload());
                task.status_json(id.as_str(), *done, out);
                "application/json"
            }
            task::Outcome::Result(task) => {
                let id = shared.tasks.text(task.payload());
                task.result(id.as_str(), out)
            }
            task::Outcome::NotDone => {
                out.extend_from_slice(b"{\"error\":\"not finished yet\"}");
                "application/json"
            }
            task::Outcome::Unknown => {
                out.extend_from_slice(b"{\"error\":\"unknown task\"}");
                "application/json"
            }
            task::Outcome::Invalid(_, why) => {
                out.extend_from_slice(b"{\"error\":\"");
                out.extend_from_slice(why.as_bytes());
                out.extend_from_slice(b"\"}");
                "application/json"
            }
            task::Outcome::NotAllowed(allow) => {
                extra[0] = ("allow", allow);
                extras = 1;
                out.extend_from_slice(b"method not allowed\n");
                "text/plain"
            }
        };
        let status = outcome.status();
        let framing = framing(behaviour);
        let head = Head {
            status,
            content_type,
            body_len: self.body.len() as u64,
            framing,
            close: behaviour.close || !request.keep_alive,
        };
        response::encode_head_with(&mut self.out, &head, &extra[..extras]);
        if response::has_body(status) && !request.head_only {
            response::encode_piece(&mut self.out, &self.body, framing);
            response::encode_end(&mut self.out, framing);
        }
    }

    /// answer_redirect queues a `/redirect?to=URL`'s answer: 302 to URL, or 400 without one.
    pub(super) fn answer_redirect(&mut self, behaviour: &Behaviour, request: &Request) {
        let (status, extra, body): (_, &[(&str, &str)], &[u8]) = match &request.location {
            Some(to) => (
                StatusCode::FOUND,
                &[("location", to.as_str())],
                b"see location\n",
            ),
            None => (StatusCode::BAD_REQUEST, &[], b"redirect needs to=URL\n"),
        };
        let framing = framing(behaviour);
        let head = Head {
            status,
            content_type: "text/plain",
            body_len: body.len() as u64,
            framing,
            close: behaviour.close || !request.keep_alive,
        };
        response::encode_head_with(&mut self.out, &head, extra);
        if !request.head_only {
            response::encode_piece(&mut self.out, body, framing);
            response::encode_end(&mut self.out, framing);
        }
    }
}
