//! The shape every API module renders into: a status, headers and the body as chunks (one per
//! SSE frame), with an optional point after which the connection is cut.

use bytes::Bytes;
use serde_json::Value;

use crate::usage::Usage;

/// How many frames a `stream-cut` or `mid-stream-error` stream sends before failing, at most.
pub const FRAMES_BEFORE_FAULT: usize = 5;

/// A response ready to be sent.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The HTTP status.
    pub status: u16,
    /// The `content-type`.
    pub content_type: &'static str,
    /// Extra headers (`retry-after`, `request-id`).
    pub headers: Vec<(&'static str, String)>,
    /// The body, chunk by chunk.
    pub chunks: Vec<Bytes>,
    /// Close the connection (no final chunk) after this many chunks.
    pub cut_after: Option<usize>,
    /// What was answered, for the log: `tool-call`, `text`, `routing`, `error`, …
    pub answer: &'static str,
    /// The usage the answer reported, neutral terms.
    pub usage: Option<Usage>,
    /// The usage object exactly as the API's answer carried it.
    pub reported_usage: Option<Value>,
}

impl Rendered {
    /// A JSON answer.
    pub fn json(status: u16, body: &Value, answer: &'static str) -> Rendered {
        Rendered {
            status,
            content_type: "application/json",
            headers: Vec::new(),
            chunks: vec![Bytes::from(body.to_string())],
            cut_after: None,
            answer,
            usage: None,
            reported_usage: None,
        }
    }

    /// An SSE answer of the given frames.
    pub fn sse(chunks: Vec<Bytes>, answer: &'static str) -> Rendered {
        Rendered {
            status: 200,
            content_type: "text/event-stream",
            headers: vec![("cache-control", "no-cache".to_owned())],
            chunks,
            cut_after: None,
            answer,
            usage: None,
            reported_usage: None,
        }
    }

    /// Attaches the usage this answer reported.
    pub fn with_usage(mut self, usage: Usage, reported: Value) -> Rendered {
        self.usage = Some(usage);
        self.reported_usage = Some(reported);
        self
    }

    /// Keeps only the first frames and cuts the connection after them.
    pub fn cut(mut self) -> Rendered {
        let keep = fault_point(self.chunks.len());
        self.chunks.truncate(keep);
        self.cut_after = Some(keep);
        self.answer = "stream-cut";
        self
    }

    /// Keeps only the first frames, then sends `error_frame` and ends the stream normally.
    pub fn fail_midway(mut self, error_frame: Bytes) -> Rendered {
        let keep = fault_point(self.chunks.len());
        self.chunks.truncate(keep);
        self.chunks.push(error_frame);
        self.answer = "mid-stream-error";
        self
    }
}

/// Where a faulty stream stops: before its last frame, after at most [`FRAMES_BEFORE_FAULT`].
pub fn fault_point(frames: usize) -> usize {
    frames.saturating_sub(1).clamp(1, FRAMES_BEFORE_FAULT)
}

/// One SSE frame, with an `event:` line when the API names its events.
pub fn sse_frame(event: Option<&str>, data: &Value) -> Bytes {
    match event {
        Some(name) => Bytes::from(format!("event: {name}\ndata: {data}\n\n")),
        None => Bytes::from(format!("data: {data}\n\n")),
    }
}

/// Splits `text` into pieces of about `size` bytes on character boundaries, as streamed deltas.
pub fn pieces(text: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut count = 0;
    for (index, _) in text.char_indices() {
        if count == size {
            out.push(&text[start..index]);
            start = index;
            count = 0;
        }
        count += 1;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// A deterministic hex id for the `salt`-th object of a request, derived from its body (FNV-1a),
/// so replies are reproducible and ids differ between requests.
pub fn hex_id(body: &[u8], salt: usize, len: usize) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut out = String::with_capacity(len);
    let mut round: u64 = 0;
    while out.len() < len {
        for byte in body
            .iter()
            .copied()
            .chain(salt.to_le_bytes())
            .chain(round.to_le_bytes())
        {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        out.push_str(&format!("{hash:016x}"));
        round = round.wrapping_add(1);
    }
    out.truncate(len);
    out
}

/// Seconds since the epoch, for `created_at` fields.
pub fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
