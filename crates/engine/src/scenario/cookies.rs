//! The cookie jar of one VU: what `Set-Cookie` stored goes back in a `Cookie` header on the
//! VU's later requests to the same host, so that session flows (log in, post a form) work
//! across the hosts a flow talks to. Cookies are kept per domain as RFC 6265 says: a cookie
//! without `Domain` goes back to the host that set it only; with `Domain=example.com` (which
//! the setting host must be within) to that domain and its subdomains. As in browsers, the
//! port does not separate cookies. Paths are not told apart; `Max-Age=0` (or negative)
//! deletes.

/// Cookie is one stored cookie: where it goes back, its name and value.
#[derive(Debug, Clone)]
struct Cookie {
    /// domain: the host (host-only) or the `Domain` attribute, lower case.
    domain: String,
    /// host_only: sent to `domain` itself only (no `Domain` attribute).
    host_only: bool,
    name: String,
    value: String,
}

impl Cookie {
    /// goes_to says whether the cookie is sent to `host`.
    fn goes_to(&self, host: &str) -> bool {
        if self.host_only {
            host.eq_ignore_ascii_case(&self.domain)
        } else {
            within(host, &self.domain)
        }
    }
}

/// within says whether `host` is `domain` or one of its subdomains (RFC 6265 5.1.3).
fn within(host: &str, domain: &str) -> bool {
    let (h, d) = (host.as_bytes(), domain.as_bytes());
    if h.len() == d.len() {
        return h.eq_ignore_ascii_case(d);
    }
    h.len() > d.len()
        && h[h.len() - d.len() - 1] == b'.'
        && h[h.len() - d.len()..].eq_ignore_ascii_case(d)
}

/// CookieJar holds a VU's cookies, in the order they were first set.
#[derive(Debug, Default, Clone)]
pub struct CookieJar {
    cookies: Vec<Cookie>,
}

impl CookieJar {
    /// store reads one `Set-Cookie` value, received from `host`.
    pub fn store(&mut self, set_cookie: &str, host: &str) {
        let mut attrs = set_cookie.split(';');
        let Some((name, value)) = attrs.next().and_then(|p| p.split_once('=')) else {
            return;
        };
        let (name, value) = (name.trim(), value.trim());
        if name.is_empty() {
            return;
        }
        let mut expired = false;
        let mut domain: Option<&str> = None;
        for a in attrs {
            let (k, v) = a.split_once('=').unwrap_or((a, ""));
            let (k, v) = (k.trim(), v.trim());
            if k.eq_ignore_ascii_case("max-age") {
                expired |= v.parse::<i64>().is_ok_and(|n| n <= 0);
            } else if k.eq_ignore_ascii_case("domain") && !v.is_empty() {
                domain = Some(v.trim_start_matches('.'));
            }
        }
        let (domain, host_only) = match domain {
            None => (host, true),
            // A host may set a cookie for itself or a domain it is within, no other.
            Some(d) if within(host, d) => (d, false),
            Some(_) => return,
        };
        let at = self.cookies.iter().position(|c| {
            c.name == name && c.host_only == host_only && c.domain.eq_ignore_ascii_case(domain)
        });
        match (at, expired) {
            (Some(i), true) => {
                self.cookies.remove(i);
            }
            (Some(i), false) => {
                self.cookies[i].value.clear();
                self.cookies[i].value.push_str(value);
            }
            (None, false) => self.cookies.push(Cookie {
                domain: domain.to_ascii_lowercase(),
                host_only,
                name: name.to_string(),
                value: value.to_string(),
            }),
            (None, true) => {}
        }
    }

    /// write_header adds a `Cookie` header of the cookies that go to `host` to `out`, when
    /// there is any.
    pub fn write_header(&self, out: &mut crate::message::Request, host: &str) {
        let mut to = self.cookies.iter().filter(|c| c.goes_to(host)).peekable();
        if to.peek().is_none() {
            return;
        }
        out.header_with(b"Cookie", |out| {
            for (i, c) in to.enumerate() {
                if i > 0 {
                    out.extend_from_slice(b"; ");
                }
                out.extend_from_slice(c.name.as_bytes());
                out.push(b'=');
                out.extend_from_slice(c.value.as_bytes());
            }
        });
    }

