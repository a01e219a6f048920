//! Functions a template computes per request ([`Func`]): encodings, digests and signatures,
//! case, length, padding. Each is pure: its arguments, already rendered, in; its result
//! appended to a buffer out, or a reason it cannot be computed (bad base64, text that is not
//! UTF-8), which fails the request. Nothing here allocates once the buffers have grown.

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use base64::engine::Config as _;
use base64::engine::DecodePaddingMode;
use base64::{alphabet, Engine as _};
use hmac::{Hmac, Mac};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC};
use sha1::Sha1;
use sha2::{Digest, Sha256};

use super::spec::CallSpec;

/// UNRESERVED: what `url_encode` leaves as is (RFC 3986's unreserved characters).
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// DECODE_STANDARD and DECODE_URL read base64 with or without its padding.
const DECODE_STANDARD: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);
const DECODE_URL: GeneralPurpose = GeneralPurpose::new(
    &alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Encoding is how a digest or a signature is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Hex: lower-case hexadecimal.
    Hex,
    /// Base64: standard base64 with padding.
    Base64,
}

/// Func is a function of a template part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    /// Base64: standard base64 with padding (`Basic` credentials).
    Base64,
    /// Base64Url: URL-safe base64 without padding (JWT).
    Base64Url,
    /// Base64Decode: base64 in either alphabet, padded or not, decoded.
    Base64Decode,
    /// UrlEncode: percent-encode all but RFC 3986's unreserved characters.
    UrlEncode,
    /// Hex: the bytes in lower-case hexadecimal.
    Hex,
    /// Sha256: the SHA-256 digest.
    Sha256(Encoding),
    /// Sha1: the SHA-1 digest.
    Sha1(Encoding),
    /// HmacSha256: HMAC-SHA256 of the second argument under the first as the key.
    HmacSha256(Encoding),
    /// HmacSha1: HMAC-SHA1 of the second argument under the first as the key.
    HmacSha1(Encoding),
    /// Upper: Unicode upper case.
    Upper,
    /// Lower: Unicode lower case.
    Lower,
    /// Length: the number of characters, in decimal.
    Length,
    /// Json: the argument is a JSON document whose variables were escaped as JSON; it is
    /// the result as is.
    Json,
    /// Pad: the argument right-aligned to `width` characters with `fill` (`0042`).
    Pad {
        /// width: the least number of characters.
        width: usize,
        /// fill: the character added on the left.
        fill: char,
    },
}

impl Func {
    /// parse reads a call's function and checks its arguments' count; the error is a
    /// one-line reason.
    pub fn parse(spec: &CallSpec) -> Result<Func, String> {
        let encoding = match spec.encoding.as_deref() {
            None | Some("hex") => Encoding::Hex,
            Some("base64") => Encoding::Base64,
            Some(other) => {
                return Err(format!(
                    "{}: encoding must be hex or base64, got {other:?}",
                    spec.func
                ))
            }
        };
        let func = match spec.func.as_str() {
            "base64" => Func::Base64,
            "base64url" => Func::Base64Url,
            "base64_decode" => Func::Base64Decode,
            "url_encode" => Func::UrlEncode,
            "hex" => Func::Hex,
            "sha256" => Func::Sha256(encoding),
            "sha1" => Func::Sha1(encoding),
            "hmac_sha256" => Func::HmacSha256(encoding),
            "hmac_sha1" => Func::HmacSha1(encoding),
            "upper" => Func::Upper,
            "lower" => Func::Lower,
            "length" => Func::Length,
            "json" => Func::Json,
            "pad" => {
                let mut fill = spec.fill.as_deref().unwrap_or("0").chars();
                match (spec.width, fill.next(), fill.next()) {
                    (Some(width), Some(fill), None) if width <= 4096 => Func::Pad { width, fill },
                    _ => return Err("pad needs a width up to 4096 and one fill character".into()),
                }
            }
            other => return Err(format!("unknown function {other:?}")),
        };
        let want = func.arity();
        if spec.args.len() != want {
            return Err(format!(
                "{} takes {want} argument{}, got {}",
                spec.func,
                if want == 1 { "" } else { "s" },
                spec.args.len()
            ));
        }
        Ok(func)
    }

