//! The own tools against a temporary directory.

use std::time::{Duration, Instant};

use panewise_host::tools::{self, ToolContext, ToolLimits, ToolName, ToolOutcome};
use serde_json::{json, Value};

use crate::write;

fn context(dir: &tempfile::TempDir) -> ToolContext {
    ToolContext::new(dir.path())
}

async fn call(context: &ToolContext, tool: &str, arguments: Value) -> ToolOutcome {
    tools::run_json(tool, &arguments, context).await
}

#[tokio::test]
async fn shell_reports_exit_codes_and_both_streams() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().display().to_string();
    // (command, exit code, is_error, the whole content)
    let cases: Vec<(&str, i32, bool, String)> = vec![
        ("echo hi", 0, false, "hi\n[exit code 0]".into()),
        ("exit 3", 3, true, "[exit code 3]".into()),
        (
            "echo out; echo err >&2; exit 1",
            1,
            true,
            "out\nerr\n[exit code 1]".into(),
        ),
        ("pwd", 0, false, format!("{cwd}\n[exit code 0]")),
        (
            "printf 'no newline'",
            0,
            false,
            "no newline\n[exit code 0]".into(),
        ),
    ];
    for (command, code, is_error, content) in cases {
        let outcome = call(&context(&dir), "shell", json!({ "command": command })).await;
        assert_eq!(outcome.exit_code, Some(code), "{command}: {outcome:?}");
        assert_eq!(outcome.is_error, is_error, "{command}");
        assert!(!outcome.timed_out, "{command}");
        assert_eq!(outcome.content, content, "{command}");
    }
}

#[tokio::test]
async fn shell_timeout_kills_the_command_and_reports_it() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let outcome = call(
        &context(&dir),
        "shell",
        // Time for `sh` to start and print on a loaded machine, far short of the sleep.
        json!({ "command": "echo started; sleep 30", "timeout_ms": 3_000 }),
    )
    .await;
    assert!(outcome.timed_out, "{outcome:?}");
    assert!(outcome.is_error);
    assert_eq!(outcome.exit_code, None);
    assert_eq!(
        outcome.content,
        "started\n[timed out after 3000 ms; the command's process group was killed]"
    );
    // Loose: it returned well before the sleep would have ended.
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

/// True once `pid` is gone or a zombie (killed, waiting for a reaper that may never come in a
/// container).
fn process_ended(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

#[tokio::test]
async fn what_a_command_leaves_running_is_killed_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = call(
        &context(&dir),
        "shell",
        json!({ "command": "sleep 30 > /dev/null 2>&1 & echo $!" }),
    )
    .await;
    assert_eq!(outcome.exit_code, Some(0), "{outcome:?}");
    let pid: i32 = outcome.content.lines().next().unwrap().parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(3);
    while !process_ended(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(process_ended(pid), "the background sleep {pid} still runs");
}

#[tokio::test]
async fn long_output_is_cut_with_a_note_of_bytes_and_lines() {
    let dir = tempfile::tempdir().unwrap();
    let mut context = context(&dir);
    context.limits = ToolLimits {
        output_bytes: 100,
        ..ToolLimits::default()
    };
    // `seq 1 1000` writes 3893 bytes; the first 100 end inside "37\n".
    let outcome = call(&context, "shell", json!({ "command": "seq 1 1000" })).await;
    assert_eq!(outcome.exit_code, Some(0));
    assert!(
        outcome.content.ends_with(
            "36\n3\n[output cut: 3793 more bytes (964 lines) not shown; the cap is 100 bytes]\n\
             [exit code 0]"
        ),
        "{}",
        outcome.content
    );
    write(dir.path(), "big.txt", &"0123456789\n".repeat(20));
    let outcome = call(&context, "read_file", json!({ "path": "big.txt" })).await;
    assert!(
        outcome
            .content
            .ends_with("[output cut: 120 more bytes (11 lines) not shown; the cap is 100 bytes]"),
        "{}",
        outcome.content
    );
}

#[tokio::test]
async fn edit_file_replaces_exactly_or_says_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.txt");
    let shown = path.display().to_string();
    // (file before, arguments besides the path, is_error, message, file after)
    let cases: Vec<(&str, Value, bool, String, &str)> = vec![
        (
            "a b c",
            json!({"old_string": "b", "new_string": "B"}),
            false,
            format!("replaced 1 occurrence in {shown}"),
            "a B c",
        ),
        (
            "a b c",
            json!({"old_string": "x", "new_string": "y"}),
            true,
            format!("`old_string` was not found in {shown}"),
            "a b c",
        ),
        (
            "b b b",
            json!({"old_string": "b", "new_string": "B"}),
            true,
            format!(
                "`old_string` was found 3 times in {shown}; give more surrounding text to make \
                 it unique, or pass `replace_all`"
            ),
            "b b b",
        ),
        (
            "b b b",
            json!({"old_string": "b", "new_string": "B", "replace_all": true}),
            false,
            format!("replaced 3 occurrences in {shown}"),
            "B B B",
        ),
        (
            "a",
            json!({"old_string": "", "new_string": "B"}),
            true,
            "edit_file: `old_string` is empty".into(),
            "a",
        ),
        (
            "a",
            json!({"old_string": "a", "new_string": "a"}),
            true,
            "edit_file: `old_string` and `new_string` are the same; nothing would change".into(),
            "a",
        ),
    ];
    for (before, mut arguments, is_error, message, after) in cases {
        std::fs::write(&path, before).unwrap();
        arguments["path"] = json!("f.txt");
        let outcome = call(&context(&dir), "edit_file", arguments.clone()).await;
        assert_eq!(
            (outcome.is_error, outcome.content.as_str()),
            (is_error, message.as_str()),
            "{arguments}"
        );
        assert_eq!(outcome.path.as_deref(), Some(path.as_path()));
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            after,
            "{arguments}"
        );
    }
    let missing = call(
        &context(&dir),
        "edit_file",
        json!({"path": "nope.txt", "old_string": "a", "new_string": "b"}),
    )
    .await;
    assert!(missing.is_error);
    assert!(
        missing.content.starts_with("cannot read "),
        "{}",
        missing.content
    );
}

