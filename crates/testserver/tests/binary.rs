//! The `redline-target` binary: one "listening on" line, serves, stops on SIGTERM, exit 2 on
//! bad arguments.

mod common;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Client;

const BIN: &str = env!("CARGO_BIN_EXE_redline-target");

#[test]
fn serves_until_sigterm() {
    let mut child = Command::new(BIN)
        .args(["--port", "0", "--threads", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).expect("line");
    let url = line
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("unexpected line {line:?}"));
    let addr: SocketAddr = url.trim().parse().expect("address");
    assert_eq!(addr.ip().to_string(), "127.0.0.1");
    assert_eq!(Client::connect(addr).get("/").body, b"ok\n");

    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(5);
    let exit = loop {
        if let Some(exit) = child.try_wait().expect("wait") {
            break exit;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("did not stop on SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(exit.success(), "{exit:?}");
}

#[test]
fn bad_arguments_exit_2_with_one_line() {
    let cases: &[(&[&str], &str)] = &[
        (&["--port", "99999"], "99999"),
        (&["--threads", "0"], "threads must be between 1 and 1024"),
        (&["--bogus"], "--bogus"),
        (&["--host", "256.1.1.1.1"], "cannot resolve host"),
        (&["--capacity", "8"], "--service-time"),
        (&["--service-time", "10ms"], "--capacity"),
        (
            &["--capacity", "0", "--service-time", "1ms"],
            "slots must be",
        ),
        (&["--capacity", "8", "--service-time", "10"], "missing unit"),
    ];
    for (args, want) in cases {
        let out = Command::new(BIN).args(*args).output().expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}
