//! One session seen four ways: `panewise replay`, `agents`, `sessions` and the dashboard should
//! name its provider, its model and its cost alike, and as the agent reported them (issue 42).
//!
//! A session of each case runs under a daemon to its end; each view's three words are read
//! from what it prints (`replay`'s `session` and `calls` lines; `agents --json` and `sessions
//! --json`, their cost worded by `panewise_api::view::cost_text` as their tables word it; the
//! dashboard drawn from the daemon's summary on ratatui's test backend: the detail's title
//! and the row's cost column). Codex and Gemini CLI are checked the same way against the
//! published CLIs by `cargo xtask e2e` (`xtask/src/e2e_daemon.rs`). Every
//! word that differs from the truth is a difference; the differences found today are pinned in
//! [`KNOWN_DIFFERENCES`], which may only shrink: a new difference fails, and so does a listed
//! one that is gone (remove it from the list).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use panewise_api::{AgentState, CreateParams, SessionSummary};
use panewise_tui::{App, Event, Settings};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use crate::daemon::{create, until_state, Daemon};

const SESSION: &str = "7b0c3a52-0000-4000-8000-00000000f200";

/// The model the fake Claude Code reports, and the cost its result line reports.
const CLAUDE_MODEL: &str = "claude-sonnet-4-5";
const CLAUDE_COST: &str = "$0.0424";

/// A Claude Code that answers one prompt with a short text and a result line reporting its
/// model and cost, then waits for more, as Claude Code does.
fn fake_claude(dir: &Path) -> PathBuf {
    let script = format!(
        r#"#!/bin/sh
if [ "$1" = "--version" ]; then echo "2.0.0 (Claude Code)"; exit 0; fi
read -r initialize
read -r prompt
echo '{{"type":"system","subtype":"init","cwd":"/tmp","session_id":"{SESSION}","tools":["Bash"],"model":"{CLAUDE_MODEL}","permissionMode":"default"}}'
echo '{{"type":"stream_event","event":{{"type":"message_start","message":{{"id":"msg_1","type":"message","role":"assistant","model":"{CLAUDE_MODEL}","content":[],"stop_reason":null,"stop_sequence":null,"usage":{{"input_tokens":1000,"output_tokens":1}}}}}},"session_id":"{SESSION}","parent_tool_use_id":null}}'
echo '{{"type":"stream_event","event":{{"type":"content_block_start","index":0,"content_block":{{"type":"text","text":""}}}},"session_id":"{SESSION}","parent_tool_use_id":null}}'
echo '{{"type":"stream_event","event":{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"hello"}}}},"session_id":"{SESSION}","parent_tool_use_id":null}}'
echo '{{"type":"stream_event","event":{{"type":"content_block_stop","index":0}},"session_id":"{SESSION}","parent_tool_use_id":null}}'
echo '{{"type":"stream_event","event":{{"type":"message_delta","delta":{{"stop_reason":"end_turn"}},"usage":{{"output_tokens":20}}}},"session_id":"{SESSION}","parent_tool_use_id":null}}'
echo '{{"type":"result","subtype":"success","is_error":false,"duration_ms":1000,"num_turns":1,"result":"hello","session_id":"{SESSION}","total_cost_usd":0.0424,"usage":{{"input_tokens":1000,"output_tokens":20}}}}'
cat > /dev/null
"#
    );
    let path = dir.join("fake-claude");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A view's three words for one session.
#[derive(Debug)]
struct Words {
    provider: String,
    model: String,
    cost: String,
}

/// What is shown for "nothing": a view that names no model, or shows no cost.
const NONE: &str = "(none)";

/// `replay`'s words: the `session` line (`AGENT[, model MODEL][, channel STREAM]`) and the
/// cost after the `calls` line's last `; ` (the `totals` line's, when no call was reported).
fn replay_words(text: &str) -> Words {
    let value = |label: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(label))
            .map(|rest| rest.trim().to_owned())
    };
    let session = value("session").unwrap_or_default();
    let mut parts = session.split(", ");
    let provider = parts.next().unwrap_or_default().to_owned();
    let model = parts
        .find_map(|part| part.strip_prefix("model "))
        .unwrap_or(NONE)
        .to_owned();
    let cost = value("calls")
        .or_else(|| value("totals"))
        .and_then(|calls| calls.rsplit_once("; ").map(|(_, cost)| cost.to_owned()))
        .map_or(NONE.to_owned(), |cost| dollars(&cost));
    Words {
        provider,
        model,
        cost,
    }
}

