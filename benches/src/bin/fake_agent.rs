//! A small fake agent for the live-pipeline bench: writes the lines of a real capture to stdout
//! on a fixed schedule, line `i` at `START_NS + i × 1e9 / RATE` (nanoseconds since the Unix
//! epoch), looping over the capture, so the reader can measure each line's latency from the time
//! it was due; with TIMES_FILE, it also records the time each line was actually written (read
//! just before the write), one number per line, written out when it ends.
//!
//! Usage: `fake_agent CAPTURE LINES_PER_SECOND TOTAL_LINES START_NS [TIMES_FILE]`

use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (capture, rate, total, start, times_file) = match args.as_slice() {
        [_, capture, rate, total, start] => (capture, rate, total, start, None),
        [_, capture, rate, total, start, times] => (capture, rate, total, start, Some(times)),
        _ => {
            eprintln!(
                "usage: fake_agent CAPTURE LINES_PER_SECOND TOTAL_LINES START_NS [TIMES_FILE]"
            );
            std::process::exit(2);
        }
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
    let mut written = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    for index in 0..total {
        let due = start + (index as f64 * 1e9 / rate) as u128;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos());
        if due > now {
            std::thread::sleep(Duration::from_nanos(u64::try_from(due - now).unwrap_or(0)));
        }
        let line = lines[(index as usize) % lines.len()];
        written.push(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_nanos()),
        );
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            break;
        }
    }
    if let Some(path) = times_file {
        let text: String = written.iter().map(|ns| format!("{ns}\n")).collect();
        let _ignored = std::fs::write(path, text);
    }
}
