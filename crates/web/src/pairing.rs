//! Pairing codes and device tokens, as pure data. The randomness and the clock are arguments
//! (the shell draws them from the OS), so every rule here is a table test.
//!
//! - A [`PairingCode`] is single use, expires [`CODE_TTL_MS`] after it was issued, and is
//!   burnt after [`CODE_ATTEMPTS`] wrong tries, so guessing it is no better than its 128 bits.
//! - A device token is 256 random bits shown once; [`Devices`] keeps only its SHA-256 hash,
//!   so the state file on disk cannot be replayed as a credential.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// How long a pairing code is good for: five minutes.
pub const CODE_TTL_MS: u64 = 5 * 60 * 1000;

/// Wrong codes tried before the code is burnt.
pub const CODE_ATTEMPTS: u32 = 5;

/// The longest device name kept, in characters.
pub const DEVICE_NAME_CHARS: usize = 40;

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
    out
}

/// The SHA-256 of `text`, in hex.
pub fn sha256_hex(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes()))
}

/// Whether two strings are equal, looking at every byte (no early exit on the first
/// difference, so timing does not say how much of a guess was right).
fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Why a pairing code was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PairError {
    /// Not the code issued.
    #[error("that is not the pairing code printed by `panewise web`")]
    Wrong,
    /// The code was already exchanged.
    #[error("that pairing code was already used; restart `panewise web` for a new one")]
    Used,
    /// The code is older than [`CODE_TTL_MS`].
    #[error("that pairing code expired; restart `panewise web` for a new one")]
    Expired,
    /// Too many wrong codes were tried.
    #[error("too many wrong pairing codes; restart `panewise web` for a new one")]
    Burnt,
}

/// The one pairing code of a server run.
#[derive(Debug, Clone)]
pub struct PairingCode {
    code: String,
    expires_ms: u64,
    used: bool,
    wrong_left: u32,
}

impl PairingCode {
    /// A code made of 16 random bytes, issued at `now_ms`.
    pub fn issue(random: [u8; 16], now_ms: u64) -> PairingCode {
        PairingCode {
            code: hex(&random),
            expires_ms: now_ms.saturating_add(CODE_TTL_MS),
            used: false,
            wrong_left: CODE_ATTEMPTS,
        }
    }

    /// The code, to print in the URL fragment.
    pub fn code(&self) -> &str {
        &self.code
    }

    /// Exchanges `offered` at `now_ms`: on success the code can never be used again.
    pub fn redeem(&mut self, offered: &str, now_ms: u64) -> Result<(), PairError> {
        if self.used {
            return Err(PairError::Used);
        }
        if self.wrong_left == 0 {
            return Err(PairError::Burnt);
        }
        if now_ms >= self.expires_ms {
            return Err(PairError::Expired);
        }
        if !same(offered, &self.code) {
            self.wrong_left -= 1;
            return Err(if self.wrong_left == 0 {
                PairError::Burnt
            } else {
                PairError::Wrong
            });
        }
        self.used = true;
        Ok(())
    }
}

/// A paired device as kept on disk: never its token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Device {
    /// A short id (the first 12 hex digits of the token's hash), for `revoke`.
    pub id: String,
    /// The name the page gave, sanitised.
    pub name: String,
    /// The SHA-256 of the token, hex.
    pub token_sha256: String,
    /// When it was paired, ms since the epoch.
    pub paired_at_ms: u64,
    /// Its browsers' Web Push subscriptions (sent by [`crate::push`]): kept in its record, so that
    /// revoking the device drops them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subscriptions: Vec<Subscription>,
}

/// Why a device could not be revoked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    /// No device has that id or name.
    #[error("no paired device is named or numbered {0:?} (see `panewise web devices`)")]
    Unknown(String),
    /// More than one device has that name.
    #[error("several devices are named {0:?}: revoke by id")]
    Ambiguous(String),
}

/// The paired devices.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Devices {
    /// Every device, oldest first.
    pub devices: Vec<Device>,
}

/// A device name as kept: printable characters only, at most [`DEVICE_NAME_CHARS`], never
/// empty (`device`).
pub fn device_name(offered: &str) -> String {
    let name: String = offered
        .chars()
        .filter(|c| !c.is_control())
        .take(DEVICE_NAME_CHARS)
        .collect();
    let name = name.trim();
    if name.is_empty() {
        "device".to_owned()
    } else {
        name.to_owned()
    }
}

impl Devices {
    /// Pairs a device named `name` with a token made of 32 random bytes at `now_ms`: the
    /// device kept and the token, returned once.
    pub fn pair(&mut self, name: &str, random: [u8; 32], now_ms: u64) -> (Device, String) {
        let token = format!("pw1_{}", hex(&random));
        let hash = sha256_hex(&token);
        let device = Device {
            id: hash.chars().take(12).collect(),
            name: device_name(name),
            token_sha256: hash,
            paired_at_ms: now_ms,
            subscriptions: Vec::new(),
        };
        self.devices.push(device.clone());
        (device, token)
    }

