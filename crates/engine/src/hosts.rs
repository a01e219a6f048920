//! Hosts: the origins (scheme, host, port) a run talks to, and its figures per origin.
//!
//! A plain run and a scenario of paths talk to the run's host alone. A scenario whose URLs
//! are absolute talks to others too, found as the flow runs (a URL can come from a
//! response). Each worker thread keeps its own table of [`Origins`] (index 0 is the run's
//! host), bounded by [`MAX_ORIGINS`], and its figures per origin ([`HostStats`], indexed
//! like the table), merged across threads by the origin's name
//! (`http://127.0.0.1:8080`), as injectors' reports merge in Python.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::config::Checked;
use crate::hdr::{encode_histogram, micros, new_histogram, LatencySummary};
use crate::scenario::url::Origin;
use crate::tls::TlsSettings;

pub use crate::scenario::url::MAX_ORIGINS;

/// name is an origin's name in the figures: `scheme://host:port`, the port always written,
/// the host lower case, an IPv6 address in brackets.
pub fn name(https: bool, host: &str, port: u16) -> String {
    named(if https { "https" } else { "http" }, host, port)
}

/// named is [`name`] of a scheme given (`grpc`, `grpcs` for a flow's gRPC calls).
fn named(scheme: &str, host: &str, port: u16) -> String {
    let host = host.to_ascii_lowercase();
    if host.contains(':') {
        format!("{scheme}://[{host}]:{port}")
    } else {
        format!("{scheme}://{host}:{port}")
    }
}

/// Entry is one origin a thread's lanes connect to.
#[derive(Debug, Clone)]
pub struct Entry {
    /// https: TLS.
    pub https: bool,
    /// host: the host as the URLs write it.
    pub host: String,
    /// port: the port.
    pub port: u16,
    /// addr: the address it resolved to.
    pub addr: SocketAddr,
    /// tls: its TLS settings (its own server name), for https.
    pub tls: Option<TlsSettings>,
    /// grpc: a flow's gRPC calls go there, each lane on an HTTP/2 connection of its own.
    pub grpc: bool,
}

impl Entry {
    /// name is the origin's name in the figures (see [`name`]).
    pub fn name(&self) -> String {
        match (self.grpc, self.https) {
            (true, true) => named("grpcs", &self.host, self.port),
            (true, false) => named("grpc", &self.host, self.port),
            (false, https) => name(https, &self.host, self.port),
        }
    }
}

/// Origins is a worker thread's table of origins: index 0 is the run's host; the others
/// are added as flows first reach them, at most [`MAX_ORIGINS`] in all.
#[derive(Debug)]
pub struct Origins {
    entries: Vec<Entry>,
    /// insecure, ca_file: the run's TLS options, for the https origins added.
    insecure: bool,
    ca_file: Option<String>,
}

impl Origins {
    /// new makes the table of a run whose host resolved to `addr`.
    pub fn new(cfg: &Checked, addr: SocketAddr) -> Origins {
        Origins {
            entries: vec![Entry {
                https: cfg.target.https,
                host: cfg.target.host.clone(),
                port: cfg.target.port,
                addr,
                tls: cfg.tls.clone(),
                grpc: false,
            }],
            insecure: cfg.insecure,
            ca_file: cfg.ca_file.clone(),
        }
    }

    /// find is the index of origin `o`, if the table holds it.
    pub fn find(&self, o: &Origin<'_>) -> Option<usize> {
        self.entries.iter().position(|e| {
            e.https == o.https
                && e.grpc == o.grpc
                && e.port == o.port
                && e.host.eq_ignore_ascii_case(o.host)
        })
    }

    /// full says whether the table holds [`MAX_ORIGINS`] origins already.
    pub fn full(&self) -> bool {
        self.entries.len() >= MAX_ORIGINS
    }

    /// get is origin `i`.
    pub fn get(&self, i: usize) -> Option<&Entry> {
        self.entries.get(i)
    }

    /// name is origin `i`'s name in the figures.
    pub fn name(&self, i: usize) -> String {
        self.entries.get(i).map_or_else(String::new, Entry::name)
    }

    /// add puts origin `o`, resolved to `addr`, in the table and returns its index; an error
    /// says in words why not (the table is full, its TLS settings cannot be made).
    pub fn add(&mut self, o: &Origin<'_>, addr: SocketAddr) -> Result<usize, String> {
        if let Some(i) = self.find(o) {
            return Ok(i);
        }
        if self.full() {
            return Err(format!(
                "more than {MAX_ORIGINS} hosts in one run: {} not reached",
                name(o.https, o.host, o.port)
            ));
        }
        let tls = match o.https {
            true => Some(
                TlsSettings::new(o.host, self.insecure, self.ca_file.as_deref())
                    .map_err(|e| e.to_string())?,
            ),
            false => None,
        };
        self.entries.push(Entry {
            https: o.https,
            host: o.host.to_string(),
            port: o.port,
            addr,
            tls,
            grpc: o.grpc,
        });
        Ok(self.entries.len() - 1)
    }
}