    /// arity is the number of arguments the function takes.
    pub fn arity(self) -> usize {
        match self {
            Func::HmacSha256(_) | Func::HmacSha1(_) => 2,
            _ => 1,
        }
    }

    /// apply appends the function of `args` (rendered) to `out`.
    pub fn apply(self, args: &[&[u8]], out: &mut Vec<u8>) -> Result<(), &'static str> {
        let (a, b) = match args {
            [a] => (*a, &[][..]),
            [a, b] => (*a, *b),
            _ => return Err("wrong number of arguments"),
        };
        match self {
            Func::Base64 => encode_base64(&STANDARD, a, out),
            Func::Base64Url => encode_base64(&DECODE_URL, a, out),
            Func::Base64Decode => {
                let url = a.iter().any(|&c| c == b'-' || c == b'_');
                let engine = if url { &DECODE_URL } else { &DECODE_STANDARD };
                engine
                    .decode_vec(a, out)
                    .map_err(|_| "base64_decode: not base64")?;
            }
            Func::UrlEncode => {
                for chunk in percent_encoding::percent_encode(a, UNRESERVED) {
                    out.extend_from_slice(chunk.as_bytes());
                }
            }
            Func::Hex => encode_hex(a, out),
            Func::Sha256(e) => encode(&Sha256::digest(a), e, out),
            Func::Sha1(e) => encode(&Sha1::digest(a), e, out),
            Func::HmacSha256(e) => {
                // An HMAC takes a key of any length: new_from_slice cannot fail.
                let mut mac = Hmac::<Sha256>::new_from_slice(a).map_err(|_| "hmac: bad key")?;
                mac.update(b);
                encode(&mac.finalize().into_bytes(), e, out);
            }
            Func::HmacSha1(e) => {
                let mut mac = Hmac::<Sha1>::new_from_slice(a).map_err(|_| "hmac: bad key")?;
                mac.update(b);
                encode(&mac.finalize().into_bytes(), e, out);
            }
            Func::Upper | Func::Lower => {
                let text = std::str::from_utf8(a).map_err(|_| "upper/lower: not UTF-8 text")?;
                let mut buf = [0u8; 4];
                for c in text.chars() {
                    if self == Func::Upper {
                        c.to_uppercase().for_each(|u| {
                            out.extend_from_slice(u.encode_utf8(&mut buf).as_bytes())
                        });
                    } else {
                        c.to_lowercase().for_each(|l| {
                            out.extend_from_slice(l.encode_utf8(&mut buf).as_bytes())
                        });
                    }
                }
            }
            Func::Length => {
                let text = std::str::from_utf8(a).map_err(|_| "length: not UTF-8 text")?;
                write_decimal(text.chars().count(), out);
            }
            Func::Json => out.extend_from_slice(a),
            Func::Pad { width, fill } => {
                let text = std::str::from_utf8(a).map_err(|_| "pad: not UTF-8 text")?;
                let mut buf = [0u8; 4];
                let fill = fill.encode_utf8(&mut buf).as_bytes();
                for _ in text.chars().count()..width {
                    out.extend_from_slice(fill);
                }
                out.extend_from_slice(a);
            }
        }
        Ok(())
    }
}

/// encode_base64 appends `input` in base64 to `out` (no allocation past `out`'s growth).
fn encode_base64(engine: &GeneralPurpose, input: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    let padded = engine.config().encode_padding();
    let Some(n) = base64::encoded_len(input.len(), padded) else {
        return;
    };
    out.resize(start + n, 0);
    let written = engine.encode_slice(input, &mut out[start..]).unwrap_or(0);
    out.truncate(start + written);
}

/// encode_hex appends `input` in lower-case hexadecimal to `out`.
fn encode_hex(input: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + 2 * input.len(), 0);
    if hex::encode_to_slice(input, &mut out[start..]).is_err() {
        out.truncate(start);
    }
}

/// encode appends a digest to `out` as `e` says.
fn encode(digest: &[u8], e: Encoding, out: &mut Vec<u8>) {
    match e {
        Encoding::Hex => encode_hex(digest, out),
        Encoding::Base64 => encode_base64(&STANDARD, digest, out),
    }
}

