//! Web Push, the decisions: which subscriptions a device may keep ([`validate`],
//! [`subscribe`]), which pushes an inbox change sends ([`Watch::observe`]), what a push says
//! ([`PushMessage`]), whom a VAPID token is for ([`audience`]) and what a push service's answer
//! means ([`verdict`]). No I/O, clock or randomness: the shell (`server::push`) encrypts, signs
//! and POSTs.
//!
//! **When**: on the edges `[notify]` notifies — a session coming into `needs_input` (a new
//! request counts as a new edge) or `done` ([`panewise_supervisor::notified`], the daemon's own
//! test), after the state lasted `[notify] delay_secs`, never while a client is attached to it.
//! A request the approval mode answered itself never puts the session in `needs_input`, so it
//! is never pushed.
//!
//! **Where to**: an endpoint is `https://` anywhere, or `http://` to a loopback IP literal only
//! (a push relay on this machine, and the tests' fake push service); anything else is refused.
//! A paired device can already approve commands, so letting it name where the encrypted pushes
//! go gives it nothing more. At most [`SUBSCRIPTIONS_PER_DEVICE`] per device (the oldest goes);
//! the subscriptions are kept in the device's record, so revoking the device drops them.

use core::net::IpAddr;
use std::collections::BTreeMap;

use base64ct::{Base64UrlUnpadded, Encoding};
use panewise_api::{AgentState, SessionSummary, WaitingFor};
use serde::{Deserialize, Serialize};

use crate::pairing::Devices;

/// Subscriptions one device may keep; a new one beyond this replaces its oldest.
pub const SUBSCRIPTIONS_PER_DEVICE: usize = 4;

/// The longest endpoint URL taken, in bytes.
pub const ENDPOINT_MAX: usize = 2048;

/// Characters of a session name, agent, host or tool in a push.
pub const FIELD_CHARS: usize = 60;

/// Characters of the summary (the command, the question) in a push.
pub const SUMMARY_CHARS: usize = 120;

/// How long a push service keeps a push for a device that is offline, in seconds: an hour
/// (a question older than that is better read in the inbox).
pub const TTL_SECS: u64 = 3600;

/// A browser's push subscription: kept in its device's record ([`crate::pairing`]).
pub use crate::pairing::Subscription;

/// Why a subscription was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubscriptionError {
    /// The endpoint is no URL this server posts to.
    #[error("the endpoint {0}")]
    Endpoint(&'static str),
    /// `keys.p256dh` is not an uncompressed P-256 point.
    #[error("keys.p256dh must be an uncompressed P-256 public key (65 bytes, base64url)")]
    P256dh,
    /// `keys.auth` is not 16 bytes.
    #[error("keys.auth must be 16 bytes, base64url")]
    Auth,
    /// The device is not paired (any more).
    #[error("this device is not paired")]
    UnknownDevice,
}

/// Base64url, padded or not (browsers send it unpadded; some libraries pad).
pub fn decode_base64url(text: &str) -> Option<Vec<u8>> {
    Base64UrlUnpadded::decode_vec(text.trim().trim_end_matches('=')).ok()
}

/// Whether `endpoint` is a URL pushes may go to, and why not. `https://` with a host, or
/// `http://` to a loopback IP literal (`127.0.0.0/8`, `[::1]`); no user info, no fragment.
pub fn check_endpoint(endpoint: &str) -> Result<(), SubscriptionError> {
    if endpoint.len() > ENDPOINT_MAX {
        return Err(SubscriptionError::Endpoint("is longer than 2048 bytes"));
    }
    if endpoint.contains('#') || endpoint.chars().any(|c| c.is_control() || c == ' ') {
        return Err(SubscriptionError::Endpoint("is not a URL"));
    }
    let uri: axum::http::Uri = endpoint
        .parse()
        .map_err(|_| SubscriptionError::Endpoint("is not a URL"))?;
    let authority = uri
        .authority()
        .ok_or(SubscriptionError::Endpoint("has no host"))?;
    if authority.as_str().contains('@') {
        return Err(SubscriptionError::Endpoint("must not carry a user name"));
    }
    let host = authority.host();
    if host.is_empty() {
        return Err(SubscriptionError::Endpoint("has no host"));
    }
    match uri.scheme_str() {
        Some("https") => Ok(()),
        Some("http") => {
            let literal = host.trim_start_matches('[').trim_end_matches(']');
            match literal.parse::<IpAddr>() {
                Ok(ip) if ip.is_loopback() => Ok(()),
                _ => Err(SubscriptionError::Endpoint(
                    "must be https (plain http only to a loopback address such as 127.0.0.1)",
                )),
            }
        }
        _ => Err(SubscriptionError::Endpoint("must be https")),
    }
}

