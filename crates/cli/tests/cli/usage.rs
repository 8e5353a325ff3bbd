//! The command line itself: `--help` lists the subcommands there are, and a flag's value that
//! is not one of its choices is a usage error (exit 2) naming the choices; a name that is
//! neither a file nor a recorded session says where ids are looked for.

use crate::run_own_loop::{stderr, Machine};

#[test]
fn the_top_level_help_lists_every_subcommand() {
    let output = Machine::new().run(&["--help"]);
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    let listed: Vec<&str> = help
        .lines()
        .skip_while(|line| !line.starts_with("Commands:"))
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert_eq!(
        listed,
        [
            "run",
            "ui",
            "web",
            "new",
            "agents",
            "attach",
            "send",
            "approve",
            "deny",
            "answer",
            "interrupt",
            "budget",
            "stop",
            "rm",
            "wait",
            "resume",
            "daemon",
            "replay",
            "sessions",
            "decode",
            "window",
            "mock-server",
            "sandbox",
            "mcp",
            "help"
        ],
        "{help}"
    );
}

#[test]
fn a_value_that_is_not_one_of_the_choices_is_a_usage_error_naming_them() {
    let machine = Machine::new();
    let file = machine.path("project/not-a-dir");
    std::fs::write(&file, "").unwrap();
    let file = file.to_str().unwrap();
    let cases: [(&[&str], &[&str]); 11] = [
        (
            &["run", "--provider", "mock-llm", "hi"],
            &["mock-llm", "mock", "anthropic", "claude-code", "gemini-cli"],
        ),
        (
            &["decode", "--provider", "claude", "-"],
            &["claude", "claude-code", "codex", "gemini-cli", "acp"],
        ),
        (
            &["run", "--provider", "codex", "--channel", "pipe", "hi"],
            &["pipe", "app-server", "exec", "stream-json"],
        ),
        (
            &[
                "run",
                "--provider",
                "codex",
                "--channel",
                "stream-json",
                "hi",
            ],
            &["--channel stream-json", "app-server (default) or exec"],
        ),
        (
            &["mock-server", "--scenario", "rate-limited"],
            &["rate-limited", "rate-limit", "tool-then-answer"],
        ),
        (
            &["run", "--max-iterations", "0", "hi"],
            &["0", "--max-iterations"],
        ),
        (
            &["run", "--cwd", file, "hi"],
            &["not-a-dir", "not a directory"],
        ),
        (&["run", "--bogus", "hi"], &["--bogus"]),
        // Refused before any daemon is asked (and started): as `run` refuses it.
        (
            &["new", "--provider", "foo", "hi"],
            &["foo", "mock", "claude-code", "acp"],
        ),
        (&["new", "  "], &["the prompt is empty"]),
        (&["send", "some-agent", ""], &["the prompt is empty"]),
    ];
    for (args, named) in cases {
        let output = machine.run(args);
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {err}");
        for name in named {
            assert!(err.contains(name), "{args:?}: `{name}` not in {err}");
        }
    }
}

#[test]
fn an_unknown_session_id_says_where_ids_are_looked_for() {
    let machine = Machine::new();
    let sessions = machine.path("data/panewise/sessions");
    for args in [
        ["replay", "0190-no-such-id"].as_slice(),
        ["run", "--resume", "0190-no-such-id", "hi"].as_slice(),
    ] {
        let output = machine.run(args);
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(3), "{args:?}: {err}");
        let expected = format!(
            "no session with the id, prefix or name 0190-no-such-id in {} (see `panewise sessions`)",
            sessions.display()
        );
        assert!(err.contains(&expected), "{args:?}: {err}");
        assert!(!err.contains("No such file"), "{args:?}: {err}");
    }
}
