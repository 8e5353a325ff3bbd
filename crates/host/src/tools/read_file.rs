//! `read_file`: a text file's lines, all of them or a window of them (`offset` lines skipped,
//! then at most `limit`), after a header naming the resolved path and the lines shown.

use serde::Deserialize;
use serde_json::{json, Value};

use super::output::cap_text;
use super::{ToolContext, ToolOutcome};

/// The name the model calls it by.
pub const NAME: &str = "read_file";

/// What it does, for the model.
pub const DESCRIPTION: &str = "Read a text file. Relative paths are resolved against the \
working directory. Optionally skip `offset` lines and show at most `limit` lines. The result \
starts with a header line naming the file and the lines shown; long results are cut with a \
note.";

/// The arguments.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The file.
    pub path: String,
    /// Lines skipped before the first one shown (default 0).
    #[serde(default)]
    pub offset: Option<u64>,
    /// The most lines shown (default: all).
    #[serde(default)]
    pub limit: Option<u64>,
}

/// The JSON schema of [`Args`].
pub fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "The file to read."},
            "offset": {"type": "integer", "minimum": 0,
                       "description": "Lines to skip before the first line shown (default 0)."},
            "limit": {"type": "integer", "minimum": 1,
                      "description": "The most lines to show (default: all)."}
        },
        "required": ["path"],
        "additionalProperties": false
    })
}

/// Reads the file.
pub async fn run(args: &Args, context: &ToolContext) -> ToolOutcome {
    let path = context.resolve(&args.path);
    let shown = path.display();
    if args.limit == Some(0) {
        return ToolOutcome::error(format!("{NAME}: `limit` must be at least 1")).at(&path);
    }
    let bytes = match tokio::fs::read(&path).await {
        Ok(bytes) => bytes,
        Err(error) => return ToolOutcome::error(format!("cannot read {shown}: {error}")).at(&path),
    };
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let total = lines.len();
    let skip = usize::try_from(args.offset.unwrap_or(0)).unwrap_or(usize::MAX);
    if skip > 0 && skip >= total {
        return ToolOutcome::error(format!(
            "offset {skip} is past the end of {shown}, which has {total} {}",
            plural(total, "line")
        ))
        .at(&path);
    }
    let take = args.limit.map_or(usize::MAX, |limit| {
        usize::try_from(limit).unwrap_or(usize::MAX)
    });
    let window: String = lines.iter().skip(skip).take(take).copied().collect();
    let shown_count = total.saturating_sub(skip).min(take);
    let header = if total == 0 {
        format!("{shown} (empty file)\n")
    } else {
        format!(
            "{shown} (lines {}-{} of {total})\n",
            skip.saturating_add(1),
            skip.saturating_add(shown_count)
        )
    };
    let body = cap_text(&window, context.limits.output_bytes);
    ToolOutcome::ok(format!("{header}{body}")).at(&path)
}

pub(crate) fn plural(count: usize, word: &str) -> String {
    if count == 1 {
        word.to_owned()
    } else {
        format!("{word}s")
    }
}
