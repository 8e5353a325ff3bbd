//! The daemon's notifications read as [`Event`]s (pure: parsing only).

use panewise_api::{ChangedNotice, EndNotice, LineNotice, Notification, RemovedNotice};

use crate::error::TuiError;
use crate::event::Event;

/// The event a notification from the daemon is; `None` for one the dashboard does not use.
pub fn event_of(notice: Notification) -> Result<Option<Event>, TuiError> {
    let method = notice.method.clone();
    let bad = |error: serde_json::Error| TuiError::Notice {
        method: method.clone(),
        why: error.to_string(),
    };
    let event = match notice.method.as_str() {
        LineNotice::METHOD => {
            let line: LineNotice = serde_json::from_value(notice.params).map_err(bad)?;
            Event::Line {
                session: line.session,
                index: line.index,
                line: line.line,
            }
        }
        EndNotice::METHOD => {
            let end: EndNotice = serde_json::from_value(notice.params).map_err(bad)?;
            Event::Ended {
                session: end.session,
            }
        }
        ChangedNotice::METHOD => {
            let changed: ChangedNotice = serde_json::from_value(notice.params).map_err(bad)?;
            Event::Changed(Box::new(changed.session))
        }
        RemovedNotice::METHOD => {
            let removed: RemovedNotice = serde_json::from_value(notice.params).map_err(bad)?;
            Event::Removed { id: removed.id }
        }
        _ => return Ok(None),
    };
    Ok(Some(event))
}
