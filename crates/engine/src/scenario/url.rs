//! Request URLs of a flow: a path on the run's host (`/users/1`) or an absolute `http://` or
//! `https://` URL (a gRPC call's `grpc://` or `grpcs://`: see [`super::grpc::split`]; any host
//! and port, IPv6 literals in brackets), split per request into the
//! origin the request goes to, the `Host` header and the request target; and a redirect's
//! `Location` resolved against the URL of the request it answered.
//!
//! [`split`] is hand-rolled rather than `url::Url::parse`: it runs on every request of a flow
//! whose URL is a template, and must not allocate (the url crate builds a `String` per parse;
//! see scenario_alloc.rs). It only cuts the text where RFC 3986 puts the boundaries and
//! leaves the path as written. The rare relative references of a `Location` (`../x`, `?q`)
//! are resolved by the url crate ([`resolve`]).

/// MAX_ORIGINS bounds the origins (scheme, host, port) one run talks to: each has its own
/// connections, so a flow whose URLs come from responses must not grow them without end.
pub const MAX_ORIGINS: usize = 64;

/// Origin is where an absolute URL's request goes: borrowed from the URL's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin<'a> {
    /// https: the scheme is https.
    pub https: bool,
    /// host: the host name or address, IPv6 without its brackets.
    pub host: &'a str,
    /// port: the port (80 or 443 when the URL gives none).
    pub port: u16,
    /// authority: the `Host` header, `host[:port]` as written.
    pub authority: &'a str,
    /// grpc: a `grpc://` or `grpcs://` origin, whose calls go over HTTP/2 (a connection of
    /// its own, apart from the same host's HTTP/1.1 one: see [`super::grpc`]).
    pub grpc: bool,
}

impl Origin<'_> {
    /// same says whether two origins are one (scheme, host case-insensitively, port).
    pub fn same(&self, o: &Origin<'_>) -> bool {
        self.https == o.https
            && self.grpc == o.grpc
            && self.port == o.port
            && self.host.eq_ignore_ascii_case(o.host)
    }
}

/// Split is a URL cut in place: its origin (None: a path on the run's host) and where its
/// request target starts (`""` stands for `/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split<'a> {
    /// origin: the absolute URL's origin, or None for a path.
    pub origin: Option<Origin<'a>>,
    /// target: the path and query, as sent on the request line (fragment left out).
    pub target: &'a str,
}

/// scheme_len is the length of an `http://` or `https://` prefix (any case), and whether it is
/// https; None for any other text.
pub fn scheme_len(url: &str) -> Option<(usize, bool)> {
    let b = url.as_bytes();
    let starts = |p: &str| b.len() >= p.len() && b[..p.len()].eq_ignore_ascii_case(p.as_bytes());
    if starts("http://") {
        Some((7, false))
    } else if starts("https://") {
        Some((8, true))
    } else {
        None
    }
}

/// split cuts `url`, or says in a few words why it is no request URL.
pub fn split(url: &str) -> Result<Split<'_>, &'static str> {
    let url = url.split('#').next().unwrap_or("");
    if url.starts_with('/') && !url.starts_with("//") {
        return Ok(Split {
            origin: None,
            target: url,
        });
    }
    let Some((skip, https, grpc)) = scheme_len(url)
        .map(|(n, s)| (n, s, false))
        .or_else(|| grpc_scheme_len(url).map(|(n, s)| (n, s, true)))
    else {
        return Err("not a path starting with '/' nor an http:// or https:// URL");
    };
    let rest = &url[skip..];
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, target) = rest.split_at(end);
    if authority.contains('@') {
        return Err("user names in URLs are not supported (send an Authorization header)");
    }
    let (host, port) = host_port(authority)?;
    let port = match port {
        Some(p) => p,
        None if https => 443,
        None => 80,
    };
    Ok(Split {
        origin: Some(Origin {
            https,
            host,
            port,
            authority,
            grpc,
        }),
        target,
    })
}

