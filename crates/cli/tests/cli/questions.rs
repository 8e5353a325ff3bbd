//! Questions end to end: the own loop's `ask_user` (the mock's `ask-user` scenario) asked in a
//! daemon session, shown by the dashboard in tmux and answered there with a choice's key,
//! answered with `panewise answer` in free text, and by the API's `session/answer`; each
//! answer reaches the model as the call's result (the mock quotes it in its final answer,
//! which the session's transcript holds).

use std::path::Path;

use crate::run_terminal::Terminal;
use crate::ui_terminal::Home;

/// Every session log's text under the data directory, concatenated.
fn logs_text(dir: &Path) -> String {
    let mut text = String::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return text;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            text.push_str(&logs_text(&path));
        } else if path.extension().is_some_and(|ext| ext == "jsonl") {
            text.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
        }
    }
    text
}

/// The `agents --json` line of `name`.
fn agent(home: &Home, name: &str) -> serde_json::Value {
    let output = home.panewise(&["agents", "--json"]);
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|value| value["name"] == name)
        .unwrap_or_default()
}

#[test]
fn ask_user_is_answered_from_the_dashboard_and_panewise_answer_and_reaches_the_model() {
    let home = Home::new();
    for name in ["picker", "replier"] {
        let output = home.panewise(&[
            "new",
            "--name",
            name,
            "--mock-scenario",
            "ask-user",
            "make the button, asking me its colour",
        ]);
        assert!(output.status.success(), "{name}: {output:?}");
        home.until_state(name, "needs_input");
    }
    // Every client sees a question, not an approval.
    let waiting = &agent(&home, "replier")["waiting_for"];
    assert_eq!(waiting["kind"], "question", "{waiting}");
    assert_eq!(
        waiting["questions"][0], "Which colour should the button be? [1] red [2] blue",
        "{waiting}"
    );
    // An approval's answer is refused for a question.
    let refused = home.panewise(&["approve", "replier"]);
    assert!(!refused.status.success(), "{refused:?}");
    // Free text, from the command line.
    let answered = home.panewise(&["answer", "replier", "green, please"]);
    assert!(answered.status.success(), "{answered:?}");
    home.until_state("replier", "done");
    // A choice, from the dashboard: the key `2` picks blue.
    let script = home.path("ui.sh");
    std::fs::write(
        &script,
        format!(
            "cd '{work}'\nexport XDG_RUNTIME_DIR='{run}' XDG_DATA_HOME='{data}' \
             XDG_CONFIG_HOME='{config}' HOME='{home}'\nunset PANEWISE_LOG\n\
             '{panewise}' ui\necho $? > '{work}/first'\nsleep 60\n",
            work = home.path("work").display(),
            run = home.path("run").display(),
            data = home.path("data").display(),
            config = home.path("config").display(),
            home = home.path("home").display(),
            panewise = env!("CARGO_BIN_EXE_panewise"),
        ),
    )
    .unwrap();
    let terminal = Terminal::start(&script, "ui");
    let screen = terminal.wait_for("1-9 picks a choice · r replies");
    assert!(screen.contains("picker · mock · needs_input"), "{screen}");
    assert!(
        screen.contains("Which colour should the button be? [1] red [2] blue"),
        "{screen}"
    );
    terminal.keys(&["2"]);
    home.until_state("picker", "done");
    terminal.keys(&["q"]);
    assert_eq!(terminal.wait_for_line(&home.path("work/first")), "0\n");
    // Each answer reached the model as the call's result, and who answered is recorded.
    let logs = logs_text(&home.path("data"));
    for quoted in [
        "ASK-USER-ANSWER: The person answered: blue",
        "ASK-USER-ANSWER: The person answered: green, please",
    ] {
        assert!(logs.contains(quoted), "{quoted} missing from the logs");
    }
    assert!(logs.contains("\"question_answered\""), "no answer recorded");
    assert!(!logs.contains("ASK-USER-UNANSWERED"), "an answer was lost");
}
