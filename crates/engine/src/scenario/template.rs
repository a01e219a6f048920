//! Templates: request text with variables filled in per request, each variable escaped for
//! where it lands (a path, a query or form field, a header, a JSON string). A template may
//! hold calls of functions ([`super::function`]): their arguments are rendered as they are
//! (a JSON document's variables as JSON), the function applied, and its result escaped for
//! where it lands, like a variable's value.

use super::function::Func;
use super::spec::{PartSpec, TemplateSpec};

/// Escape is how a variable's value is written into the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escape {
    /// Path: percent-encode what a path segment may not hold (`/` stays).
    Path,
    /// Url: a whole URL or its start (an extracted `Location`, a base URL): what a URL may
    /// hold stays (`:`, `/`, `?`, `[`, `%`...), spaces, controls and the rest are encoded.
    Url,
    /// Form: `application/x-www-form-urlencoded` (query strings and form bodies).
    Form,
    /// Header: as is, with CR, LF and NUL replaced by spaces (no header injection).
    Header,
    /// Json: as JSON string content (`"`, `\` and control characters escaped).
    Json,
    /// Raw: as is.
    Raw,
}

/// Part is a piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Lit: text written as is (already escaped where the context needs it).
    Lit(Box<str>),
    /// Var: the variable in this slot of the VU's variables.
    Var(usize),
    /// Call: a function of templates, computed per request.
    Call(Box<Call>),
}

/// Call is a function part: the function and its argument templates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// func: the function.
    pub func: Func,
    /// args: its arguments.
    pub args: Vec<Template>,
}

/// BuildError is why a template cannot be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BuildError {
    /// Unknown: a variable with no slot.
    Unknown(String),
    /// Call: a function call that is not right (its name, its arguments).
    Call(String),
}

/// Scratch is a VU's pool of buffers for the arguments and results of function calls: they
/// grow on the first requests and are reused after, so rendering allocates nothing.
#[derive(Debug, Default)]
pub struct Scratch {
    pool: Vec<Vec<u8>>,
}

impl Scratch {
    fn take(&mut self) -> Vec<u8> {
        self.pool.pop().unwrap_or_default()
    }

    fn give(&mut self, mut buf: Vec<u8>) {
        buf.clear();
        self.pool.push(buf);
    }
}

/// Template is a templated piece of request text with its escaping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// parts: literal text and variable slots.
    pub parts: Vec<Part>,
    /// escape: how variables (and, for [`Escape::Form`], literals too) are written.
    pub escape: Escape,
}

impl Template {
    /// build resolves a template's variable names to slots with `slot` (None: an unknown
    /// variable) and checks its function calls. Form literals are encoded here, once.
    pub fn build(
        spec: &TemplateSpec,
        escape: Escape,
        mut slot: impl FnMut(&str) -> Option<usize>,
    ) -> Result<Template, BuildError> {
        Template::build_with(spec, escape, &mut slot)
    }

    fn build_with(
        spec: &TemplateSpec,
        escape: Escape,
        slot: &mut dyn FnMut(&str) -> Option<usize>,
    ) -> Result<Template, BuildError> {
        let mut parts = Vec::with_capacity(spec.len());
        for p in spec {
            parts.push(match p {
                PartSpec::Lit(s) => {
                    let mut out = Vec::new();
                    if escape == Escape::Form {
                        write_escaped(&mut out, s, Escape::Form);
                    } else {
                        out.extend_from_slice(s.as_bytes());
                    }
                    Part::Lit(String::from_utf8_lossy(&out).into())
                }
                PartSpec::Var { var } => {
                    Part::Var(slot(var).ok_or_else(|| BuildError::Unknown(var.clone()))?)
                }
                PartSpec::Call(c) => {
                    let func = Func::parse(c).map_err(BuildError::Call)?;
                    // A JSON document's variables are escaped as JSON; other arguments are
                    // taken as they are.
                    let inner = if func == Func::Json {
                        Escape::Json
                    } else {
                        Escape::Raw
                    };
                    let mut args = Vec::with_capacity(c.args.len());
                    for a in &c.args {
                        args.push(Template::build_with(a, inner, slot)?);
                    }
                    Part::Call(Box::new(Call { func, args }))
                }
            });
        }
        Ok(Template { parts, escape })
    }

    /// literal builds a template of fixed text.
    pub fn literal(text: &str, escape: Escape) -> Template {
        Template::build(&vec![PartSpec::Lit(text.to_string())], escape, |_| None).unwrap_or(
            Template {
                parts: Vec::new(),
                escape,
            },
        )
    }

    /// render appends the template, with `vars` filled in, to `out`; a function that
    /// cannot be computed (bad base64 to decode) is the error, its part left empty.
    pub fn render(
        &self,
        vars: &[String],
        out: &mut Vec<u8>,
        scratch: &mut Scratch,
    ) -> Result<(), &'static str> {
        let mut result = Ok(());
        for p in &self.parts {
            match p {
                Part::Lit(s) => out.extend_from_slice(s.as_bytes()),
                Part::Var(i) => {
                    let v = vars.get(*i).map_or("", String::as_str);
                    write_escaped(out, v, self.escape);
                }
                Part::Call(call) => {
                    let mut value = scratch.take();
                    match call.eval(vars, &mut value, scratch) {
                        Ok(()) => write_escaped_bytes(out, &value, self.escape),
                        Err(e) => result = result.and(Err(e)),
                    }
                    scratch.give(value);
                }
            }
        }
        result
    }

    /// vars lists the slots this template reads (those its calls read left out).
    pub fn vars(&self) -> impl Iterator<Item = usize> + '_ {
        self.parts.iter().filter_map(|p| match p {
            Part::Var(i) => Some(*i),
            Part::Lit(_) | Part::Call(_) => None,
        })
    }
}

