//! No file stalls anything: `session/resume` of a FIFO, of `/dev/zero` and of a 1 GiB
//! (sparse) file is refused with a reason while another client's `session/list` keeps being
//! answered, and `replay`, `run --resume`, `window eval`, `resume` and a lookup by name with
//! a FIFO among the sessions end with an error instead of waiting on it; and a user file that
//! does not read stops neither `agents` nor `approve`.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use panewise_api::{Empty, ErrorCode, ListResult, Method, ResumeParams};

use crate::daemon::Daemon;

/// The longest a `session/list` may take while a resume reads: a generous bound for a loaded
/// test machine (an answer took a few ms when measured); before the fix a FIFO held it forever.
const LIST_BOUND: Duration = Duration::from_secs(1);

/// How long a command may take before it counts as hung.
const HANG: Duration = Duration::from_secs(60);

fn fifo(at: &Path) {
    nix::unistd::mkfifo(at, nix::sys::stat::Mode::S_IRWXU).unwrap();
}

/// `command` run to its end, killed (and the test failed) if it takes [`HANG`].
fn bounded(mut command: Command, what: &str) -> Output {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + HANG;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("{what} hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_a_fifo_a_device_or_a_huge_file_is_refused_while_list_is_answered() {
    let daemon = Daemon::start().await;
    let pipe = daemon.dir.path().join("pipe.jsonl");
    fifo(&pipe);
    let huge = daemon.dir.path().join("huge.jsonl");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let lister = daemon.connect("lister").await;
    let mut slowest = Duration::ZERO;
    for (path, reason) in [
        (pipe.as_path(), "is a named pipe (FIFO), not a regular file"),
        (Path::new("/dev/zero"), "is a character device"),
        (huge.as_path(), "over the 536870912-byte cap"),
    ] {
        let resumer = daemon.connect("resumer").await;
        let params = ResumeParams {
            session: path.display().to_string(),
            prompt: None,
            client: None,
        };
        let resume = tokio::spawn(async move {
            resumer
                .call::<_, panewise_api::CreateResult>(Method::Resume, params)
                .await
        });
        // The other client is answered all the while the resume is read, and after it.
        let mut lists = 0;
        loop {
            let finished = resume.is_finished();
            let asked = Instant::now();
            let listed: ListResult = lister.call(Method::List, Empty {}).await.unwrap();
            let took = asked.elapsed();
            assert!(listed.sessions.is_empty());
            slowest = slowest.max(took);
            lists += 1;
            if finished {
                break;
            }
        }
        let refused = tokio::time::timeout(HANG, resume)
            .await
            .expect("the resume is answered")
            .unwrap()
            .unwrap_err();
        assert_eq!(refused.code(), Some(ErrorCode::CannotResume), "{refused}");
        assert!(refused.to_string().contains(reason), "{path:?}: {refused}");
        assert!(lists >= 1);
    }
    eprintln!("slowest session/list during a resume: {slowest:?}");
    assert!(slowest < LIST_BOUND, "session/list took {slowest:?}");
}

#[test]
fn replay_run_resume_window_eval_and_a_lookup_by_name_end_with_an_error_on_a_fifo() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("data/panewise/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    std::fs::create_dir_all(dir.path().join("home")).unwrap();
    let id = "0190b0b0-0000-7000-8000-00000000f1f0";
    let pipe = sessions.join(format!("{id}.jsonl"));
    fifo(&pipe);
    let pipe_text = pipe.display().to_string();
    let cases: [(&[&str], &str); 6] = [
        // By its id's prefix: the lookup passes the FIFO's header over, then refuses it.
        (&["replay", &id[..13]], "named pipe"),
        (&["replay", &pipe_text], "named pipe"),
        // A name nothing has: the lookup reads every log's header but the FIFO's.
        (
            &["replay", "no-such-name"],
            "no session with the id, prefix or name",
        ),
        (&["run", "--resume", &pipe_text, "go on"], "named pipe"),
        (&["run", "--resume", &id[..13], "go on"], "named pipe"),
        (&["window", "eval", &pipe_text], "named pipe"),
    ];
    for (args, said) in cases {
        let mut command = Command::new(env!("CARGO_BIN_EXE_panewise"));
        command
            .args(args)
            .current_dir(dir.path())
            .env("HOME", dir.path().join("home"))
            .env("XDG_DATA_HOME", dir.path().join("data"))
            .env("XDG_RUNTIME_DIR", dir.path().join("run"))
            .env("XDG_CONFIG_HOME", dir.path().join("config"))
            .env_remove("PANEWISE_LOG");
        let out = bounded(command, &args.join(" "));
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.status.success(), "{args:?}: {text}");
        assert!(text.contains(said), "{args:?}: {text}");
    }
}

/// A user file broken while agents run (a typo mid-edit) keeps nobody from seeing or answering
/// them: `agents` and `approve` say what does not read and go on; a daemon started with the
/// broken file starts too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_file_that_does_not_read_stops_neither_agents_nor_approve() {
    let daemon = Daemon::start_with(Some("[notify]\ndesktop = false\n")).await;
    let created = daemon.run(&["new", "--name", "typo", "--approval", "ask", "run the tool"]);
    assert!(created.status.success(), "{created:?}");
    let watcher = daemon.connect("watcher").await;
    let id = String::from_utf8_lossy(&created.stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .to_owned();
    crate::daemon::until_state(&watcher, &id, |s| {
        s.state == panewise_api::AgentState::NeedsInput
    })
    .await;
    let file = daemon.dir.path().join("config/panewise/panewise.toml");
    std::fs::write(&file, "[notify\ndesktop = false\n").unwrap();
    let listed = daemon.run(&["agents"]);
    let said = String::from_utf8_lossy(&listed.stderr).into_owned();
    assert!(listed.status.success(), "{listed:?}");
    assert!(
        said.contains("panewise.toml"),
        "the broken file is not named: {said}"
    );
    assert!(String::from_utf8_lossy(&listed.stdout).contains("typo"));
    let approved = daemon.run(&["approve", "typo"]);
    assert!(approved.status.success(), "{approved:?}");
    crate::daemon::until_state(&watcher, &id, |s| {
        s.state != panewise_api::AgentState::NeedsInput
    })
    .await;
    // A new daemon reads the same broken file and starts all the same.
    let stopped = daemon.run(&["daemon", "stop"]);
    assert!(stopped.status.success(), "{stopped:?}");
    let again = daemon.run(&["agents"]);
    assert!(again.status.success(), "{again:?}");
    // The daemon `agents` started is no child of the test's: stop it, or it outlives the test.
    let stopped = daemon.run(&["daemon", "stop"]);
    assert!(stopped.status.success(), "{stopped:?}");
}
