//! A small RFC 3339 reader for the times recordings carry (`2026-12-03T11:44:05.022Z`,
//! `2026-12-03T11:44:05+02:00`, and SpecStory's `2026-02-23 13:21:56Z`), so a call's time can
//! be given in milliseconds since the Unix epoch without a date crate.

/// Milliseconds since the Unix epoch of an RFC 3339 date-time (a space may stand for the
/// `T`; a missing offset reads as UTC; fractions beyond milliseconds are cut). `None` for
/// anything else, or a time before the epoch.
pub fn parse_rfc3339_ms(text: &str) -> Option<u64> {
    let text = text.trim();
    let bytes = text.as_bytes();
    if bytes.len() < 19 {
        return None;
    }
    let num = |from: usize, len: usize| -> Option<i64> {
        let part = text.get(from..from + len)?;
        if !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        part.parse().ok()
    };
    let sep = |at: usize, allowed: &[u8]| bytes.get(at).is_some_and(|b| allowed.contains(b));
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt ") && sep(13, b":") && sep(16, b":")) {
        return None;
    }
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (hour, minute, second) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = text.get(19..)?;
    let mut millis = 0i64;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let kept = fraction.get(..digits.min(3))?;
        millis = kept.parse::<i64>().ok()? * 10i64.pow(3 - kept.len() as u32);
        rest = fraction.get(digits..)?;
    }
    let offset_minutes = match rest {
        "" | "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first() {
                Some(b'+') => 1,
                Some(b'-') => -1,
                _ => return None,
            };
            let zone = rest.get(1..)?;
            let (h, m) = zone
                .split_once(':')
                .unwrap_or((zone.get(..2)?, zone.get(2..)?));
            if h.len() != 2 || m.len() != 2 {
                return None;
            }
            let (h, m): (i64, i64) = (h.parse().ok()?, m.parse().ok()?);
            if h > 23 || m > 59 {
                return None;
            }
            sign * (h * 60 + m)
        }
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_minutes * 60;
    u64::try_from(seconds * 1_000 + millis).ok()
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the given civil date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::parse_rfc3339_ms;

    #[test]
    fn table() {
        let cases: &[(&str, Option<u64>)] = &[
            ("1970-01-01T00:00:00Z", Some(0)),
            ("1970-01-01T00:00:01.5Z", Some(1_500)),
            ("2026-12-03T11:44:05.022Z", Some(1_796_298_245_022)),
            ("2026-12-03T13:44:05.022+02:00", Some(1_796_298_245_022)),
            ("2026-12-03T11:44:05.022123456Z", Some(1_796_298_245_022)),
            ("2026-12-03 11:44:05Z", Some(1_796_298_245_000)),
            ("2026-12-03T11:44:05", Some(1_796_298_245_000)),
            ("2024-02-29T00:00:00Z", Some(1_709_164_800_000)),
            ("2023-02-29T00:00:00Z", None),
            ("2026-13-03T11:44:05Z", None),
            ("2026-12-03T11:44:05.Z", None),
            ("1969-12-31T23:59:59Z", None),
            ("2026-12-03", None),
            ("not a time at all!!", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_rfc3339_ms(text), *want, "{text}");
        }
    }
}
