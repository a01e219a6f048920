//! The forward proxy a run goes through (`--proxy`, or the `HTTP_PROXY`/`HTTPS_PROXY` the
//! package reads), as curl, k6 and wrk's users expect one to work: plain http is sent to the
//! proxy with the request target in absolute form (`GET http://host/path`, RFC 9112 3.2.2);
//! https asks the proxy for a tunnel (`CONNECT host:port`, RFC 9110 9.3.6), then speaks TLS
//! to the origin inside it. Credentials in the proxy's URL go as `Proxy-Authorization: Basic`.
//!
//! Only connects change: a tunnel is asked for once per connection, and a forwarded run's
//! request is made once with its plan like any other run's (`plan.rs` adds the credentials,
//! `http::write_request` the absolute form), so a request costs what it costs without a proxy
//! (the figures then include the proxy's own time, which the CLI says).

use std::future::poll_fn;
use std::io::{self, Read as _, Write as _};
use std::net::TcpStream as StdTcpStream;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use base64::Engine as _;
use tokio::net::TcpStream;

use crate::error::EngineError;
use crate::failure::ErrorClass;
use crate::target::Target;

/// MAX_ANSWER bounds the head of a proxy's answer to CONNECT.
const MAX_ANSWER: usize = 8 * 1024;

/// Proxy is where a run's connections go instead of the target, and what they say to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proxy {
    /// host: the proxy's host, as its URL gives it.
    pub host: String,
    /// port: the proxy's port (its URL's, else 80).
    pub port: u16,
    /// authorization: the `Proxy-Authorization` value from the URL's user and password.
    pub authorization: Option<String>,
    /// tunnel: the CONNECT request an https target's connections open with; None for http.
    pub tunnel: Option<Arc<[u8]>>,
}

impl Proxy {
    /// parse reads the proxy URL `raw` for `target`, or says in one line why it cannot:
    /// an http:// proxy only (what `HTTPS_PROXY` names as well), for a URL run over HTTP/1.1
    /// (`scenario`, `http2` say otherwise).
    pub fn parse(
        raw: &str,
        target: &Target,
        scenario: bool,
        http2: bool,
    ) -> Result<Proxy, EngineError> {
        let bad = |why: &str| EngineError::config(format!("proxy {raw:?}: {why}"));
        let with_scheme = if raw.contains("://") {
            raw.to_string()
        } else {
            format!("http://{raw}") // curl's and Go's reading of a bare host:port
        };
        let url = url::Url::parse(&with_scheme).map_err(|e| bad(&e.to_string()))?;
        if url.scheme() != "http" {
            return Err(bad(&format!(
                "a {} proxy is not supported: give an http:// proxy (it carries https targets too, through CONNECT)",
                url.scheme()
            )));
        }
        let host = match url.host() {
            Some(url::Host::Ipv6(a)) => a.to_string(),
            Some(h) => h.to_string(),
            None => return Err(bad("no host")),
        };
        if scenario {
            return Err(EngineError::config(
                "a proxy carries URL runs only: a scenario's requests go to their hosts directly",
            ));
        }
        if http2 {
            return Err(EngineError::config(
                "HTTP/2 does not go through a proxy here: leave out http2 (HTTP/1.1 through the proxy)",
            ));
        }
        let authorization = (!url.username().is_empty()).then(|| {
            let decode = |s: &str| {
                percent_encoding::percent_decode_str(s)
                    .decode_utf8_lossy()
                    .into_owned()
            };
            let pair = format!(
                "{}:{}",
                decode(url.username()),
                decode(url.password().unwrap_or(""))
            );
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(pair)
            )
        });
        let mut proxy = Proxy {
            host,
            port: url.port().unwrap_or(80),
            authorization,
            tunnel: None,
        };
        if target.https {
            proxy.tunnel = Some(proxy.connect_request(target).into());
        }
        Ok(proxy)
    }

    /// shown is the proxy as messages name it, `host:port` (never its credentials).
    pub fn shown(&self) -> String {
        authority(&self.host, self.port)
    }

    /// connect_request is the CONNECT that opens a tunnel to `target`.
    fn connect_request(&self, target: &Target) -> Vec<u8> {
        let to = authority(&target.host, target.port);
        let mut head = format!("CONNECT {to} HTTP/1.1\r\nHost: {to}\r\n");
        if let Some(auth) = &self.authorization {
            head.push_str(&format!("Proxy-Authorization: {auth}\r\n"));
        }
        head.push_str("\r\n");
        head.into_bytes()
    }

    /// preflight opens the tunnel to `target` on a blocking socket to the proxy (the run's
    /// preflight, before the TLS handshake through it), or says in words why it could not.
    pub fn preflight(
        &self,
        stream: &mut StdTcpStream,
        wait: Duration,
        target: &Target,
    ) -> Result<(), EngineError> {
        let Some(request) = &self.tunnel else {
            return Ok(());
        };
        open_tunnel(stream, request, wait).map_err(|why| {
            EngineError::Unreachable(format!(
                "proxy {} could not reach {}: {why}",
                self.shown(),
                authority(&target.host, target.port)
            ))
        })
    }
}

