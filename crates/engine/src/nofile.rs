//! The open-file limit (`ulimit -n`, RLIMIT_NOFILE): every connection is a file descriptor,
//! so a run of more connections than the limit leaves the rest unopened, each connect
//! failing with EMFILE. A server that refused would look the same in the error counts; the
//! report names the limit instead, with the command that raises it.

/// FdLimit is the process's open-file limit when the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct FdLimit {
    /// soft: the limit in force (`ulimit -n`; `ulimit -Sn`).
    pub soft: u64,
    /// hard: how far an unprivileged process may raise it (`ulimit -Hn`).
    pub hard: u64,
}

/// HEADROOM: the descriptors a run needs besides its connections (the interpreter, its
/// libraries, a timer and an epoll per worker thread, stdio), as a round margin.
const HEADROOM: u64 = 100;

/// open_file_limit reads RLIMIT_NOFILE (None if the OS cannot say; an unlimited one reads as
/// `u64::MAX`).
pub fn open_file_limit() -> Option<FdLimit> {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `rl` is a valid, writable rlimit; getrlimit only writes into it.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) };
    (rc == 0).then_some(FdLimit {
        soft: rl.rlim_cur,
        hard: rl.rlim_max,
    })
}

/// verdict says why only `opened` of `wanted` connections opened when the limit refused
/// `refused` connects, and what to do about it.
pub fn verdict(wanted: u64, opened: u64, refused: u64, limit: Option<FdLimit>) -> String {
    let need = wanted + HEADROOM;
    let what = format!(
        "only {opened} of {wanted} connections opened: {refused} connects were refused by the \
         open-file limit"
    );
    let fix = match limit {
        Some(l) if need <= l.hard => format!(
            " (ulimit -n {}): raise it with `ulimit -n {need}` in the shell that starts redline",
            l.soft
        ),
        Some(l) => format!(
            " (ulimit -n {}, hard limit {}): {wanted} connections need about {need} files, over \
             the hard limit, which only root raises (/etc/security/limits.conf, or LimitNOFILE= \
             for a service); or use fewer connections here and spread the load over machines \
             (--cluster)",
            l.soft, l.hard
        ),
        None => String::new(),
    };
    format!("{what}{fix}; the figures describe {opened} connections, not the load asked for")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_names_the_limit_and_the_fix() {
        let cases = [
            (
                "under the hard limit: the command that raises it",
                FdLimit {
                    soft: 256,
                    hard: 4096,
                },
                "(ulimit -n 256): raise it with `ulimit -n 1100` in the shell",
            ),
            (
                "over the hard limit: root, or fewer connections",
                FdLimit {
                    soft: 500,
                    hard: 500,
                },
                "(ulimit -n 500, hard limit 500): 1000 connections need about 1100 files, over",
            ),
        ];
        for (label, limit, said) in cases {
            let v = verdict(1000, 150, 4321, Some(limit));
            assert!(v.contains(said), "{label}: {v}");
            assert!(
                v.starts_with("only 150 of 1000 connections opened: 4321 connects"),
                "{v}"
            );
            assert!(v.ends_with("the figures describe 150 connections, not the load asked for"));
        }
    }

    #[test]
    fn the_limit_is_read() {
        let l = open_file_limit().expect("Linux has RLIMIT_NOFILE");
        assert!(l.soft > 0 && l.soft <= l.hard, "{l:?}");
    }
}