#[tokio::test]
async fn read_file_shows_the_asked_lines_after_a_header() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "f.txt", "one\ntwo\nthree\nfour\n");
    write(dir.path(), "empty.txt", "");
    let shown = dir.path().join("f.txt").display().to_string();
    // (arguments, is_error, content)
    let cases: Vec<(Value, bool, String)> = vec![
        (
            json!({"path": "f.txt"}),
            false,
            format!("{shown} (lines 1-4 of 4)\none\ntwo\nthree\nfour\n"),
        ),
        (
            json!({"path": "f.txt", "offset": 1, "limit": 2}),
            false,
            format!("{shown} (lines 2-3 of 4)\ntwo\nthree\n"),
        ),
        (
            json!({"path": "./sub/../f.txt", "offset": 3}),
            false,
            format!("{shown} (lines 4-4 of 4)\nfour\n"),
        ),
        (
            json!({"path": "f.txt", "limit": 10}),
            false,
            format!("{shown} (lines 1-4 of 4)\none\ntwo\nthree\nfour\n"),
        ),
        (
            json!({"path": "f.txt", "offset": 4}),
            true,
            format!("offset 4 is past the end of {shown}, which has 4 lines"),
        ),
        (
            json!({"path": "f.txt", "limit": 0}),
            true,
            "read_file: `limit` must be at least 1".into(),
        ),
        (
            json!({"path": "empty.txt"}),
            false,
            format!("{} (empty file)\n", dir.path().join("empty.txt").display()),
        ),
    ];
    for (arguments, is_error, content) in cases {
        let outcome = call(&context(&dir), "read_file", arguments.clone()).await;
        assert_eq!(
            (outcome.is_error, outcome.content.as_str()),
            (is_error, content.as_str()),
            "{arguments}"
        );
    }
}

#[tokio::test]
async fn write_file_creates_parent_directories_and_names_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = call(
        &context(&dir),
        "write_file",
        json!({"path": "a/b/c.txt", "content": "hello\nworld\n"}),
    )
    .await;
    let path = dir.path().join("a/b/c.txt");
    assert!(!outcome.is_error, "{outcome:?}");
    assert_eq!(
        outcome.content,
        format!("wrote 12 bytes (2 lines) to {}", path.display())
    );
    assert_eq!(outcome.path.as_deref(), Some(path.as_path()));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello\nworld\n");
}

#[tokio::test]
async fn list_dir_is_sorted_with_directories_marked() {
    let dir = tempfile::tempdir().unwrap();
    for file in ["b.txt", "a/inner.txt", "c/d/e.txt", "Z"] {
        write(dir.path(), file, "");
    }
    std::os::unix::fs::symlink(dir.path().join("c"), dir.path().join("link")).unwrap();
    let shown = dir.path().display().to_string();
    let expected = format!("{shown} (5 entries)\nZ\na/\nb.txt\nc/\nlink/\n");
    for arguments in [json!({}), json!({"path": "."}), json!({"path": shown})] {
        let outcome = call(&context(&dir), "list_dir", arguments.clone()).await;
        assert_eq!(outcome.content, expected, "{arguments}");
    }
    let missing = call(&context(&dir), "list_dir", json!({"path": "nope"})).await;
    assert!(missing.is_error);
    assert!(
        missing.content.starts_with("cannot list "),
        "{}",
        missing.content
    );
}