/// write_decimal appends `n` in decimal to `out`.
pub fn write_decimal(n: usize, out: &mut Vec<u8>) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut n = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(func: &str, encoding: Option<&str>, args: usize) -> CallSpec {
        CallSpec {
            func: func.into(),
            args: vec![Vec::new(); args],
            encoding: encoding.map(str::to_string),
            width: Some(6),
            fill: None,
        }
    }

    /// Case: a label, the function, its encoding, its arguments, the answer.
    type Case<'a> = (&'a str, &'a str, Option<&'a str>, &'a [&'a str], &'a str);

    #[test]
    // long: a table of cases, one call and its known answer each.
    fn functions_compute_known_answers() {
        let cases: &[Case] = &[
            (
                "basic credentials",
                "base64",
                None,
                &["alice:pw1"],
                "YWxpY2U6cHcx",
            ),
            ("padding", "base64", None, &["ab"], "YWI="),
            (
                "url-safe, unpadded",
                "base64url",
                None,
                &["\u{ff}\u{fe}?"],
                "w7_Dvj8",
            ),
            (
                "decode",
                "base64_decode",
                None,
                &["YWxpY2U6cHcx"],
                "alice:pw1",
            ),
            ("decode unpadded", "base64_decode", None, &["YWI"], "ab"),
            (
                "decode url-safe",
                "base64_decode",
                None,
                &["w7_Dvj8"],
                "\u{ff}\u{fe}?",
            ),
            (
                "url encode",
                "url_encode",
                None,
                &["a b/é~"],
                "a%20b%2F%C3%A9~",
            ),
            ("hex", "hex", None, &["\n\u{1}z"], "0a017a"),
            (
                "sha256",
                "sha256",
                None,
                &["abc"],
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            ),
            (
                "sha256 base64",
                "sha256",
                Some("base64"),
                &["abc"],
                "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=",
            ),
            (
                "sha1",
                "sha1",
                None,
                &["abc"],
                "a9993e364706816aba3e25717850c26c9cd0d89d",
            ),
            (
                // RFC 4231, test case 2.
                "hmac-sha256",
                "hmac_sha256",
                None,
                &["Jefe", "what do ya want for nothing?"],
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
            ),
            (
                // RFC 2202, test case 2.
                "hmac-sha1",
                "hmac_sha1",
                None,
                &["Jefe", "what do ya want for nothing?"],
                "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79",
            ),
            ("upper", "upper", None, &["straße ok"], "STRASSE OK"),
            ("lower", "lower", None, &["ÉCOLE"], "école"),
            ("length counts characters", "length", None, &["aé€"], "3"),
            ("empty length", "length", None, &[""], "0"),
            ("pad", "pad", None, &["42"], "000042"),
            ("pad longer", "pad", None, &["1234567"], "1234567"),
            ("json", "json", None, &["{\"a\":1}"], "{\"a\":1}"),
        ];
        for (label, name, encoding, args, want) in cases {
            let func = Func::parse(&call(name, *encoding, args.len())).expect(label);
            let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            let mut out = b"<".to_vec();
            func.apply(&args, &mut out).expect(label);
            assert_eq!(String::from_utf8_lossy(&out[1..]), *want, "{label}");
        }
    }

    #[test]
    fn bad_calls_and_bad_input_are_reasons() {
        for (spec, words) in [
            (call("nope", None, 1), "unknown function"),
            (call("hmac_sha256", None, 1), "takes 2 arguments"),
            (call("sha256", Some("b32"), 1), "encoding must be"),
        ] {
            let err = Func::parse(&spec).unwrap_err();
            assert!(err.contains(words), "{err}");
        }
        let mut out = Vec::new();
        let decode = Func::Base64Decode;
        assert_eq!(
            decode.apply(&[b"!!"], &mut out),
            Err("base64_decode: not base64")
        );
        assert_eq!(
            Func::Upper.apply(&[b"\xff"], &mut out),
            Err("upper/lower: not UTF-8 text")
        );
    }
}