    /// The device holding `token`, if any.
    pub fn verify(&self, token: &str) -> Option<&Device> {
        let hash = sha256_hex(token);
        self.devices
            .iter()
            .find(|device| same(&device.token_sha256, &hash))
    }

    /// Forgets the device with id (or unique name) `key`.
    pub fn revoke(&mut self, key: &str) -> Result<Device, DeviceError> {
        let by_id = self.devices.iter().position(|device| device.id == key);
        let at = match by_id {
            Some(at) => at,
            None => {
                let named: Vec<usize> = (0..self.devices.len())
                    .filter(|&at| self.devices[at].name == key)
                    .collect();
                match named.as_slice() {
                    [at] => *at,
                    [] => return Err(DeviceError::Unknown(key.to_owned())),
                    _ => return Err(DeviceError::Ambiguous(key.to_owned())),
                }
            }
        };
        Ok(self.devices.remove(at))
    }
}

/// The name a device's daemon connection says hello with, so the session log records an
/// answer as this web client's, naming the device: `panewise web (NAME)`.
pub fn client_name(device: &str) -> String {
    format!("panewise web ({})", device_name(device))
}

/// A browser's push subscription, as kept in its device's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subscription {
    /// The push service's URL for this browser (a capability: never logged whole).
    pub endpoint: String,
    /// The browser's P-256 public key, uncompressed, base64url (65 bytes).
    pub p256dh: String,
    /// The browser's authentication secret, base64url (16 bytes).
    pub auth: String,
    /// When it was added, ms since the epoch.
    pub added_at_ms: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_is_single_use_expiring_and_burnt_by_guesses() {
        let code = PairingCode::issue([7; 16], 1_000);
        let right = code.code().to_owned();
        assert_eq!(right.len(), 32);
        // (steps: (offered, at ms, expected))
        type Step<'a> = (&'a str, u64, Result<(), PairError>);
        let table: &[(&str, &[Step<'_>])] = &[
            (
                "once",
                &[
                    (&right, 2_000, Ok(())),
                    (&right, 2_001, Err(PairError::Used)),
                ],
            ),
            (
                "expired",
                &[(&right, 1_000 + CODE_TTL_MS, Err(PairError::Expired))],
            ),
            ("just in time", &[(&right, 1_000 + CODE_TTL_MS - 1, Ok(()))]),
            (
                "wrong then right",
                &[
                    ("00", 2_000, Err(PairError::Wrong)),
                    (&right, 2_001, Ok(())),
                ],
            ),
            (
                "burnt",
                &[
                    ("a", 2_000, Err(PairError::Wrong)),
                    ("b", 2_000, Err(PairError::Wrong)),
                    ("c", 2_000, Err(PairError::Wrong)),
                    ("d", 2_000, Err(PairError::Wrong)),
                    ("e", 2_000, Err(PairError::Burnt)),
                    (&right, 2_000, Err(PairError::Burnt)),
                ],
            ),
        ];
        for (name, steps) in table {
            let mut code = code.clone();
            for (offered, at, want) in steps.iter() {
                assert_eq!(
                    code.redeem(offered, *at),
                    *want,
                    "{name}: {offered} at {at}"
                );
            }
        }
    }

    #[test]
    fn devices_keep_hashes_verify_and_revoke() {
        let mut devices = Devices::default();
        let (phone, phone_token) = devices.pair("phone\u{7}", [1; 32], 5);
        let (_tablet, tablet_token) = devices.pair("tablet", [2; 32], 6);
        let (_other, _) = devices.pair("tablet", [3; 32], 7);
        assert_eq!(phone.name, "phone");
        let stored = serde_json::to_string(&devices).unwrap_or_default();
        assert!(!stored.contains(&phone_token), "no token on disk");
        assert_eq!(
            devices.verify(&phone_token).map(|d| d.name.as_str()),
            Some("phone")
        );
        assert_eq!(devices.verify("pw1_00"), None);
        assert_eq!(
            devices.revoke("tablet"),
            Err(DeviceError::Ambiguous("tablet".to_owned()))
        );
        assert_eq!(
            devices.revoke("nobody"),
            Err(DeviceError::Unknown("nobody".to_owned()))
        );
        assert_eq!(
            devices.revoke(&phone.id).map(|d| d.name),
            Ok("phone".to_owned())
        );
        assert_eq!(
            devices.verify(&phone_token),
            None,
            "a revoked token is refused"
        );
        assert!(devices.verify(&tablet_token).is_some());
    }

    #[test]
    fn names() {
        for (offered, want) in [
            ("  ", "device"),
            ("my phone", "my phone"),
            ("a\nb", "ab"),
            (&"x".repeat(60), &"x".repeat(40)),
        ] {
            assert_eq!(device_name(offered), want);
        }
        assert_eq!(client_name("phone"), "panewise web (phone)");
    }
}