#[tokio::test]
async fn bad_arguments_are_error_results_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    // (tool, arguments, the error's content)
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "rm_rf",
            json!({}),
            "unknown tool `rm_rf`; the tools are shell, read_file, write_file, edit_file, list_dir, ask_user, recall",
        ),
        (
            "edit_file",
            json!({"path": "f", "new_string": "x"}),
            "bad arguments for `edit_file`: missing field `old_string`",
        ),
        (
            "read_file",
            json!({"path": "f", "offset": "two"}),
            "bad arguments for `read_file`: invalid type: string \"two\", expected u64",
        ),
        (
            "read_file",
            json!({"path": "f", "offset": -1}),
            "bad arguments for `read_file`: invalid value: integer `-1`, expected u64",
        ),
        (
            "list_dir",
            json!({"dir": "."}),
            "bad arguments for `list_dir`: unknown field `dir`, expected `path`",
        ),
        (
            "shell",
            json!(["ls"]),
            "bad arguments for `shell`: the arguments must be a JSON object",
        ),
        (
            "shell",
            json!("{not json"),
            "bad arguments for `shell`: the arguments are not JSON: key must be a string at line 1 column 2",
        ),
        ("shell", json!({"command": "  "}), "shell: `command` is empty"),
        (
            "shell",
            json!({"command": "true", "timeout_ms": 0}),
            "shell: `timeout_ms` must be at least 1",
        ),
        (
            "recall",
            json!({"span": "sp-0123456789ab"}),
            "bad arguments for `recall`: unknown field `span`, expected `id` or `query`",
        ),
        (
            "ask_user",
            json!({"choices": ["a"]}),
            "bad arguments for `ask_user`: missing field `question`",
        ),
        // Only a loop with a person to ask answers `ask_user`.
        (
            "ask_user",
            json!({"question": "Which?"}),
            "ask_user: this context has nobody to ask; panewise's own loop puts the question \
             to the person",
        ),
        // A tool context has no session archive: the own loop answers `recall` from its own.
        (
            "recall",
            json!({"id": "sp-0123456789ab"}),
            "recall: this context has no session archive; panewise's own loop answers it from \
             the archive its context window keeps",
        ),
    ];
    for (tool, arguments, content) in cases {
        let outcome = call(&context(&dir), tool, arguments.clone()).await;
        assert!(outcome.is_error, "{tool} {arguments}");
        assert_eq!(outcome.content, content, "{tool} {arguments}");
    }
    // Arguments sent as a string holding JSON (as the OpenAI API does) parse like an object.
    let outcome = call(&context(&dir), "shell", json!("{\"command\": \"echo ok\"}")).await;
    assert_eq!(outcome.content, "ok\n[exit code 0]");
}

/// Every tool's schema is an object schema whose required keys are properties, and a call
/// with only those keys parses.
#[test]
fn every_schema_describes_what_the_parser_takes() {
    let definitions = tools::definitions();
    let names: Vec<&str> = definitions
        .iter()
        .map(|definition| definition.name)
        .collect();
    assert_eq!(names, ToolName::ALL.map(ToolName::as_str));
    for definition in definitions {
        let schema = &definition.parameters;
        assert_eq!(schema["type"], "object", "{}", definition.name);
        assert_eq!(schema["additionalProperties"], false, "{}", definition.name);
        let properties = schema["properties"].as_object().unwrap();
        let mut minimal = serde_json::Map::new();
        for required in schema["required"].as_array().into_iter().flatten() {
            let key = required.as_str().unwrap();
            assert!(properties.contains_key(key), "{}: {key}", definition.name);
            minimal.insert(key.to_owned(), json!("x"));
        }
        let parsed = tools::ToolCall::parse(definition.name, &Value::Object(minimal));
        assert_eq!(
            parsed.map(|call| call.tool().as_str()),
            Ok(definition.name),
            "{}",
            definition.name
        );
        assert!(!definition.description.is_empty());
    }
}

/// Runs `future` with a generous guard, so a tool that blocks fails the test instead of
/// hanging it.
async fn within_a_minute<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), future)
        .await
        .expect("the tool did not return")
}