/// open_tunnel sends the CONNECT `request` on a blocking socket and reads the answer.
fn open_tunnel(stream: &mut StdTcpStream, request: &[u8], wait: Duration) -> Result<(), String> {
    let _ = stream.set_read_timeout(Some(wait));
    let _ = stream.set_write_timeout(Some(wait));
    let failed = |e: io::Error| match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
            format!("no answer to CONNECT within {} s", wait.as_secs_f64())
        }
        _ => format!("CONNECT failed: {e}"),
    };
    stream.write_all(request).map_err(failed)?;
    let mut answer = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = stream.read(&mut chunk).map_err(failed)?;
        if n == 0 {
            return Err("the proxy closed the connection without answering CONNECT".into());
        }
        answer.extend_from_slice(&chunk[..n]);
        if let Some(verdict) = judge(&answer) {
            return verdict;
        }
    }
}

/// authority is `host:port`, an IPv6 address in brackets.
fn authority(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// judge reads a proxy's answer to CONNECT so far: None while its head is incomplete, else
/// whether the tunnel is open (a 2xx), the refusal in words otherwise.
fn judge(answer: &[u8]) -> Option<Result<(), String>> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut response = httparse::Response::new(&mut headers);
    match response.parse(answer) {
        Ok(httparse::Status::Complete(_)) => {
            let code = response.code.unwrap_or(0);
            Some(if (200..300).contains(&code) {
                Ok(())
            } else {
                Err(format!(
                    "the proxy refused the tunnel: {code} {}",
                    response.reason.unwrap_or("")
                ))
            })
        }
        Ok(httparse::Status::Partial) if answer.len() < MAX_ANSWER => None,
        Ok(httparse::Status::Partial) => {
            Some(Err("the proxy's answer to CONNECT is too long".into()))
        }
        Err(_) => Some(Err("the proxy's answer to CONNECT is not HTTP".into())),
    }
}

