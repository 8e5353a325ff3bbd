//! The pure half of `mcp serve`: the approval cap, the tools' arguments, what ends a wait,
//! and the definitions a client is given.

use super::*;

#[test]
fn a_delegated_agent_starts_no_freer_than_the_servers_cap() {
    // (asked, the cap, the mode it starts in, or how the refusal begins)
    let cases: [(Option<&str>, &str, Result<&str, &str>); 9] = [
        (None, "ask", Ok("ask")),
        (None, "read-only", Ok("read-only")),
        (Some("read-only"), "ask", Ok("read-only")),
        (Some("ask"), "ask", Ok("ask")),
        (
            Some("auto"),
            "ask",
            Err("approval auto is freer than this server allows"),
        ),
        (
            Some("full-access"),
            "auto",
            Err("approval full-access is freer"),
        ),
        (Some("auto"), "full-access", Ok("auto")),
        (Some("yolo"), "ask", Err("unknown approval mode \"yolo\"")),
        (None, "yolo", Err("unknown approval mode \"yolo\"")),
    ];
    for (asked, cap, expected) in cases {
        let got = capped_approval(asked, cap);
        match (&got, expected) {
            (Ok(mode), Ok(expected)) => assert_eq!(mode, expected, "{asked:?} under {cap}"),
            (Err(why), Err(begins)) => assert!(why.starts_with(begins), "{asked:?}: {why}"),
            _ => panic!("{asked:?} under {cap}: {got:?}, expected {expected:?}"),
        }
    }
}

#[test]
fn every_tool_parses_its_arguments_or_says_what_is_wrong() {
    let cases: [(&str, Value, Result<ToolArgs, &str>); 11] = [
        ("list", json!({}), Ok(ToolArgs::List)),
        (
            "wait",
            json!({"session": "a"}),
            Ok(ToolArgs::Wait {
                session: "a".to_owned(),
                until: Until::Idle,
                timeout: DEFAULT_WAIT,
            }),
        ),
        (
            "wait",
            json!({"session": "a", "until": "needs_input", "timeout_secs": 99_999}),
            Ok(ToolArgs::Wait {
                session: "a".to_owned(),
                until: Until::NeedsInput,
                timeout: MAX_WAIT,
            }),
        ),
        (
            "transcript",
            json!({"session": "a", "max_chars": 10_000_000}),
            Ok(ToolArgs::Transcript {
                session: "a".to_owned(),
                max_chars: MAX_TRANSCRIPT_CHARS,
            }),
        ),
        (
            "send",
            json!({"session": "a", "text": "go on"}),
            Ok(ToolArgs::Send {
                session: "a".to_owned(),
                text: "go on".to_owned(),
            }),
        ),
        (
            "send",
            json!({"session": "a"}),
            Err("send needs a non-empty `text`"),
        ),
        (
            "answer",
            json!({"session": "a", "text": " "}),
            Err("answer needs"),
        ),
        (
            "stop",
            json!({}),
            Err("bad arguments for stop: missing field `session`"),
        ),
        (
            "start",
            json!({"prompt": ""}),
            Err("start needs a non-empty `prompt`"),
        ),
        (
            "start",
            json!({"prompt": "x", "yolo": true}),
            Err("bad arguments for start"),
        ),
        (
            "approve",
            json!({"session": "a"}),
            Err("no tool \"approve\""),
        ),
    ];
    for (name, arguments, expected) in cases {
        let got = ToolArgs::parse(name, arguments.clone());
        match (&got, &expected) {
            (Ok(args), Ok(expected)) => assert_eq!(args, expected, "{name} {arguments}"),
            (Err(why), Err(begins)) => assert!(why.starts_with(begins), "{name}: {why}"),
            _ => panic!("{name} {arguments}: {got:?}, expected {expected:?}"),
        }
    }
}

#[test]
fn a_wait_ends_at_its_state_or_where_the_session_gets_nowhere() {
    use AgentState as S;
    // (until, the states that end it)
    let cases: [(Until, &[AgentState]); 4] = [
        (
            Until::Idle,
            &[
                S::Idle,
                S::Done,
                S::Interrupted,
                S::Failed,
                S::Stopped,
                S::Exited,
            ],
        ),
        (
            Until::NeedsInput,
            &[S::NeedsInput, S::Failed, S::Stopped, S::Exited],
        ),
        (Until::Done, &[S::Done, S::Failed, S::Stopped, S::Exited]),
        (Until::Ended, &[S::Failed, S::Stopped, S::Exited]),
    ];
    for (until, ends) in cases {
        for state in AgentState::ALL {
            assert_eq!(
                until.reached(state),
                ends.contains(&state),
                "{until:?} {state:?}"
            );
        }
    }
}

#[test]
fn the_tools_are_listed_in_order_each_with_an_object_schema_and_the_cap_said() {
    let listed = tools("auto");
    let names: Vec<&str> = listed.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(names, TOOL_NAMES);
    for tool in &listed {
        assert_eq!(
            tool.input_schema.get("type"),
            Some(&json!("object")),
            "{}",
            tool.name
        );
        assert!(tool.description.as_deref().is_some_and(|d| !d.is_empty()));
    }
    let start = &listed[0];
    assert!(start
        .description
        .as_deref()
        .is_some_and(|d| d.contains("`approval` may be at most auto")));
}

#[test]
fn a_wait_for_idle_or_done_needs_the_turn_it_was_given_to_have_completed() {
    use AgentState as S;
    // (until, the state, turns completed, turns needed, whether the wait ends)
    let cases = [
        (Until::Idle, S::Idle, 0, 1, false),
        (Until::Idle, S::Idle, 1, 1, true),
        (Until::Idle, S::Working, 1, 2, false),
        (Until::Done, S::Done, 2, 2, true),
        (Until::Done, S::Done, 1, 2, false),
        (Until::Idle, S::Failed, 0, 1, true),
        (Until::NeedsInput, S::NeedsInput, 0, 1, true),
        (Until::Ended, S::Idle, 5, 1, false),
        (Until::Ended, S::Stopped, 0, 1, true),
    ];
    for (until, state, turns, min_turns, over) in cases {
        assert_eq!(
            wait_over(until, state, turns, min_turns),
            over,
            "{until:?} {state:?} {turns}/{min_turns}"
        );
    }
}