#[tokio::test]
async fn read_file_refuses_what_is_not_a_regular_file_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::os::unix::fs::symlink("fifo", dir.path().join("to-fifo")).unwrap();
    let socket = dir.path().join("socket");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    // (path, what it is)
    let cases = [
        (fifo.display().to_string(), "a FIFO", fifo.clone()),
        ("to-fifo".to_owned(), "a FIFO", dir.path().join("to-fifo")),
        (
            "/dev/zero".to_owned(),
            "a character device",
            "/dev/zero".into(),
        ),
        ("sub".to_owned(), "a directory", dir.path().join("sub")),
        ("socket".to_owned(), "a socket", socket.clone()),
    ];
    // `/dev` is reachable in `full-access` only: the type check is the one tested here.
    let mut full_access = context(&dir);
    full_access.reach_system = true;
    for (path, kind, shown) in cases {
        let outcome =
            within_a_minute(call(&full_access, "read_file", json!({ "path": path }))).await;
        assert!(outcome.is_error, "{path}: {outcome:?}");
        assert_eq!(
            outcome.content,
            format!(
                "{} is {kind}, not a regular file; read_file reads regular files only",
                shown.display()
            ),
            "{path}"
        );
    }
}

#[tokio::test]
async fn read_file_reads_no_more_than_its_cap_and_only_the_lines_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let mut context = context(&dir);
    context.limits.read_bytes = 1000;
    // 1000 lines of 10 bytes: 10,000 bytes, ten times the cap.
    let text: String = (0..1000).map(|line| format!("line {line:04}\n")).collect();
    write(dir.path(), "big.txt", &text);
    let shown = dir.path().join("big.txt").display().to_string();
    let note = "read_file stopped at its read cap of 1000 bytes, the file has 10000 bytes; read \
                the rest with `shell` (`tail`, `sed -n`)";
    // (arguments, is_error, content)
    let cases: Vec<(Value, bool, String)> = vec![
        (
            json!({"path": "big.txt", "offset": 2, "limit": 2}),
            false,
            format!("{shown} (lines 3-4 of at least 100; {note})\nline 0002\nline 0003\n"),
        ),
        (
            json!({"path": "big.txt", "offset": 99}),
            false,
            format!("{shown} (lines 100-100 of at least 100; {note})\nline 0099\n"),
        ),
        (
            json!({"path": "big.txt", "offset": 500}),
            true,
            format!(
                "offset 500 is past what read_file reads of {shown}: it stops at its read cap \
                 of 1000 bytes (100 lines), and the file has 10000 bytes; read the rest with \
                 `shell` (`tail`, `sed -n`)"
            ),
        ),
    ];
    for (arguments, is_error, content) in cases {
        let outcome = call(&context, "read_file", arguments.clone()).await;
        assert_eq!(
            (outcome.is_error, outcome.content.as_str()),
            (is_error, content.as_str()),
            "{arguments}"
        );
    }
    // A sparse file of 64 GiB with the default limits: read up to the cap, shown up to the
    // output cap, and back at once.
    let huge = std::fs::File::create(dir.path().join("huge")).unwrap();
    huge.set_len(64 << 30).unwrap();
    let outcome = within_a_minute(call(
        &ToolContext::new(dir.path()),
        "read_file",
        json!({"path": "huge"}),
    ))
    .await;
    assert!(!outcome.is_error, "{outcome:?}");
    assert!(
        outcome.content.contains(
            "(lines 1-1 of at least 1; read_file stopped at its read cap of 8388608 bytes"
        ),
        "{}",
        &outcome.content[..300]
    );
    assert!(
        outcome.content.ends_with(
            "[output cut: 8358608 more bytes (1 line) not shown; the cap is 30000 bytes]"
        ),
        "{}",
        &outcome.content[outcome.content.len() - 200..]
    );
}