/// A subscription as a browser's `PushSubscription.toJSON()` gives it, checked: the endpoint
/// ([`check_endpoint`]), `p256dh` a point on P-256, `auth` 16 bytes.
pub fn validate(
    endpoint: &str,
    p256dh: &str,
    auth: &str,
    now_ms: u64,
) -> Result<Subscription, SubscriptionError> {
    check_endpoint(endpoint)?;
    let point = decode_base64url(p256dh).ok_or(SubscriptionError::P256dh)?;
    if point.len() != 65
        || point.first() != Some(&4)
        || web_push_native::p256::PublicKey::from_sec1_bytes(&point).is_err()
    {
        return Err(SubscriptionError::P256dh);
    }
    let secret = decode_base64url(auth).ok_or(SubscriptionError::Auth)?;
    if secret.len() != 16 {
        return Err(SubscriptionError::Auth);
    }
    Ok(Subscription {
        endpoint: endpoint.to_owned(),
        p256dh: Base64UrlUnpadded::encode_string(&point),
        auth: Base64UrlUnpadded::encode_string(&secret),
        added_at_ms: now_ms,
    })
}

/// Keeps `subscription` for device `device_id`: an endpoint belongs to one device (taken from
/// any other that had it), and a device keeps its newest [`SUBSCRIPTIONS_PER_DEVICE`]. The
/// device's subscriptions now.
pub fn subscribe(
    devices: &mut Devices,
    device_id: &str,
    subscription: Subscription,
) -> Result<usize, SubscriptionError> {
    if !devices.devices.iter().any(|device| device.id == device_id) {
        return Err(SubscriptionError::UnknownDevice);
    }
    drop_endpoint(devices, &subscription.endpoint);
    let device = devices
        .devices
        .iter_mut()
        .find(|device| device.id == device_id)
        .ok_or(SubscriptionError::UnknownDevice)?;
    device.subscriptions.push(subscription);
    let over = device
        .subscriptions
        .len()
        .saturating_sub(SUBSCRIPTIONS_PER_DEVICE);
    device.subscriptions.drain(..over);
    Ok(device.subscriptions.len())
}

/// Forgets `endpoint` of device `device_id`; whether it was there.
pub fn unsubscribe(devices: &mut Devices, device_id: &str, endpoint: &str) -> bool {
    let Some(device) = devices.devices.iter_mut().find(|d| d.id == device_id) else {
        return false;
    };
    let before = device.subscriptions.len();
    device.subscriptions.retain(|s| s.endpoint != endpoint);
    device.subscriptions.len() != before
}

/// Forgets `endpoint` whatever device has it (its push service said it is gone); whether it
/// was there.
pub fn drop_endpoint(devices: &mut Devices, endpoint: &str) -> bool {
    let mut dropped = false;
    for device in &mut devices.devices {
        let before = device.subscriptions.len();
        device.subscriptions.retain(|s| s.endpoint != endpoint);
        dropped |= device.subscriptions.len() != before;
    }
    dropped
}

/// Every subscription of every paired device: where a push goes.
pub fn targets(devices: &Devices) -> Vec<Subscription> {
    devices
        .devices
        .iter()
        .flat_map(|device| device.subscriptions.iter().cloned())
        .collect()
}

/// What a push service's HTTP status means for the subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// 2xx: accepted.
    Delivered,
    /// 404 or 410: the subscription expired or was withdrawn; forget it.
    Gone,
    /// Anything else (401/403 a VAPID refusal, 413 too large, 429, 5xx): said in the log,
    /// the subscription kept.
    Failed,
}

/// [`Verdict`] of `status` (RFC 8030 §6.2, §7.3).
pub fn verdict(status: u16) -> Verdict {
    match status {
        200..=299 => Verdict::Delivered,
        404 | 410 => Verdict::Gone,
        _ => Verdict::Failed,
    }
}

/// The VAPID `aud` for `endpoint`: its origin, `scheme://host` with the port when it is not
/// the scheme's default (RFC 8292 §2: the origin of the push resource).
pub fn audience(endpoint: &str) -> Option<String> {
    let uri: axum::http::Uri = endpoint.parse().ok()?;
    let scheme = uri.scheme_str()?;
    let authority = uri.authority()?;
    let default = match scheme {
        "https" => 443,
        "http" => 80,
        _ => return None,
    };
    Some(match authority.port_u16() {
        Some(port) if port != default => format!("{scheme}://{}:{port}", authority.host()),
        _ => format!("{scheme}://{}", authority.host()),
    })
}

/// How soon a push service should deliver (RFC 8030 §5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Urgency {
    /// A person is waited for.
    High,
    /// A turn is done.
    Normal,
}

impl Urgency {
    /// The header's value.
    pub fn header(self) -> &'static str {
        match self {
            Urgency::High => "high",
            Urgency::Normal => "normal",
        }
    }
}

