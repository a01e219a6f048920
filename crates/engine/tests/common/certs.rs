//! Certificates as users make them, for the https tests: `openssl req -x509` (CA:TRUE, no
//! SAN), in a scratch directory removed afterwards.

use std::path::{Path, PathBuf};
use std::process::Command;

use redline_target::TlsFiles;

/// TempDir is a scratch directory removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(label: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir =
            std::env::temp_dir().join(format!("redline-{label}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// self_signed makes a key and a self-signed certificate the way the openssl manual shows
/// (`req -x509`: basicConstraints CA:TRUE), named `name`.pem / `name`.key in `dir`.
pub fn self_signed(dir: &Path, name: &str) -> TlsFiles {
    let files = TlsFiles {
        cert: dir.join(format!("{name}.pem")),
        key: dir.join(format!("{name}.key")),
    };
    let out = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
        .args(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"])
        .args(["-subj", "/CN=localhost", "-keyout"])
        .arg(&files.key)
        .arg("-out")
        .arg(&files.cert)
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "openssl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = Command::new("openssl")
        .args(["x509", "-noout", "-text", "-in"])
        .arg(&files.cert)
        .output()
        .expect("openssl runs");
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("CA:TRUE"),
        "the certificate is a CA's, as users' are"
    );
    files
}