/// grpc_scheme_len is the length of a `grpc://` or `grpcs://` prefix (any case), and whether
/// it is over TLS; None for any other text.
pub fn grpc_scheme_len(url: &str) -> Option<(usize, bool)> {
    let b = url.as_bytes();
    let starts = |p: &str| b.len() >= p.len() && b[..p.len()].eq_ignore_ascii_case(p.as_bytes());
    if starts("grpc://") {
        Some((7, false))
    } else if starts("grpcs://") {
        Some((8, true))
    } else {
        None
    }
}

/// check looks at the literal start of a URL template that starts with no variable
/// (`whole`: the template is that literal): a path, or an absolute URL whose origin, when
/// written out (the literal reaches past it), must be one. A URL whose origin comes from
/// variables is checked per request.
pub fn check(first: &str, whole: bool) -> Result<(), String> {
    match scheme_len(first).or_else(|| grpc_scheme_len(first)) {
        None if first.starts_with('/') && !first.starts_with("//") => Ok(()),
        None => {
            Err("the URL must be a path starting with '/' or an http:// or https:// URL".into())
        }
        Some((skip, _)) if whole || first[skip..].contains(['/', '?']) => split(first)
            .map(|_| ())
            .map_err(|why| format!("bad URL: {why}")),
        Some(_) => Ok(()),
    }
}

/// run_host is the host of an authority (`host:port`, `[v6]:port`), without brackets.
pub fn run_host(authority: &str) -> &str {
    if let Some(v6) = authority.strip_prefix('[') {
        return v6.split(']').next().unwrap_or(v6);
    }
    authority.rsplit_once(':').map_or(authority, |(h, _)| h)
}

/// host_port splits an authority into its host (IPv6 unbracketed) and port, if given.
fn host_port(authority: &str) -> Result<(&str, Option<u16>), &'static str> {
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let Some((host, after)) = v6.split_once(']') else {
            return Err("an IPv6 address without its closing ']'");
        };
        match after {
            "" => (host, None),
            p => match p.strip_prefix(':') {
                Some(p) => (host, Some(p)),
                None => return Err("text after an IPv6 address"),
            },
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err("no host");
    }
    if host
        .bytes()
        .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
    {
        return Err("a space or control character in the host");
    }
    let port = match port {
        None | Some("") => None,
        Some(p) => match p.parse::<u16>() {
            Ok(0) | Err(_) => return Err("a bad port"),
            Ok(n) => Some(n),
        },
    };
    Ok((host, port))
}

