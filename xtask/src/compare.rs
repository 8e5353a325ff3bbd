//! `cargo xtask bench --compare`: the window stage against LangChain's `trim_messages` on the
//! same conversation file.
//!
//! The Rust side (`benches/examples/window_compare.rs`) writes the generated conversation as
//! chat-completions JSON Lines and times a token-budget visit. The Python side loads that very
//! file into LangChain messages and times `trim_messages(strategy="last")` with LangChain's
//! approximate token counter and the same token budget. LangChain (langchain-core from PyPI)
//! lives in a virtual environment under `target/langchain-venv`, created on first use.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// Conversation sizes compared, in messages.
const SIZES: [&str; 2] = ["1000", "10000"];

/// The LangChain side: reads `PATH THRESHOLD`, times `trim_messages`, prints one JSON line.
const LANGCHAIN_SCRIPT: &str = r#"
import json, statistics, sys, time
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage, trim_messages
try:
    from langchain_core.messages.utils import count_tokens_approximately as counter
except ImportError:
    sys.exit("this langchain-core has no count_tokens_approximately; upgrade it")

path, threshold = sys.argv[1], int(sys.argv[2])
messages = []
with open(path) as lines:
    for line in lines:
        m = json.loads(line)
        role, content = m["role"], m.get("content") or ""
        if role == "system":
            messages.append(SystemMessage(content))
        elif role == "user":
            messages.append(HumanMessage(content))
        elif role == "assistant":
            calls = [
                {"name": c["function"]["name"], "args": json.loads(c["function"]["arguments"] or "{}"),
                 "id": c["id"], "type": "tool_call"}
                for c in m.get("tool_calls", [])
            ]
            messages.append(AIMessage(content, tool_calls=calls))
        else:
            messages.append(ToolMessage(content, tool_call_id=m["tool_call_id"]))

def trim():
    return trim_messages(messages, max_tokens=threshold, token_counter=counter,
                         strategy="last", include_system=True, start_on="human")

kept = trim()
samples = []
deadline = time.perf_counter() + 4.0
while len(samples) < 5 or (time.perf_counter() < deadline and len(samples) < 50):
    start = time.perf_counter()
    trim()
    samples.append(time.perf_counter() - start)
import langchain_core
print(json.dumps({"kept": len(kept), "medianNs": int(statistics.median(samples) * 1e9),
                  "runs": len(samples), "version": langchain_core.__version__}))
"#;

/// The workspace root, asked of cargo at run time so the comparison runs in the checkout it was
/// invoked from, whichever build of xtask runs it.
fn workspace_root() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let located = Command::new(cargo)
        .args(["locate-project", "--workspace", "--message-format", "plain"])
        .output()
        .ok()
        .filter(|output| output.status.success())
        .and_then(|output| {
            let manifest = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
            manifest.parent().map(Path::to_path_buf)
        });
    located.unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."))
    })
}

/// Creates the virtual environment and installs langchain-core unless it is already there.
fn langchain_python(root: &Path) -> Result<PathBuf> {
    let venv = root.join("target/langchain-venv");
    let python = venv.join("bin/python");
    if !python.exists() {
        eprintln!("xtask: creating {}", venv.display());
        let status = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .context("could not run `python3 -m venv`")?;
        if !status.success() {
            bail!("`python3 -m venv {}` failed with {status}", venv.display());
        }
    }
    let has_langchain = Command::new(&python)
        .args([
            "-c",
            "import langchain_core.messages.utils as u; u.count_tokens_approximately",
        ])
        .output()
        .map(|output| output.status.success())
        .unwrap_or(false);
    if !has_langchain {
        eprintln!("xtask: installing langchain-core into {}", venv.display());
        let status = Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--upgrade",
                "langchain-core",
            ])
            .status()
            .context("could not run pip")?;
        if !status.success() {
            bail!("installing langchain-core failed with {status}");
        }
    }
    Ok(python)
}

