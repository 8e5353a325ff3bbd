//! Holds what the mapping emits to the lists in [`crate::names`], which `docs/TELEMETRY.md` is
//! held to in turn: a new span, attribute, event or metric fails a test until both list it.

use crate::names;
use crate::record::{Attribute, EventRecord, Record};

/// `Err(name)` for the first name in `record` that [`crate::names`] does not list.
pub fn check(record: &Record) -> Result<(), String> {
    match record {
        Record::SessionOpened { attributes, .. } => {
            span_name(names::SPAN_INVOKE_AGENT)?;
            keys(attributes)
        }
        Record::Span(span) => {
            span_name(&span.name)?;
            keys(&span.attributes)?;
            span.events.iter().try_for_each(event)
        }
        Record::SessionEvent(record) => event(record),
        Record::SessionClosed { attributes, .. } => keys(attributes),
        Record::Metric(metric) => {
            listed(names::METRICS, metric.name)?;
            keys(&metric.attributes)
        }
    }
}

/// A span's name is a listed name, or a listed prefix and one word after a space.
fn span_name(name: &str) -> Result<(), String> {
    let prefix = name.split_once(' ').map_or(name, |(prefix, _)| prefix);
    listed(names::SPANS, prefix)
}

fn event(record: &EventRecord) -> Result<(), String> {
    listed(names::EVENTS, record.name)?;
    keys(&record.attributes)
}

fn keys(attributes: &[Attribute]) -> Result<(), String> {
    attributes
        .iter()
        .try_for_each(|(key, _)| listed(names::ATTRIBUTES, key))
}

fn listed(list: &[&str], name: &str) -> Result<(), String> {
    if list.contains(&name) {
        Ok(())
    } else {
        Err(name.to_owned())
    }
}
