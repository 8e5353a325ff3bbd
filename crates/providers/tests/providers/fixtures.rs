//! Every fixture decodes cleanly, and its event sequence is snapshot-tested.

use panewise_providers::{decode_all, ProviderEvent};

use crate::{fixture, fixtures};

/// One compact JSON line per event, long strings shortened so the snapshots stay readable.
fn render(events: &[ProviderEvent]) -> String {
    events
        .iter()
        .map(|event| {
            let mut value = serde_json::to_value(event).unwrap();
            shorten(&mut value);
            serde_json::to_string(&value).unwrap()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn shorten(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(text) if text.chars().count() > 120 => {
            let head: String = text.chars().take(100).collect();
            *text = format!("{head}… ({} chars)", text.chars().count());
        }
        serde_json::Value::Array(items) => {
            if items.len() > 6 {
                let total = items.len();
                items.truncate(5);
                items.push(serde_json::Value::String(format!("… ({total} items)")));
            }
            items.iter_mut().for_each(shorten);
        }
        serde_json::Value::Object(map) => map.values_mut().for_each(shorten),
        _ => {}
    }
}

#[test]
fn every_fixture_decodes_without_errors_or_unknown_events_and_matches_its_snapshot() {
    for (provider, path) in fixtures() {
        let (decoded, counts) = decode_all(provider, &fixture(&path));
        let errors: Vec<_> = decoded
            .iter()
            .filter_map(|item| item.as_ref().err())
            .collect();
        assert!(errors.is_empty(), "{path}: {errors:?}");
        assert_eq!(counts.decode_errors, 0, "{path}");
        assert_eq!(counts.unknown_events, 0, "{path}: {decoded:#?}");
        let events: Vec<ProviderEvent> = decoded.into_iter().map(Result::unwrap).collect();
        assert_eq!(counts.events, events.len() as u64);
        let name = path.replace(['/', '.'], "__");
        insta::assert_snapshot!(name, render(&events));
    }
}