/// Reads a whole-number field from a one-line JSON object without a JSON dependency.
fn field(line: &str, name: &str) -> Result<u64> {
    let key = format!("\"{name}\":");
    let start = line
        .find(&key)
        .with_context(|| format!("no `{name}` in `{line}`"))?
        + key.len();
    let digits: String = line[start..]
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits
        .parse()
        .with_context(|| format!("`{name}` is not a number in `{line}`"))
}

fn text_field(line: &str, name: &str) -> Option<String> {
    let key = format!("\"{name}\":");
    let start = line.find(&key)? + key.len();
    let rest = line[start..].trim_start().strip_prefix('"')?;
    Some(rest[..rest.find('"')?].to_string())
}

/// Runs the external baseline comparison.
pub(crate) fn run() -> Result<()> {
    let root = workspace_root();
    let python = langchain_python(&root)?;
    let out_dir = root.join("target/window-compare");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let mut args = vec![
        "run",
        "--release",
        "--quiet",
        "-p",
        "panewise-benches",
        "--example",
        "window_compare",
        "--",
    ];
    let out = out_dir.to_string_lossy().into_owned();
    args.push(&out);
    args.extend(SIZES);
    let output = Command::new(&cargo)
        .args(&args)
        .current_dir(&root)
        .output()
        .context("could not run the Rust side of the comparison")?;
    if !output.status.success() {
        bail!(
            "the Rust side failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let script = out_dir.join("trim_messages_bench.py");
    std::fs::write(&script, LANGCHAIN_SCRIPT).context("could not write the LangChain script")?;
    println!(
        "{:>8} {:>10} {:>16} {:>16} {:>16} {:>12} {:>18} {:>12} {:>12}",
        "messages",
        "budget",
        "panewise cached",
        "panewise cold",
        "cold's floor",
        "cold/floor",
        "langchain trim",
        "ratio cached",
        "ratio cold"
    );
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let size = field(line, "size")?;
        let threshold = field(line, "threshold")?;
        let cached = field(line, "visitCachedNs")?;
        let cold = field(line, "visitColdNs")?;
        let floor = field(line, "coldFloorNs")?;
        let cold_originals = field(line, "visitColdOriginalsNs")?;
        let floor_originals = field(line, "coldFloorOriginalsNs")?;
        let path = text_field(line, "path").context("no conversation path")?;
        let langchain = Command::new(&python)
            .arg(&script)
            .arg(&path)
            .arg(threshold.to_string())
            .output()
            .context("could not run the LangChain side")?;
        if !langchain.status.success() {
            bail!(
                "the LangChain side failed: {}",
                String::from_utf8_lossy(&langchain.stderr)
            );
        }
        let langchain_line = String::from_utf8_lossy(&langchain.stdout)
            .trim()
            .to_string();
        let trim_ns = field(&langchain_line, "medianNs")?;
        let version = text_field(&langchain_line, "version").unwrap_or_default();
        println!(
            "{:>8} {:>10} {:>13.1} µs {:>13.2} ms {:>13.2} ms {:>11.2}× {:>15.2} ms {:>11.0}× {:>11.1}×",
            size,
            threshold,
            cached as f64 / 1e3,
            cold as f64 / 1e6,
            floor as f64 / 1e6,
            cold as f64 / floor.max(1) as f64,
            trim_ns as f64 / 1e6,
            trim_ns as f64 / cached.max(1) as f64,
            trim_ns as f64 / cold.max(1) as f64,
        );
        eprintln!(
            "  cold with the reader's chat-completions objects kept: {:.2} ms, floor {:.2} ms \
             ({:.2}×), ratio to langchain {:.1}×",
            cold_originals as f64 / 1e6,
            floor_originals as f64 / 1e6,
            cold_originals as f64 / floor_originals.max(1) as f64,
            trim_ns as f64 / cold_originals.max(1) as f64,
        );
        eprintln!(
            "  kept: panewise {} messages, langchain {} (langchain-core {version})",
            field(line, "kept")?,
            field(&langchain_line, "kept")?
        );
    }
    println!(
        "(medians; budget = half the conversation's approximate tokens; ratio = langchain / \
         panewise; cold = build the conversation from loaded messages, then visit; its floor = \
         one pass over every message's bytes, the exact character count alone)"
    );
    Ok(())
}