/// `agents --json`'s or `sessions --json`'s words for session `id`.
fn json_words(stdout: &[u8], id: &str) -> Words {
    let text = String::from_utf8_lossy(stdout);
    let row: serde_json::Value = text
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find(|row| row["id"] == id)
        .unwrap_or_else(|| panic!("no row for {id} in {text}"));
    let cost = panewise_api::view::cost_text(
        row["cost_usd"].as_f64(),
        serde_json::from_value(row["cost_source"].clone()).unwrap(),
    );
    Words {
        provider: row["provider"].as_str().unwrap_or(NONE).to_owned(),
        model: row["model"].as_str().unwrap_or(NONE).to_owned(),
        cost: if cost == "-" {
            NONE.to_owned()
        } else {
            dollars(&cost)
        },
    }
}

/// The dashboard's words for `summary` as the daemon sent it: the detail's title
/// (` NAME · PROVIDER · STATE[ · MODEL] `) and the cost column of the session's row.
fn dashboard_words(summary: &SessionSummary) -> Words {
    let settings = Settings {
        bell: false,
        provider: "mock".to_owned(),
        model: String::new(),
        approval: "ask".to_owned(),
        cwd: String::new(),
        remote_hosts: Vec::new(),
    };
    let app = App::new(settings, summary.started_at_ms, (160, 40));
    let (app, _) = panewise_tui::update(app, Event::List(vec![summary.clone()]));
    let mut terminal = Terminal::new(TestBackend::new(160, 40)).unwrap();
    terminal
        .draw(|frame| panewise_tui::view(&app, frame))
        .unwrap();
    let buffer = terminal.backend().buffer().clone();
    let lines: Vec<String> = (0..buffer.area.height)
        .map(|y| {
            (0..buffer.area.width)
                .map(|x| buffer[(x, y)].symbol().to_owned())
                .collect()
        })
        .collect();
    let title_start = format!(" {} · ", summary.name);
    let title = lines
        .iter()
        .find_map(|line| {
            line.split_once(&title_start)
                .map(|(_, rest)| rest.to_owned())
        })
        .unwrap_or_else(|| {
            panic!(
                "no detail title for {}:\n{}",
                summary.name,
                lines.join("\n")
            )
        });
    let title = title.split("  ").next().unwrap_or_default();
    let title = title.trim_end_matches(['─', '┐', ' ']);
    let mut parts = title.split(" · ");
    let provider = parts.next().unwrap_or_default().to_owned();
    let model = parts.nth(1).unwrap_or(NONE).to_owned();
    // The list is left of the detail pane's border; the row is the one naming the session.
    let row = lines
        .iter()
        .map(|line| line.split('│').next().unwrap_or_default())
        .find(|row| !row.contains(" · ") && row.split_whitespace().any(|word| word == summary.name))
        .unwrap_or_else(|| panic!("no row for {}:\n{}", summary.name, lines.join("\n")));
    let columns: Vec<&str> = row.split_whitespace().collect();
    let cost = columns
        .len()
        .checked_sub(2)
        .and_then(|at| columns.get(at))
        .map_or(NONE.to_owned(), |cost| dollars(cost));
    Words {
        provider,
        model,
        cost,
    }
}

/// The first dollar figure of a cost text (`~$0.0424` stays marked estimated); a text with
/// none (`cost unknown …`) shows no cost.
fn dollars(cost: &str) -> String {
    cost.split_whitespace()
        .find(|word| word.trim_start_matches('~').starts_with('$'))
        .map_or_else(
            || NONE.to_owned(),
            |word| word.trim_end_matches([',', ';', ')']).to_owned(),
        )
}

/// The differences found today, as (case, view, field, what the view shows). Only shrinks.
const KNOWN_DIFFERENCES: &[(&str, &str, &str, &str)] = &[];

