//! redline_engine: the load engine behind redline.
//!
//! Thread-per-core HTTP/1.1 (and HTTPS, over rustls) load generation with a closed (VUs) and an open (arrival rate)
//! model driven by one paced loop, latency measured from the intended send time, and
//! HdrHistogram metrics merged per interval. No Python here: `crates/py` binds [`run()`].

#![warn(missing_docs)]

pub mod config;
pub(crate) mod conn;
pub mod control;
pub mod error;
pub mod http;
pub(crate) mod lane;
pub mod metrics;
pub(crate) mod metronome;
pub mod pacer;
pub mod plan;
pub mod report;
pub mod run;
pub(crate) mod stamp;
pub mod tls;
pub mod usage;
pub(crate) mod worker;

pub use config::{RunConfig, Stage};
pub use error::EngineError;
pub use report::{IntervalSnapshot, Report};
pub use run::{run, RunControl};