#[tokio::test]
async fn writes_through_symlinks_inside_land_on_the_real_file_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = std::fs::canonicalize(dir.path()).unwrap();
    write(&cwd, "real/file.txt", "old text");
    std::os::unix::fs::symlink("real", cwd.join("alias")).unwrap();
    std::os::unix::fs::symlink("real/file.txt", cwd.join("link.txt")).unwrap();
    let context = ToolContext::new(&cwd);
    let outcome = call(
        &context,
        "write_file",
        json!({"path": "link.txt", "content": "new text"}),
    )
    .await;
    assert_eq!(
        outcome.content,
        format!(
            "wrote 8 bytes (1 line) to {} (through a symlink: {})",
            cwd.join("link.txt").display(),
            cwd.join("real/file.txt").display()
        )
    );
    let outcome = call(
        &context,
        "edit_file",
        json!({"path": "alias/file.txt", "old_string": "new", "new_string": "edited"}),
    )
    .await;
    assert_eq!(
        outcome.content,
        format!(
            "replaced 1 occurrence in {} (through a symlink: {})",
            cwd.join("alias/file.txt").display(),
            cwd.join("real/file.txt").display()
        )
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("real/file.txt")).unwrap(),
        "edited text"
    );
    // The links are still links.
    assert!(std::fs::symlink_metadata(cwd.join("link.txt"))
        .unwrap()
        .file_type()
        .is_symlink());
}

/// The keys planted in this test process's environment: `shell` must not show them.
const PLANTED: [(&str, &str); 4] = [
    ("ANTHROPIC_API_KEY", "sk-planted-anthropic"),
    ("OPENAI_API_KEY", "sk-planted-openai"),
    ("GEMINI_API_KEY", "sk-planted-gemini"),
    ("PANEWISE_TEST_CONFIGURED_KEY", "sk-planted-configured"),
];

#[tokio::test]
async fn shell_commands_never_see_an_api_key_unless_pass_env_names_it() {
    // No other test of this binary reads these variables.
    for (name, value) in PLANTED {
        std::env::set_var(name, value);
    }
    std::env::set_var("PANEWISE_TEST_PLAIN", "plain-value");
    let dir = tempfile::tempdir().unwrap();
    let env = |context: ToolContext| async move {
        call(&context, "shell", json!({"command": "env"}))
            .await
            .content
    };
    // The default context: every known key withheld; the rest of the environment passes.
    let shown = env(context(&dir)).await;
    for (name, value) in &PLANTED[..3] {
        assert!(!shown.contains(value), "{name}: {shown}");
    }
    assert!(shown.contains("PANEWISE_TEST_PLAIN=plain-value"), "{shown}");
    // A variable is withheld as a key only once the configuration names it as one.
    assert!(
        shown.contains("PANEWISE_TEST_CONFIGURED_KEY=sk-planted-configured"),
        "{shown}"
    );
    // A configured key variable is withheld too; `pass_env` (user file) keeps one key.
    let config = panewise_host::config::Config::parse(
        "pass_env = [\"GEMINI_API_KEY\"]\n\
         [providers.openai]\napi_key_env = \"PANEWISE_TEST_CONFIGURED_KEY\"\n",
        std::path::Path::new("panewise.toml"),
    )
    .unwrap();
    let mut configured = context(&dir);
    configured.env_remove = panewise_host::secrets::EnvPolicy::from_config(&config).tool_removals();
    let shown = env(configured).await;
    assert!(
        shown.contains("GEMINI_API_KEY=sk-planted-gemini"),
        "{shown}"
    );
    for (name, value) in PLANTED.iter().filter(|(name, _)| *name != "GEMINI_API_KEY") {
        assert!(!shown.contains(value), "{name}: {shown}");
    }
}

/// The file tools run on their own (no approval asked first) still refuse `/proc`, `/sys` and
/// `/dev`, through a symlink in the working directory too; a context that may reach them
/// (`full-access`) reads them.
#[tokio::test]
async fn file_tools_refuse_the_kernels_file_systems_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/proc/self/environ", dir.path().join("env-link")).unwrap();
    let refused = context(&dir);
    let cases = [
        ("read_file", json!({"path": "/proc/self/environ"})),
        ("read_file", json!({"path": "env-link"})),
        ("read_file", json!({"path": "/dev/fd/0"})),
        ("list_dir", json!({"path": "/sys"})),
        (
            "write_file",
            json!({"path": "/dev/shm/panewise-test", "content": "x"}),
        ),
        (
            "edit_file",
            json!({"path": "/proc/self/comm", "old_string": "a", "new_string": "b"}),
        ),
    ];
    for (tool, arguments) in &cases {
        let outcome = call(&refused, tool, arguments.clone()).await;
        assert!(outcome.is_error, "{tool} {arguments}: {}", outcome.content);
        assert!(
            outcome.content.contains(&format!("{tool} refuses"))
                && outcome.content.contains("full-access"),
            "{tool} {arguments}: {}",
            outcome.content
        );
    }
    let mut allowed = context(&dir);
    allowed.reach_system = true;
    let outcome = call(&allowed, "read_file", json!({"path": "/proc/self/comm"})).await;
    assert!(!outcome.is_error, "{}", outcome.content);
}
