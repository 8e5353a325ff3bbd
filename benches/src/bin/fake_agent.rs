//! A small fake agent for the live-pipeline bench: writes the lines of a real capture to stdout
//! on a fixed schedule, line `i` at `START_NS + i × 1e9 / RATE` (nanoseconds since the Unix
//! epoch), looping over the capture, so the reader can measure each line's latency from the time
//! it was due.
//!
//! Usage: `fake_agent CAPTURE LINES_PER_SECOND TOTAL_LINES START_NS`

use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, capture, rate, total, start] = args.as_slice() else {
        eprintln!("usage: fake_agent CAPTURE LINES_PER_SECOND TOTAL_LINES START_NS");
        std::process::exit(2);
    };
    let (Ok(text), Ok(rate), Ok(total), Ok(start)) = (
        std::fs::read_to_string(capture),
        rate.parse::<f64>(),
        total.parse::<u64>(),
        start.parse::<u128>(),
    ) else {
        eprintln!("fake_agent: bad arguments");
        std::process::exit(2);
    };
    let lines: Vec<&str> = text.lines().filter(|line| !line.is_empty()).collect();
    if lines.is_empty() || rate <= 0.0 {
        std::process::exit(2);
    }
    let mut out = std::io::stdout().lock();
    for index in 0..total {
        let due = start + (index as f64 * 1e9 / rate) as u128;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos());
        if due > now {
            std::thread::sleep(Duration::from_nanos(u64::try_from(due - now).unwrap_or(0)));
        }
        let line = lines[(index as usize) % lines.len()];
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            return;
        }
    }
}