    /// clear empties the jar.
    pub fn clear(&mut self) {
        self.cookies.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// header is the `Cookie` line the jar adds to a request to `host` ("" for none).
    fn header(jar: &CookieJar, host: &str) -> String {
        let mut out = crate::message::Request::default();
        jar.write_header(&mut out, host);
        let lines: Vec<_> = (out.headers())
            .map(|(n, v)| {
                format!(
                    "{}: {}\r\n",
                    String::from_utf8_lossy(n),
                    String::from_utf8_lossy(v)
                )
            })
            .collect();
        lines.concat()
    }

    #[test]
    fn stores_replaces_and_deletes() {
        let cases: &[(&str, &[&str], &str)] = &[
            ("empty", &[], ""),
            ("one", &["sid=abc; Path=/; HttpOnly"], "Cookie: sid=abc\r\n"),
            ("two in order", &["a=1", "b=2"], "Cookie: a=1; b=2\r\n"),
            ("replace", &["a=1", "a=3"], "Cookie: a=3\r\n"),
            (
                "delete",
                &["a=1", "b=2", "a=; Max-Age=0"],
                "Cookie: b=2\r\n",
            ),
            ("malformed ignored", &["novalue", "=x"], ""),
        ];
        for (label, sets, want) in cases {
            let mut jar = CookieJar::default();
            for s in *sets {
                jar.store(s, "h");
            }
            assert_eq!(header(&jar, "h"), *want, "{label}");
        }
    }

    #[test]
    fn cookies_go_back_to_their_domain() {
        // label, (set-cookie, from host) stored in order, host asked for, the header
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str, &'a str);
        let cases: &[Case] = &[
            (
                "host-only, same host",
                &[("a=1", "a.test")],
                "a.test",
                "Cookie: a=1\r\n",
            ),
            (
                "host-only, case",
                &[("a=1", "A.test")],
                "a.TEST",
                "Cookie: a=1\r\n",
            ),
            ("host-only, other host", &[("a=1", "a.test")], "b.test", ""),
            (
                "host-only, not a subdomain",
                &[("a=1", "a.test")],
                "x.a.test",
                "",
            ),
            (
                "two hosts, each its own",
                &[("a=1", "a.test"), ("b=2", "b.test")],
                "b.test",
                "Cookie: b=2\r\n",
            ),
            (
                "one name on two hosts",
                &[("s=1", "a.test"), ("s=2", "b.test")],
                "a.test",
                "Cookie: s=1\r\n",
            ),
            (
                "Domain reaches subdomains",
                &[("d=1; Domain=.shop.test", "www.shop.test")],
                "api.shop.test",
                "Cookie: d=1\r\n",
            ),
            (
                "Domain reaches itself",
                &[("d=1; Domain=shop.test", "www.shop.test")],
                "shop.test",
                "Cookie: d=1\r\n",
            ),
            (
                "Domain outside the host is refused",
                &[("d=1; Domain=other.test", "www.shop.test")],
                "other.test",
                "",
            ),
            (
                "a suffix is no subdomain",
                &[("d=1; Domain=shop.test", "shop.test")],
                "myshop.test",
                "",
            ),
            (
                "deleted on its host only",
                &[
                    ("s=1", "a.test"),
                    ("s=2", "b.test"),
                    ("s=; Max-Age=0", "a.test"),
                ],
                "b.test",
                "Cookie: s=2\r\n",
            ),
        ];
        for (label, sets, host, want) in cases {
            let mut jar = CookieJar::default();
            for (s, from) in *sets {
                jar.store(s, from);
            }
            assert_eq!(header(&jar, host), *want, "{label}");
        }
    }
}
