//! Target: where a run's requests go, split out of its URL once (scheme, host, port, the
//! request target and the `Host` header).

use crate::error::EngineError;

/// Target is where requests go, split out of the URL once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// host: the host name or address as written in the URL.
    pub host: String,
    /// port: the TCP port (80 when the URL gives none).
    pub port: u16,
    /// path_and_query: the request target, e.g. `/api?x=1`.
    pub path_and_query: String,
    /// authority: the `Host` header value.
    pub authority: String,
    /// path: the path alone, used to name the request (`GET /api`).
    pub path: String,
    /// https: whether the scheme is https.
    pub https: bool,
}

impl Target {
    /// parse splits an http(s) URL into a target, or says in one line why it cannot.
    pub fn parse(raw: &str) -> Result<Target, EngineError> {
        let url = url::Url::parse(raw).map_err(|e| match e {
            url::ParseError::RelativeUrlWithoutBase => EngineError::config(format!(
                "bad URL {raw:?}: no scheme (write http://{raw} or https://{raw})"
            )),
            e => EngineError::config(format!("bad URL {raw:?}: {e}")),
        })?;
        let https = match url.scheme() {
            "http" => false,
            "https" => true,
            // `localhost:8080` parses as scheme "localhost": curl's reading is a host.
            _ if !raw.contains("://") => {
                return Err(EngineError::config(format!(
                    "bad URL {raw:?}: no scheme (write http://{raw} or https://{raw})"
                )))
            }
            other => {
                return Err(EngineError::config(format!(
                    "unsupported scheme {other:?} in {raw:?}: use http or https"
                )))
            }
        };
        let host = match url.host() {
            Some(url::Host::Domain(d)) => d.to_string(),
            Some(url::Host::Ipv4(a)) => a.to_string(),
            Some(url::Host::Ipv6(a)) => a.to_string(),
            None => return Err(EngineError::config(format!("bad URL {raw:?}: no host"))),
        };
        if url.port() == Some(0) {
            return Err(EngineError::config(format!(
                "bad URL {raw:?}: port 0 is not a destination"
            )));
        }
        let port = url.port_or_known_default().unwrap_or(80);
        let authority = match (url.host_str(), url.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_string(),
            (None, _) => host.clone(),
        };
        let path = url.path().to_string();
        let path_and_query = match url.query() {
            Some(q) => format!("{path}?{q}"),
            None => path.clone(),
        };
        Ok(Target {
            host,
            port,
            path_and_query,
            authority,
            path,
            https,
        })
    }
}
