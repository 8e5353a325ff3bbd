//! Sessions made from the asking client's context (issue 28), against a real daemon: the
//! project file is the one found from the client's directory, read afresh for every request
//! (an edit applies to the next session without a restart), and a relative `cwd` is the
//! client's directory's.

use panewise_api::{ClientContext, CreateParams, ErrorCode, Method};

use crate::daemon::{create, Daemon};

/// A project of its own (a repository, so the lookup stops there) with `panewise.toml`.
fn project(daemon: &Daemon, settings: &str) -> std::path::PathBuf {
    let dir = daemon.dir.path().join("project");
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("panewise.toml"), settings).unwrap();
    dir.canonicalize().unwrap()
}

fn from(dir: &std::path::Path, name: &str) -> CreateParams {
    CreateParams {
        name: Some(name.to_owned()),
        client: Some(ClientContext {
            cwd: dir.display().to_string(),
            env: Default::default(),
        }),
        ..CreateParams::default()
    }
}

#[tokio::test]
async fn an_edited_project_file_applies_to_the_next_session_without_a_restart() {
    let daemon = Daemon::start().await;
    let client = daemon.connect("test").await;
    let dir = project(&daemon, "provider = \"mock\"\napproval = \"read-only\"\n");
    let first = create(&client, from(&dir, "first")).await;
    assert_eq!(
        (first.provider.as_str(), first.approval.as_str()),
        ("mock", "read-only"),
        "rule: the project file found from the client's directory applies"
    );
    std::fs::write(
        dir.join("panewise.toml"),
        "provider = \"mock\"\napproval = \"auto\"\nmodel = \"edited\"\n",
    )
    .unwrap();
    let second = create(&client, from(&dir, "second")).await;
    assert_eq!(
        (second.approval.as_str(), second.model.as_deref()),
        ("auto", Some("edited")),
        "rule: the file is read again for every request"
    );
    let relative = create(
        &client,
        CreateParams {
            cwd: Some("sub".to_owned()),
            ..from(&dir, "relative")
        },
    )
    .await;
    assert_eq!(
        relative.cwd,
        dir.join("sub").display().to_string(),
        "rule: a relative cwd is the client's directory's"
    );
}

#[tokio::test]
async fn a_real_provider_without_a_key_anywhere_says_where_to_set_it() {
    let daemon = Daemon::start().await;
    let client = daemon.connect("test").await;
    // A variable no environment holds, so the test does not depend on the machine's keys.
    let dir = project(
        &daemon,
        "provider = \"openai\"\n[providers.openai]\napi_key_env = \"PANEWISE_TEST_NO_SUCH_KEY\"\n",
    );
    let refused = client
        .call::<_, panewise_api::CreateResult>(Method::Create, from(&dir, "nokey"))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Some(ErrorCode::LaunchFailed));
    let message = refused.to_string();
    assert!(
        message.contains(
            "no API key: set PANEWISE_TEST_NO_SUCH_KEY in the environment of the command"
        ),
        "{message}"
    );
}