/// tunnel opens the tunnel on a connection's fresh socket to the proxy, until `expired` (the
/// connection's deadline, polled) says the time is up; a refusal is a connect error (the
/// preflight has said why, when there was one).
pub async fn tunnel(
    stream: &TcpStream,
    request: &[u8],
    expired: &mut impl FnMut(&mut Context<'_>) -> bool,
) -> Result<(), ErrorClass> {
    let mut sent = 0;
    while sent < request.len() {
        match stream.try_write(&request[sent..]) {
            Ok(n) => sent += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                ready(stream, false, expired).await?
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Err(ErrorClass::Connect),
        }
    }
    // Allocated here, once a connection: a buffer held across these awaits would sit in every
    // lane's future, unproxied ones too.
    let mut answer = vec![0u8; MAX_ANSWER];
    let mut len = 0;
    loop {
        match stream.try_read(&mut answer[len..]) {
            Ok(0) => return Err(ErrorClass::Connect),
            Ok(n) => {
                len += n;
                if let Some(verdict) = judge(&answer[..len]) {
                    return verdict.map_err(|_| ErrorClass::Connect);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => ready(stream, true, expired).await?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Err(ErrorClass::Connect),
        }
    }
}

/// ready waits for the socket to be readable (or writable) or the deadline, a connect error.
async fn ready(
    stream: &TcpStream,
    read: bool,
    expired: &mut impl FnMut(&mut Context<'_>) -> bool,
) -> Result<(), ErrorClass> {
    poll_fn(|cx| {
        let r = if read {
            stream.poll_read_ready(cx)
        } else {
            stream.poll_write_ready(cx)
        };
        if let Poll::Ready(r) = r {
            return Poll::Ready(r.map_err(|_| ErrorClass::Connect));
        }
        if expired(cx) {
            return Poll::Ready(Err(ErrorClass::Connect));
        }
        Poll::Pending
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(url: &str) -> Target {
        Target::parse(url).unwrap()
    }

    /// Want: a proxy read as (host, port, authorization, tunnel), or the error's words.
    type Want = Result<
        (
            &'static str,
            u16,
            Option<&'static str>,
            Option<&'static str>,
        ),
        &'static str,
    >;

    #[test]
    fn a_proxy_url_is_read_or_refused_in_one_line() {
        // label, proxy, target, Ok((host, port, authorization, tunnel)) or the error's words
        let https = "https://api.example:8443/x";
        let cases: [(&str, &str, &str, Want); 7] = [
            ("plain", "http://127.0.0.1:3128", "http://a/", Ok(("127.0.0.1", 3128, None, None))),
            ("bare host:port", "proxy.local:8080", "http://a/", Ok(("proxy.local", 8080, None, None))),
            ("no port: 80", "http://proxy", "http://a/", Ok(("proxy", 80, None, None))),
            (
                "credentials, decoded",
                "http://us%40er:p%3Ass@p:1",
                https,
                Ok(("p", 1, Some("Basic dXNAZXI6cDpzcw=="), Some("CONNECT api.example:8443 HTTP/1.1\r\nHost: api.example:8443\r\nProxy-Authorization: Basic dXNAZXI6cDpzcw==\r\n\r\n"))),
            ),
            (
                "an IPv6 target's tunnel",
                "http://[::1]:9",
                "https://[::1]/",
                Ok(("::1", 9, None, Some("CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n\r\n"))),
            ),
            ("socks", "socks5://p:1080", "http://a/", Err("a socks5 proxy is not supported")),
            ("no host", "http://:8", "http://a/", Err("proxy \"http://:8\"")),
        ];
        for (label, raw, url, want) in cases {
            let got = Proxy::parse(raw, &target(url), false, false);
            match (got, want) {
                (Ok(p), Ok((host, port, auth, tunnel))) => {
                    assert_eq!((p.host.as_str(), p.port), (host, port), "{label}");
                    assert_eq!(p.authorization.as_deref(), auth, "{label}");
                    let t = p.tunnel.as_deref().map(|t| std::str::from_utf8(t).unwrap());
                    assert_eq!(t, tunnel, "{label}");
                }
                (Err(e), Err(words)) => assert!(e.to_string().contains(words), "{label}: {e}"),
                (got, _) => panic!("{label}: {got:?}"),
            }
        }
    }

    #[test]
    fn a_scenario_or_http2_is_refused_with_the_reason() {
        let t = target("http://a/");
        let e = Proxy::parse("http://p:1", &t, true, false).unwrap_err();
        assert!(e.to_string().contains("URL runs only"), "{e}");
        let e = Proxy::parse("http://p:1", &t, false, true).unwrap_err();
        assert!(e.to_string().contains("leave out http2"), "{e}");
    }

    #[test]
    fn an_answer_to_connect_is_judged_once_its_head_is_whole() {
        assert_eq!(judge(b"HTTP/1.1 200 Connection established\r\n"), None);
        assert_eq!(
            judge(b"HTTP/1.1 200 Connection established\r\n\r\n"),
            Some(Ok(()))
        );
        assert_eq!(
            judge(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n"),
            Some(Err(
                "the proxy refused the tunnel: 407 Proxy Authentication Required".into()
            ))
        );
        assert!(matches!(judge(b"SSH-2.0-OpenSSH\r\n\r\n"), Some(Err(_))));
    }
}
