//! Stops a build for another OS before rustc starts, with one line instead of a page of
//! unresolved `libc` items: redline's test server is Linux-only (the `compile_error!` in lib.rs says the
//! same for builds that bypass this script).

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os != "linux" {
        println!(
            "cargo::error=redline's test server builds on Linux only (its sub-millisecond delays use timerfd); this build targets {os}: build and run redline on Linux, or in a Linux container or VM"
        );
    }
}
