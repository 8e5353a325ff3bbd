//! What the mapping hands the exporter: plain data, no SDK types, so the mapping is tested
//! without one.

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A string.
    Str(String),
    /// A whole number (token counts, turns).
    Int(i64),
    /// A real number (a cost).
    Float(f64),
    /// A list of strings (finish reasons).
    StrList(Vec<String>),
}

/// A key and its value; the key is one of [`crate::names::ATTRIBUTES`].
pub type Attribute = (&'static str, Value);

/// A span's kind, as the conventions give it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A call to a remote service (a model call).
    Client,
    /// Work inside the process (the session, a tool, a wait).
    Internal,
}

/// An event on a span, at a time.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRecord {
    /// One of [`crate::names::EVENTS`].
    pub name: &'static str,
    /// Milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// Its attributes.
    pub attributes: Vec<Attribute>,
}

/// A finished span, a child of the session's span.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanRecord {
    /// The span's name (`chat gpt-x`, `execute_tool shell`).
    pub name: String,
    /// Its kind.
    pub kind: Kind,
    /// Milliseconds since the Unix epoch.
    pub start_ms: u64,
    /// Milliseconds since the Unix epoch.
    pub end_ms: u64,
    /// Its attributes.
    pub attributes: Vec<Attribute>,
    /// Its events.
    pub events: Vec<EventRecord>,
    /// `Some(kind)` marks the span failed, with `error.type` among its attributes.
    pub error: Option<String>,
}

/// A metric measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricRecord {
    /// One of [`crate::names::METRICS`].
    pub name: &'static str,
    /// The value recorded (a histogram sample, or a counter's increment).
    pub value: f64,
    /// Its attributes.
    pub attributes: Vec<Attribute>,
}

/// One thing for the exporter to do, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// Open the session's span (`invoke_agent`); every other span is its child.
    SessionOpened {
        /// Milliseconds since the Unix epoch.
        start_ms: u64,
        /// Its attributes.
        attributes: Vec<Attribute>,
    },
    /// A finished child span.
    Span(SpanRecord),
    /// An event on the session's span.
    SessionEvent(EventRecord),
    /// Close the session's span, adding these attributes (the totals).
    SessionClosed {
        /// Milliseconds since the Unix epoch.
        end_ms: u64,
        /// Attributes known only at the end.
        attributes: Vec<Attribute>,
        /// The last failure's kind, when the session ended failed.
        error: Option<String>,
    },
    /// A metric measurement.
    Metric(MetricRecord),
}
