//! The metrics half of the telemetry e2e cases: a real OTLP metrics receiver, **Rotel** (an
//! OpenTelemetry collector written in Rust, shipped with its `rotel-agent` binary in the
//! `rotel` wheel on PyPI, pinned beside Phoenix in `e2e/phoenix-requirements.txt` and installed
//! into the same venv). Phoenix takes no metrics, and no metrics store with an OTLP receiver
//! installs from the registries used here (docs/TELEMETRY.md, "Tests"); Rotel receives OTLP
//! metrics over HTTP and gRPC and, with `--debug-log metrics --debug-log-verbosity detailed`,
//! prints every data point it received in the OpenTelemetry Collector's debug-exporter format
//! (its only exporter here is `blackhole`). The case reads that print-out back: the metric
//! names, each data point's attributes and value, as decoded by a receiver that shares no code
//! with panewise.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// How long Rotel may take to listen.
const STARTUP: Duration = Duration::from_secs(30);

/// `rotel-agent` in the venv whose `phoenix` executable is `phoenix` (`venv/bin/phoenix`):
/// the wheel puts it in the `rotel` package directory of that venv's site-packages.
pub fn rotel_agent(phoenix: &Path) -> Result<PathBuf> {
    let venv = phoenix
        .parent()
        .and_then(Path::parent)
        .context("the phoenix executable is not in a venv's bin/")?;
    let lib = venv.join("lib");
    for entry in std::fs::read_dir(&lib).with_context(|| format!("{}", lib.display()))? {
        let agent = entry?.path().join("site-packages/rotel/rotel-agent");
        if agent.exists() {
            return Ok(agent);
        }
    }
    bail!(
        "no rotel-agent under {}: the `rotel` wheel is pinned in e2e/phoenix-requirements.txt",
        lib.display()
    )
}

/// A running Rotel on 127.0.0.1, stopped when dropped.
pub struct Rotel {
    child: Child,
    http: u16,
    grpc: u16,
    log: PathBuf,
}

impl Drop for Rotel {
    fn drop(&mut self) {
        let _ignored = self.child.kill();
        let _ignored = self.child.wait();
    }
}

/// `N` distinct ports of 127.0.0.1 that were free a moment ago. Every probe stays bound until
/// all are known, so no two are the same port.
pub fn free_ports<const N: usize>() -> Result<[u16; N]> {
    let listeners = (0..N)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()?;
    let mut ports = [0; N];
    for (port, listener) in ports.iter_mut().zip(&listeners) {
        *port = listener.local_addr()?.port();
    }
    Ok(ports)
}

impl Rotel {
    /// Starts `rotel-agent` on free ports of 127.0.0.1, printing what it receives to
    /// `dir/rotel.log`, and waits until both ports accept.
    pub fn start(agent: &Path, dir: &Path) -> Result<Rotel> {
        std::fs::create_dir_all(dir)?;
        let [http, grpc] = free_ports()?;
        let log = dir.join("rotel.log");
        let child = Command::new(agent)
            .arg("start")
            .args(["--otlp-http-endpoint", &format!("127.0.0.1:{http}")])
            .args(["--otlp-grpc-endpoint", &format!("127.0.0.1:{grpc}")])
            .args(["--exporter", "blackhole"])
            .args([
                "--debug-log",
                "metrics",
                "--debug-log-verbosity",
                "detailed",
            ])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log)?)
            .stderr(std::fs::File::create(dir.join("rotel.stderr"))?)
            .spawn()
            .with_context(|| format!("cannot start {}", agent.display()))?;
        let mut rotel = Rotel {
            child,
            http,
            grpc,
            log,
        };
        let until = Instant::now() + STARTUP;
        while [http, grpc]
            .iter()
            .any(|port| std::net::TcpStream::connect(("127.0.0.1", *port)).is_err())
        {
            if let Some(status) = rotel.child.try_wait()? {
                bail!("rotel-agent exited ({status}) before it listened: see its stderr");
            }
            if Instant::now() > until {
                bail!("rotel-agent did not listen within {STARTUP:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(rotel)
    }

    /// Its OTLP/HTTP metrics URL.
    pub fn metrics_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/v1/metrics", self.http)
    }

    /// Its OTLP/gRPC endpoint (no path: the service is in the request).
    pub fn grpc_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.grpc)
    }

    /// Every data point received so far.
    pub fn points(&self) -> Result<Vec<Point>> {
        let text = std::fs::read_to_string(&self.log)
            .with_context(|| format!("cannot read {}", self.log.display()))?;
        Ok(parse(&text))
    }

    /// Waits until the points received satisfy `done`; returns them then.
    pub fn points_until(
        &self,
        within: Duration,
        done: impl Fn(&[Point]) -> bool,
    ) -> Result<Vec<Point>> {
        let until = Instant::now() + within;
        loop {
            let points = self.points()?;
            if done(&points) {
                return Ok(points);
            }
            if Instant::now() > until {
                let names: std::collections::BTreeSet<&str> =
                    points.iter().map(|point| point.metric.as_str()).collect();
                bail!(
                    "Rotel did not receive the session's metrics within {within:?}; it has: \
                     {names:?} (see {})",
                    self.log.display()
                );
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

/// One data point as the receiver printed it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Point {
    /// The metric's name.
    pub metric: String,
    /// The data point's attributes, `key` → the value's text (`Str(chat)` → `chat`).
    pub attributes: Vec<(String, String)>,
    /// A number point's `Value`, or a histogram point's `Sum`.
    pub value: Option<f64>,
    /// A histogram point's `Count`.
    pub count: Option<u64>,
}

impl Point {
    /// The attribute `key`'s value.
    pub fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value.as_str())
    }
}