/// HostStats is one origin's figures in a thread's (or, merged, the run's) totals.
#[derive(Debug, Clone)]
pub struct HostStats {
    /// origin: its name (see [`name`]).
    pub origin: String,
    /// requests: responses received from it.
    pub requests: u64,
    /// errors: its requests that failed: no response, an error status the flow did not
    /// expect, a failed check.
    pub errors: u64,
    /// latency: its responses' latency, µs (unfinished requests are in the run's figures
    /// only).
    pub latency: Histogram<u64>,
}

impl HostStats {
    /// new makes empty figures for `origin`.
    pub fn new(origin: String, highest_us: u64) -> HostStats {
        HostStats {
            origin,
            requests: 0,
            errors: 0,
            latency: new_histogram(highest_us),
        }
    }

    /// answered counts a response that took `latency`, an error when `failed`.
    pub fn answered(&mut self, latency: Duration, failed: bool) {
        self.requests += 1;
        self.errors += u64::from(failed);
        self.latency.saturating_record(micros(latency));
    }
}

/// merge folds another thread's per-origin figures into `mine`, origin by origin.
pub fn merge(mine: &mut Vec<HostStats>, theirs: &[HostStats]) {
    for t in theirs {
        match mine.iter_mut().find(|m| m.origin == t.origin) {
            Some(m) => {
                m.requests += t.requests;
                m.errors += t.errors;
                let _ = m.latency.add(&t.latency);
            }
            None => mine.push(t.clone()),
        }
    }
}

/// HostReport is the report's figures of one origin (`per_host`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostReport {
    /// requests: responses received from it.
    pub requests: u64,
    /// errors: its requests that failed.
    pub errors: u64,
    /// latency_ms: its responses' latency.
    pub latency_ms: LatencySummary,
    /// histogram: its latency histogram (µs, encoded as the report's), so that injectors'
    /// per-host figures merge exactly.
    pub histogram: String,
}

/// report is the `per_host` object: per origin name.
pub fn report(hosts: &[HostStats]) -> BTreeMap<String, HostReport> {
    hosts
        .iter()
        .map(|h| {
            let r = HostReport {
                requests: h.requests,
                errors: h.errors,
                latency_ms: LatencySummary::from_histogram(&h.latency),
                histogram: encode_histogram(&h.latency),
            };
            (h.origin.clone(), r)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_named_alike_whatever_the_url_wrote() {
        let cases: &[(bool, &str, u16, &str)] = &[
            (false, "127.0.0.1", 8080, "http://127.0.0.1:8080"),
            (true, "Api.Example", 443, "https://api.example:443"),
            (false, "::1", 80, "http://[::1]:80"),
        ];
        for (https, host, port, want) in cases {
            assert_eq!(name(*https, host, *port), *want);
        }
    }

    #[test]
    fn figures_merge_by_origin() {
        let high = 60_000_000;
        let ms = Duration::from_millis;
        let mut a = vec![HostStats::new("http://a:1".into(), high)];
        a[0].answered(ms(1), false);
        let mut b = vec![
            HostStats::new("http://b:2".into(), high),
            HostStats::new("http://a:1".into(), high),
        ];
        b[0].answered(ms(3), true);
        b[1].answered(ms(2), false);
        b[1].answered(ms(2), true);
        merge(&mut a, &b);
        let r = report(&a);
        assert_eq!((r["http://a:1"].requests, r["http://a:1"].errors), (3, 1));
        assert_eq!((r["http://b:2"].requests, r["http://b:2"].errors), (1, 1));
        assert_eq!(a[0].latency.len(), 3);
    }

    #[test]
    fn the_table_is_bounded_and_finds_what_it_holds() {
        let cfg = crate::config::RunConfig {
            url: "http://run:9/".into(),
            ..Default::default()
        }
        .check()
        .expect("valid");
        let addr: SocketAddr = "127.0.0.1:9".parse().expect("addr");
        let mut t = Origins::new(&cfg, addr);
        let o = |host, port| Origin {
            https: false,
            host,
            port,
            authority: "",
            grpc: false,
        };
        assert_eq!(t.find(&o("RUN", 9)), Some(0), "case-insensitive");
        assert_eq!(t.find(&o("run", 10)), None, "another port");
        let calls = Origin {
            grpc: true,
            ..o("run", 9)
        };
        assert_eq!(t.find(&calls), None, "the run's host:port, called by gRPC");
        assert_eq!(t.add(&o("run", 9), addr), Ok(0), "already there");
        assert_eq!(t.add(&calls, addr), Ok(1));
        assert_eq!(t.name(1), "grpc://run:9");
        let hosts: Vec<String> = (2..MAX_ORIGINS).map(|i| format!("h{i}")).collect();
        for (i, h) in hosts.iter().enumerate() {
            assert_eq!(t.add(&o(h, 1), addr), Ok(i + 2));
        }
        let err = t.add(&o("one-too-many", 1), addr).expect_err("full");
        assert!(err.contains("more than 64 hosts"), "{err}");
        assert_eq!(t.name(3), "http://h3:1");
        assert_eq!(t.find(&o("h63", 1)), Some(63));
    }
}