/// resolve writes into `out` the URL a `location` leads to from the request made to `base`
/// (a path on the run's host, or absolute): an absolute location as is; `//host/x` with
/// the base's scheme; `/x` on the base's origin (a path stays a path); a relative reference
/// resolved as RFC 3986 says. `run_base` is the run's own origin (`http://host:port`), which
/// a path-only base stands on. False when the location makes no URL.
pub fn resolve(base: &str, location: &str, run_base: &str, out: &mut String) -> bool {
    out.clear();
    let location = location.trim();
    if scheme_len(location).is_some() {
        out.push_str(location);
        return true;
    }
    let origin_end = |u: &str| {
        scheme_len(u)
            .map(|(skip, _)| skip + u[skip..].find(['/', '?', '#']).unwrap_or(u.len() - skip))
    };
    if let Some(rest) = location.strip_prefix("//") {
        let scheme = match scheme_len(base) {
            Some((_, true)) => "https://",
            Some((_, false)) => "http://",
            None => match scheme_len(run_base) {
                Some((_, true)) => "https://",
                _ => "http://",
            },
        };
        out.push_str(scheme);
        out.push_str(rest);
        return true;
    }
    if location.starts_with('/') {
        if let Some(end) = origin_end(base) {
            out.push_str(&base[..end]);
        }
        out.push_str(location);
        return true;
    }
    // A relative reference: the url crate knows RFC 3986's dot segments.
    let absolute;
    let full = if scheme_len(base).is_some() {
        base
    } else {
        absolute = format!("{run_base}{base}");
        &absolute
    };
    let Some(joined) = url::Url::parse(full)
        .ok()
        .and_then(|b| b.join(location).ok())
    else {
        return false;
    };
    let joined = joined.as_str();
    match (scheme_len(base), origin_end(joined)) {
        // The base was a path on the run's host: so is the result.
        (None, Some(end)) => out.push_str(&joined[end..]),
        _ => out.push_str(joined),
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_origin_and_target() {
        // label, url, (https, host, port, authority) or None for a path, target
        type Want = Option<(bool, &'static str, u16, &'static str)>;
        let cases: &[(&str, &str, Want, &str)] = &[
            ("a path", "/a/b?c=1", None, "/a/b?c=1"),
            (
                "http default port",
                "http://h/x",
                Some((false, "h", 80, "h")),
                "/x",
            ),
            (
                "https default port",
                "https://Api.Example/x",
                Some((true, "Api.Example", 443, "Api.Example")),
                "/x",
            ),
            (
                "a port",
                "http://127.0.0.1:8080/a?b",
                Some((false, "127.0.0.1", 8080, "127.0.0.1:8080")),
                "/a?b",
            ),
            ("no path", "http://h:9", Some((false, "h", 9, "h:9")), ""),
            (
                "a query, no path",
                "http://h?q=1",
                Some((false, "h", 80, "h")),
                "?q=1",
            ),
            (
                "IPv6",
                "http://[::1]:8000/v",
                Some((false, "::1", 8000, "[::1]:8000")),
                "/v",
            ),
            (
                "IPv6, no port",
                "https://[::1]/",
                Some((true, "::1", 443, "[::1]")),
                "/",
            ),
            (
                "upper-case scheme",
                "HTTP://h/x",
                Some((false, "h", 80, "h")),
                "/x",
            ),
            (
                "fragment left out",
                "http://h/x#top",
                Some((false, "h", 80, "h")),
                "/x",
            ),
            (
                "empty port",
                "http://h:/x",
                Some((false, "h", 80, "h:")),
                "/x",
            ),
        ];
        for (label, url, want, target) in cases {
            let s = split(url).unwrap_or_else(|e| panic!("{label}: {e}"));
            let got = s.origin.map(|o| (o.https, o.host, o.port, o.authority));
            assert_eq!(got, *want, "{label}");
            assert_eq!(s.target, *target, "{label}");
        }
    }

    #[test]
    fn bad_urls_say_why() {
        let cases: &[(&str, &str)] = &[
            ("x/y", "not a path"),
            ("", "not a path"),
            ("//h/x", "not a path"),
            ("ftp://h/x", "not a path"),
            ("http:///x", "no host"),
            ("http://h:99999/", "bad port"),
            ("http://h:0/", "bad port"),
            ("http://h:x/", "bad port"),
            ("http://u:p@h/", "user names"),
            ("http://[::1/", "closing ']'"),
            ("http://[::1]x/", "after an IPv6"),
            ("http://a b/", "space"),
        ];
        for (url, want) in cases {
            let e = split(url).expect_err(url);
            assert!(e.contains(want), "{url}: {e}");
        }
    }

    #[test]
    fn locations_resolve_against_their_request() {
        let run = "http://run:1";
        let cases: &[(&str, &str, &str, &str)] = &[
            ("absolute", "/a", "http://b:2/x", "http://b:2/x"),
            (
                "absolute from absolute",
                "http://a/x",
                "https://b/y",
                "https://b/y",
            ),
            ("a path on the run's host", "/a/b", "/c", "/c"),
            (
                "a path on another host",
                "http://b:2/a/b?q",
                "/c",
                "http://b:2/c",
            ),
            ("scheme-relative", "https://a/x", "//b:3/y", "https://b:3/y"),
            ("scheme-relative from a path", "/x", "//b/y", "http://b/y"),
            ("relative from a path", "/a/b", "c", "/a/c"),
            ("dot segments from a path", "/a/b/c", "../d", "/a/d"),
            (
                "relative on another host",
                "http://b:2/a/b",
                "c?x=1",
                "http://b:2/a/c?x=1",
            ),
            ("a query alone", "http://b/a?x", "?y", "http://b/a?y"),
            ("spaces trimmed", "/a", " /b ", "/b"),
        ];
        let mut out = String::new();
        for (label, base, loc, want) in cases {
            assert!(resolve(base, loc, run, &mut out), "{label}");
            assert_eq!(out, *want, "{label}");
        }
    }
}
