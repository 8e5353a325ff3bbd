//! The API's error codes and the errors of reading its messages.

use serde::{Deserialize, Serialize};

/// The error codes a response can carry: JSON-RPC 2.0's own, then the API's (-32000 and on).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "i64", try_from = "i64")]
pub enum ErrorCode {
    /// The line is not JSON.
    ParseError,
    /// The line is JSON but not a JSON-RPC 2.0 request.
    InvalidRequest,
    /// No such method.
    MethodNotFound,
    /// The params do not fit the method.
    InvalidParams,
    /// The daemon failed on its own side.
    InternalError,
    /// No session has that id, prefix or name.
    UnknownSession,
    /// More than one session starts with that prefix.
    AmbiguousSession,
    /// Nothing waits for that answer: it was answered already (by another client), withdrawn,
    /// or never asked.
    NotWaiting,
    /// The session has ended; it takes no more controls.
    SessionEnded,
    /// The request line is longer than [`crate::MAX_LINE_BYTES`].
    LineTooLong,
    /// The session could not be started (a provider without a key, a missing directory).
    LaunchFailed,
    /// The client speaks another version of the API.
    VersionMismatch,
    /// Another session already has that name.
    NameTaken,
    /// The session is still running: stop it first.
    SessionRunning,
    /// The recorded session cannot be resumed (no log, no agent session id, own loop).
    CannotResume,
    /// Several approvals wait and the answer named none: it must name one (`request`).
    SeveralWaiting,
}

impl ErrorCode {
    /// Every code, in the order `docs/API.md` lists them.
    pub const ALL: [ErrorCode; 16] = [
        ErrorCode::ParseError,
        ErrorCode::InvalidRequest,
        ErrorCode::MethodNotFound,
        ErrorCode::InvalidParams,
        ErrorCode::InternalError,
        ErrorCode::UnknownSession,
        ErrorCode::AmbiguousSession,
        ErrorCode::NotWaiting,
        ErrorCode::SessionEnded,
        ErrorCode::LineTooLong,
        ErrorCode::LaunchFailed,
        ErrorCode::VersionMismatch,
        ErrorCode::NameTaken,
        ErrorCode::SessionRunning,
        ErrorCode::CannotResume,
        ErrorCode::SeveralWaiting,
    ];

    /// The number on the wire.
    pub fn code(self) -> i64 {
        match self {
            ErrorCode::ParseError => -32700,
            ErrorCode::InvalidRequest => -32600,
            ErrorCode::MethodNotFound => -32601,
            ErrorCode::InvalidParams => -32602,
            ErrorCode::InternalError => -32603,
            ErrorCode::UnknownSession => -32001,
            ErrorCode::AmbiguousSession => -32002,
            ErrorCode::NotWaiting => -32003,
            ErrorCode::SessionEnded => -32004,
            ErrorCode::LineTooLong => -32005,
            ErrorCode::LaunchFailed => -32006,
            ErrorCode::VersionMismatch => -32007,
            ErrorCode::NameTaken => -32008,
            ErrorCode::SessionRunning => -32009,
            ErrorCode::CannotResume => -32010,
            ErrorCode::SeveralWaiting => -32011,
        }
    }

    /// The code's name in `docs/API.md`.
    pub fn name(self) -> &'static str {
        match self {
            ErrorCode::ParseError => "parse_error",
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::MethodNotFound => "method_not_found",
            ErrorCode::InvalidParams => "invalid_params",
            ErrorCode::InternalError => "internal_error",
            ErrorCode::UnknownSession => "unknown_session",
            ErrorCode::AmbiguousSession => "ambiguous_session",
            ErrorCode::NotWaiting => "not_waiting",
            ErrorCode::SessionEnded => "session_ended",
            ErrorCode::LineTooLong => "line_too_long",
            ErrorCode::LaunchFailed => "launch_failed",
            ErrorCode::VersionMismatch => "version_mismatch",
            ErrorCode::NameTaken => "name_taken",
            ErrorCode::SessionRunning => "session_running",
            ErrorCode::CannotResume => "cannot_resume",
            ErrorCode::SeveralWaiting => "several_waiting",
        }
    }

    /// The code a number names, if any.
    pub fn from_code(code: i64) -> Option<ErrorCode> {
        ErrorCode::ALL
            .into_iter()
            .find(|known| known.code() == code)
    }
}

impl From<ErrorCode> for i64 {
    fn from(code: ErrorCode) -> i64 {
        code.code()
    }
}

impl TryFrom<i64> for ErrorCode {
    type Error = String;
    fn try_from(code: i64) -> Result<Self, String> {
        ErrorCode::from_code(code).ok_or_else(|| format!("unknown error code {code}"))
    }
}

/// Why a line could not be read as an API message.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The line is not JSON.
    #[error("not JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The line is JSON but not the message expected.
    #[error("not a JSON-RPC 2.0 message: {0}")]
    Shape(String),
    /// The line is longer than the cap.
    #[error("the line is {len} bytes, over the cap of {cap}")]
    TooLong {
        /// The line's length so far.
        len: usize,
        /// The cap.
        cap: usize,
    },
    /// A response said the request failed.
    #[error("{message} ({})", .code.map_or("unknown code".to_owned(), |code| code.name().to_owned()))]
    Remote {
        /// The code, when this build knows it.
        code: Option<ErrorCode>,
        /// The daemon's sentence.
        message: String,
    },
}

impl ApiError {
    /// The code a response to this error carries.
    pub fn code(&self) -> ErrorCode {
        match self {
            ApiError::Json(_) => ErrorCode::ParseError,
            ApiError::Shape(_) => ErrorCode::InvalidRequest,
            ApiError::TooLong { .. } => ErrorCode::LineTooLong,
            ApiError::Remote { code, .. } => code.unwrap_or(ErrorCode::InternalError),
        }
    }
}
