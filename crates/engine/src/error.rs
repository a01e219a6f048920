//! Errors the engine returns to its caller.
//!
//! Per-request failures are *not* errors here: they are data, counted by class in
//! [`crate::metrics`]. An `EngineError` means the run could not start or could not finish.

/// EngineError: why a run could not be started or completed. `Display` is one human line,
/// because the CLI prints it as-is as its error message.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum EngineError {
    /// Config: the run configuration is invalid (bad URL, rate <= 0, ...).
    #[error("invalid configuration: {0}")]
    Config(String),
    /// Unreachable: the target could not be resolved or the preflight connect failed.
    #[error("target unreachable: {0}")]
    Unreachable(String),
    /// Io: the engine could not set itself up (thread or runtime creation failed).
    #[error("I/O error: {0}")]
    Io(String),
    /// Internal: a worker thread died unexpectedly; the message says which and why.
    #[error("internal error: {0}")]
    Internal(String),
}

impl EngineError {
    /// config builds an [`EngineError::Config`] from anything printable.
    pub(crate) fn config(msg: impl Into<String>) -> Self {
        EngineError::Config(msg.into())
    }
}