impl Call {
    /// eval renders the arguments into buffers of `scratch` and applies the function.
    fn eval(
        &self,
        vars: &[String],
        out: &mut Vec<u8>,
        scratch: &mut Scratch,
    ) -> Result<(), &'static str> {
        let mut a = scratch.take();
        let mut b = scratch.take();
        let mut result = Ok(());
        if let Some(t) = self.args.first() {
            result = t.render(vars, &mut a, scratch);
        }
        if let Some(t) = self.args.get(1) {
            result = result.and(t.render(vars, &mut b, scratch));
        }
        if result.is_ok() {
            result = match self.args.len() {
                1 => self.func.apply(&[&a], out),
                _ => self.func.apply(&[&a, &b], out),
            };
        }
        scratch.give(a);
        scratch.give(b);
        result
    }
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

fn percent(out: &mut Vec<u8>, b: u8) {
    out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
}

/// write_escaped_bytes appends a function's result to `out`, escaped as `escape` says (as
/// JSON, bytes that are not UTF-8 become U+FFFD).
pub fn write_escaped_bytes(out: &mut Vec<u8>, v: &[u8], escape: Escape) {
    match escape {
        Escape::Json => write_escaped(out, &String::from_utf8_lossy(v), escape),
        _ => write_bytes(out, v, escape),
    }
}

/// write_escaped appends `v` to `out`, escaped as `escape` says.
pub fn write_escaped(out: &mut Vec<u8>, v: &str, escape: Escape) {
    match escape {
        Escape::Json => write_json(out, v),
        _ => write_bytes(out, v.as_bytes(), escape),
    }
}

/// write_bytes appends `v` escaped for a path, a URL, a form, a header, or raw.
fn write_bytes(out: &mut Vec<u8>, v: &[u8], escape: Escape) {
    match escape {
        Escape::Raw | Escape::Json => out.extend_from_slice(v),
        Escape::Header => out.extend(v.iter().map(|&b| match b {
            b'\r' | b'\n' | 0 => b' ',
            b => b,
        })),
        Escape::Path => {
            for &b in v {
                if b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/".contains(&b) {
                    out.push(b);
                } else {
                    percent(out, b);
                }
            }
        }
        Escape::Url => {
            for &b in v {
                if b.is_ascii_graphic() && !b"\"<>\\^`{|}".contains(&b) {
                    out.push(b);
                } else {
                    percent(out, b);
                }
            }
        }
        Escape::Form => {
            for &b in v {
                if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                    out.push(b);
                } else if b == b' ' {
                    out.push(b'+');
                } else {
                    percent(out, b);
                }
            }
        }
    }
}

/// write_json appends `v` as JSON string content.
fn write_json(out: &mut Vec<u8>, v: &str) {
    for c in v.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            c if (c as u32) < 0x20 => {
                let _ = std::io::Write::write_fmt(out, format_args!("\\u{:04x}", c as u32));
            }
            c => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tpl(parts: &[&str], escape: Escape) -> Template {
        // "$x" is variable x (slot 0), "$y" slot 1; anything else is literal.
        let spec: TemplateSpec = parts
            .iter()
            .map(|p| match p.strip_prefix('$') {
                Some(v) => PartSpec::Var { var: v.to_string() },
                None => PartSpec::Lit(p.to_string()),
            })
            .collect();
        Template::build(&spec, escape, |n| match n {
            "x" => Some(0),
            "y" => Some(1),
            _ => None,
        })
        .expect("known vars")
    }

    #[test]
    fn renders_each_escape() {
        let vars = vec!["a b/\"c\"\r\n".to_string(), "é&=".to_string()];
        let cases: &[(&str, &[&str], Escape, &str)] = &[
            (
                "path keeps slashes",
                &["/t/", "$x"],
                Escape::Path,
                "/t/a%20b/%22c%22%0D%0A",
            ),
            (
                "form encodes literal and var",
                &["k v=", "$y"],
                Escape::Form,
                "k+v%3D%C3%A9%26%3D",
            ),
            (
                "header drops line breaks",
                &["v=", "$x"],
                Escape::Header,
                "v=a b/\"c\"  ",
            ),
            (
                "json escapes",
                &["{\"u\":\"", "$x", "\"}"],
                Escape::Json,
                "{\"u\":\"a b/\\\"c\\\"\\r\\n\"}",
            ),
            ("raw", &["$y"], Escape::Raw, "é&="),
            (
                "a URL keeps what URLs hold",
                &["$x"],
                Escape::Url,
                "a%20b/%22c%22%0D%0A",
            ),
        ];
        for (label, parts, esc, want) in cases {
            let mut out = Vec::new();
            tpl(parts, *esc)
                .render(&vars, &mut out, &mut Scratch::default())
                .unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), *want, "{label}");
        }
    }

    #[test]
    fn unknown_variable_is_named() {
        let spec = vec![PartSpec::Var { var: "nope".into() }];
        let err = Template::build(&spec, Escape::Raw, |_| None).unwrap_err();
        assert_eq!(err, BuildError::Unknown("nope".into()));
    }
}