/// What one push says: the JSON the service worker decrypts and shows. Everything in it
/// leaves the machine (encrypted end to end: the push service sees only its size).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushMessage {
    /// The format's version: 1.
    pub v: u32,
    /// `needs_input` or `done`.
    pub event: String,
    /// The daemon's host (`local` for this machine's).
    pub host: String,
    /// The session's id (the notification's tag: a newer push for it replaces an older).
    pub session: String,
    /// The session's name.
    pub name: String,
    /// The agent (the session's provider).
    pub agent: String,
    /// The tool asked for, for an approval.
    pub tool: Option<String>,
    /// A short summary: the start of the command or path, the question, the turns done.
    pub summary: String,
}

impl PushMessage {
    /// The Urgency header for it.
    pub fn urgency(&self) -> Urgency {
        if self.event == AgentState::NeedsInput.as_str() {
            Urgency::High
        } else {
            Urgency::Normal
        }
    }
}

/// `text` on one line, control characters gone (newlines and tabs as spaces), at most `chars`
/// characters (cut with `…`).
pub fn clean(text: &str, chars: usize) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .filter(|c| !c.is_control())
        .collect();
    let one_line = one_line
        .split(' ')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if one_line.chars().count() <= chars {
        return one_line;
    }
    let mut cut: String = one_line.chars().take(chars.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// The push for `summary`, on `host`.
pub fn message(host: &str, summary: &SessionSummary) -> PushMessage {
    let (tool, text) = match &summary.waiting_for {
        Some(WaitingFor::Approval { tool, argument, .. }) => {
            (Some(tool.as_str()), argument.clone())
        }
        Some(WaitingFor::Question { questions, .. }) => (None, questions.join(" / ")),
        // Held at a spend cap: the reason ("budget reached: $X of $Y") is what to act on.
        Some(WaitingFor::Budget { reason }) => (None, reason.clone()),
        None if summary.state == AgentState::Done => {
            (None, format!("{} turn(s) done", summary.turns))
        }
        None => (None, String::new()),
    };
    PushMessage {
        v: 1,
        event: summary.state.as_str().to_owned(),
        host: clean(host, FIELD_CHARS),
        session: clean(&summary.id, FIELD_CHARS),
        name: clean(&summary.name, FIELD_CHARS),
        agent: clean(&summary.provider, FIELD_CHARS),
        tool: tool.map(|tool| clean(tool, FIELD_CHARS)),
        summary: clean(&text, SUMMARY_CHARS),
    }
}

/// What the watch last saw of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    state: AgentState,
    since_ms: u64,
    /// An edge waiting for its delay to run out.
    pending: bool,
}

/// The sessions the push watcher has seen, per host: a fold of successive lists (or of the
/// daemon's `sessions/changed` stream, kept as a list) into the pushes to send.
#[derive(Debug, Default, Clone)]
pub struct Watch {
    hosts: BTreeMap<String, BTreeMap<String, Seen>>,
}

impl Watch {
    /// A watch that has seen nothing.
    pub fn new() -> Watch {
        Watch::default()
    }

    /// Folds `host`'s session list at `now_ms` (`None`: the host could not be listed, what
    /// was seen is kept); the pushes to send now. The first list of a host is the baseline
    /// (what waited before `panewise web` started was notified by then). The edges and the
    /// delay are the daemon's `[notify]` ones, by its own functions: an edge is a state
    /// change into `needs_input` or `done` with nobody attached
    /// ([`panewise_supervisor::is_edge`]), pushed once the state has lasted `delay_ms` if
    /// still nobody is attached ([`panewise_supervisor::still_due`]) and nobody attached
    /// meanwhile.
    pub fn observe(
        &mut self,
        host: &str,
        sessions: Option<&[SessionSummary]>,
        now_ms: u64,
        delay_ms: u64,
    ) -> Vec<PushMessage> {
        let Some(sessions) = sessions else {
            return Vec::new();
        };
        let first = !self.hosts.contains_key(host);
        let known = self.hosts.entry(host.to_owned()).or_default();
        known.retain(|id, _| sessions.iter().any(|s| &s.id == id));
        let mut out = Vec::new();
        for summary in sessions {
            let before = known.get(&summary.id).map(|seen| seen.state);
            if before != Some(summary.state) {
                known.insert(
                    summary.id.clone(),
                    Seen {
                        state: summary.state,
                        since_ms: now_ms,
                        pending: !first && panewise_supervisor::is_edge(before, summary),
                    },
                );
            }
            let Some(seen) = known.get_mut(&summary.id) else {
                continue;
            };
            // Someone attached while the delay ran: they saw it (the daemon checks at the due
            // moment; a fold of snapshots cannot know that moment, so any look before it counts).
            if seen.pending && summary.attached > 0 {
                seen.pending = false;
            }
            if !seen.pending || now_ms.saturating_sub(seen.since_ms) < delay_ms {
                continue;
            }
            seen.pending = false;
            if panewise_supervisor::still_due(seen.state, summary) {
                out.push(message(host, summary));
            }
        }
        out
    }
}

#[cfg(test)]
#[path = "push_tests.rs"]
mod tests;
