//! The cookie jar of one VU: what `Set-Cookie` stored goes back in a `Cookie` header on the
//! VU's later requests, so that session flows (log in, post a form) work. A run talks to one
//! host, so domains and paths are not told apart; `Max-Age=0` (or negative) deletes.

/// CookieJar holds a VU's cookies, in the order they were first set.
#[derive(Debug, Default, Clone)]
pub struct CookieJar {
    cookies: Vec<(String, String)>,
}

impl CookieJar {
    /// store reads one `Set-Cookie` value.
    pub fn store(&mut self, set_cookie: &str) {
        let mut attrs = set_cookie.split(';');
        let Some((name, value)) = attrs.next().and_then(|p| p.split_once('=')) else {
            return;
        };
        let (name, value) = (name.trim(), value.trim());
        if name.is_empty() {
            return;
        }
        let expired = attrs.any(|a| {
            let (k, v) = a.split_once('=').unwrap_or((a, ""));
            k.trim().eq_ignore_ascii_case("max-age")
                && v.trim().parse::<i64>().is_ok_and(|n| n <= 0)
        });
        let at = self.cookies.iter().position(|(n, _)| n == name);
        match (at, expired) {
            (Some(i), true) => {
                self.cookies.remove(i);
            }
            (Some(i), false) => {
                self.cookies[i].1.clear();
                self.cookies[i].1.push_str(value);
            }
            (None, false) => self.cookies.push((name.to_string(), value.to_string())),
            (None, true) => {}
        }
    }

    /// write_header appends a `Cookie:` header line when the jar holds any cookie.
    pub fn write_header(&self, out: &mut Vec<u8>) {
        if self.cookies.is_empty() {
            return;
        }
        out.extend_from_slice(b"Cookie: ");
        for (i, (n, v)) in self.cookies.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(b"; ");
            }
            out.extend_from_slice(n.as_bytes());
            out.push(b'=');
            out.extend_from_slice(v.as_bytes());
        }
        out.extend_from_slice(b"\r\n");
    }

    /// clear empties the jar.
    pub fn clear(&mut self) {
        self.cookies.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                jar.store(s);
            }
            let mut out = Vec::new();
            jar.write_header(&mut out);
            assert_eq!(String::from_utf8(out).unwrap(), *want, "{label}");
        }
    }
}