/// The data points of the debug exporter's detailed print-out, in order (a cumulative metric
/// exported twice appears twice: the later point is the newer total).
pub fn parse(text: &str) -> Vec<Point> {
    let mut points = Vec::new();
    let mut metric = String::new();
    let mut current: Option<Point> = None;
    for raw in text.lines() {
        let line = raw.trim();
        if let Some(name) = line.strip_prefix("-> Name: ") {
            points.extend(current.take());
            metric = name.to_owned();
        } else if line.starts_with("HistogramDataPoints #")
            || line.starts_with("NumberDataPoints #")
        {
            points.extend(current.take());
            current = Some(Point {
                metric: metric.clone(),
                ..Point::default()
            });
        } else if line.starts_with("ResourceMetrics #") || line.starts_with("Metric #") {
            points.extend(current.take());
        } else if let Some(point) = current.as_mut() {
            if let Some(attribute) = line.strip_prefix("-> ") {
                if let Some((key, value)) = attribute.split_once(": ") {
                    let value = value
                        .split_once('(')
                        .and_then(|(_, inner)| inner.strip_suffix(')'))
                        .unwrap_or(value);
                    point.attributes.push((key.to_owned(), value.to_owned()));
                }
            } else if let Some(value) = line
                .strip_prefix("Value: ")
                .or_else(|| line.strip_prefix("Sum: "))
            {
                point.value = value.trim().parse().ok();
            } else if let Some(count) = line.strip_prefix("Count: ") {
                point.count = count.trim().parse().ok();
            }
        }
    }
    points.extend(current);
    points
}

/// The newest point of `metric` whose attributes include every `(key, value)` of `with`.
pub fn newest<'a>(points: &'a [Point], metric: &str, with: &[(&str, &str)]) -> Option<&'a Point> {
    points.iter().rev().find(|point| {
        point.metric == metric
            && with
                .iter()
                .all(|(key, value)| point.attribute(key) == Some(*value))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape Rotel 0.0.1-alpha10 printed for `panewise run` on the mock (abridged).
    const PRINTED: &str = "\
ResourceMetrics #0
Resource attributes:
     -> service.name: Str(panewise)
ScopeMetrics #0
Metric #0
Descriptor:
     -> Name: gen_ai.client.token.usage
     -> DataType: Histogram
HistogramDataPoints #0
Data point attributes:
     -> gen_ai.token.type: Str(output)
Count: 2
Sum: 52
ExplicitBounds #0: 1
Buckets #0, Count: 0
HistogramDataPoints #1
Data point attributes:
     -> gen_ai.token.type: Str(input)
Count: 2
Sum: 3753
Metric #1
Descriptor:
     -> Name: panewise.sessions
     -> DataType: Sum
NumberDataPoints #0
Data point attributes:
     -> panewise.session.state: Str(started)
Value: 1
";

    #[test]
    fn the_debug_print_out_reads_back_as_points() {
        let points = parse(PRINTED);
        assert_eq!(points.len(), 3, "{points:?}");
        let input = newest(
            &points,
            "gen_ai.client.token.usage",
            &[("gen_ai.token.type", "input")],
        );
        assert_eq!(input.and_then(|p| p.value), Some(3753.0));
        assert_eq!(input.and_then(|p| p.count), Some(2));
        let started = newest(
            &points,
            "panewise.sessions",
            &[("panewise.session.state", "started")],
        );
        assert_eq!(started.and_then(|p| p.value), Some(1.0));
        assert!(newest(&points, "panewise.sessions", &[("x", "y")]).is_none());
    }
}