/// The cost a view should show.
#[derive(Debug, Clone, Copy)]
enum Cost {
    /// This figure, as the agent reported it.
    Reported(&'static str),
    /// panewise's estimate from the tokens: marked `~`, the same figure in every view.
    Estimated,
    /// None shown: the model has no price, and a cost is never guessed.
    Unpriced,
}

/// One case: the provider and model as created, and the truth each view should show.
struct Case {
    name: &'static str,
    provider: &'static str,
    /// The model asked for (`None`: the provider's default).
    asked: Option<&'static str>,
    model: &'static str,
    cost: Cost,
}

const CASES: &[Case] = &[
    Case {
        name: "claude-code",
        provider: "claude-code",
        asked: None,
        model: CLAUDE_MODEL,
        cost: Cost::Reported(CLAUDE_COST),
    },
    // panewise's own loop on the built-in mock, with its own model (no price)…
    Case {
        name: "own-loop-unpriced",
        provider: "mock",
        asked: None,
        model: "panewise-mock",
        cost: Cost::Unpriced,
    },
    // …and asking for a priced model, which the mock answers as.
    Case {
        name: "own-loop-priced",
        provider: "mock",
        asked: Some(CLAUDE_MODEL),
        model: CLAUDE_MODEL,
        cost: Cost::Estimated,
    },
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_agents_and_sessions_name_the_provider_model_and_cost_alike() {
    let fixtures = tempfile::tempdir().unwrap();
    let fake = fake_claude(fixtures.path());
    let daemon = Daemon::start_custom(None, &[], &[("PANEWISE_CLAUDE", fake.as_path())]).await;
    let client = daemon.connect("views").await;
    let cwd = daemon.dir.path().join("work");
    let mut found = Vec::new();
    for case in CASES {
        let session = create(
            &client,
            CreateParams {
                provider: Some(case.provider.to_owned()),
                model: case.asked.map(str::to_owned),
                cwd: Some(cwd.display().to_string()),
                approval: Some("full-access".to_owned()),
                name: Some(case.name.to_owned()),
                prompt: Some("say hello".to_owned()),
                ..CreateParams::default()
            },
        )
        .await;
        // A fresh session is idle before its prompt starts: wait for the turn's end.
        let ended = until_state(&client, &session.id, |s| {
            !matches!(
                s.state,
                AgentState::Idle | AgentState::Working | AgentState::NeedsInput
            )
        })
        .await;
        assert_eq!(ended.state, AgentState::Done, "{ended:?}");
        let replay = daemon.run(&["replay", &session.id]);
        assert!(replay.status.success(), "{replay:?}");
        let agents = daemon.run(&["agents", "--json"]);
        assert!(agents.status.success(), "{agents:?}");
        let sessions = daemon.run(&["sessions", "--json"]);
        assert!(sessions.status.success(), "{sessions:?}");
        let views = [
            (
                "replay",
                replay_words(&String::from_utf8_lossy(&replay.stdout)),
            ),
            ("agents", json_words(&agents.stdout, &session.id)),
            ("sessions", json_words(&sessions.stdout, &session.id)),
            ("dashboard", dashboard_words(&ended)),
        ];
        // An estimate's truth is the figure `agents` shows, if it is marked as one: the
        // other views must show the same.
        let cost = match case.cost {
            Cost::Reported(figure) => figure.to_owned(),
            Cost::Unpriced => NONE.to_owned(),
            Cost::Estimated => {
                let agents = &views[1].1.cost;
                if agents.starts_with("~$") {
                    agents.clone()
                } else {
                    format!("~$ (agents shows {agents})")
                }
            }
        };
        for (view, words) in &views {
            for (field, shown, truth) in [
                ("provider", &words.provider, case.provider),
                ("model", &words.model, case.model),
                ("cost", &words.cost, cost.as_str()),
            ] {
                if shown != truth {
                    found.push((case.name, *view, field, shown.clone()));
                }
            }
        }
    }
    let known: Vec<(&str, &str, &str, String)> = KNOWN_DIFFERENCES
        .iter()
        .map(|&(case, view, field, shown)| (case, view, field, shown.to_owned()))
        .collect();
    assert_eq!(
        found, known,
        "the views' provider, model and cost against the truth (left: found; right: \
         KNOWN_DIFFERENCES, which only shrinks)"
    );
}
