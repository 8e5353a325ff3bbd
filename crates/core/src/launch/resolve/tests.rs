//! [`resolve`] over every provider × channel × resume × configuration combination the rules
//! distinguish, errors included; each row names the rule it checks. A plan is compared as
//! one line ([`line`]) so a row reads as what the person would see decided.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::*;
use crate::agent_loop::resume::Rebuilt;
use crate::config::ProviderSettings;

/// One plan as a line: what runs, the key's source and endpoint, model, directory, approval,
/// name, the resumed log and the variables the agent is given.
fn line(plan: &SessionPlan) -> String {
    let agent = match &plan.agent {
        AgentSpec::OwnApi {
            api,
            base_url,
            key,
            key_source,
            settings,
        } => format!(
            "own {} {:?} key={} ({key_source:?}) url={base_url} window={} iterations={:?} cache={:?} rebuilt={}",
            settings.provider.as_str(),
            api,
            key.expose(),
            settings.window.strategy_name(),
            settings.max_iterations,
            settings.prompt_cache,
            settings.rebuilt.is_some(),
        ),
        AgentSpec::Mock { server, settings } => format!(
            "mock {server:?} window={} iterations={:?} rebuilt={}",
            settings.window.strategy_name(),
            settings.max_iterations,
            settings.rebuilt.is_some(),
        ),
        AgentSpec::Supervised {
            program,
            args,
            drive,
        } if args.is_empty() => format!("{} {program} {drive:?}", drive.row().provider.as_str()),
        AgentSpec::Supervised {
            program,
            args,
            drive,
        } => format!("{} {program} {drive:?} {args:?}", drive.row().provider.as_str()),
    };
    let cwd = match &plan.cwd {
        SessionDir::Given(dir) => dir.display().to_string(),
        SessionDir::FreshForMock => "fresh".to_owned(),
    };
    let mut text = format!(
        "{agent} | as {} model={} cwd={cwd} approval={}",
        plan.provider_named,
        plan.model.as_deref().unwrap_or("-"),
        plan.approval.name(),
    );
    if let Some(name) = &plan.name {
        text.push_str(&format!(" name={name}"));
    }
    if let Some(log) = &plan.resumed_from {
        text.push_str(&format!(" resumes={}", log.display()));
    }
    if let Some(id) = &plan.resume_id {
        text.push_str(&format!(" id={id}"));
    }
    if !plan.agent_env.is_empty() {
        let names: Vec<&str> = plan.agent_env.names().collect();
        text.push_str(&format!(" env={}", names.join(",")));
    }
    if plan.cannot_ask.is_some() {
        text.push_str(" cannot-ask");
    }
    if let Some(deadlines) = plan.deadlines {
        text.push_str(&format!(
            " deadlines={}/{}",
            deadlines.submit_ms, deadlines.stuck_ms
        ));
    }
    text
}

fn env(pairs: &[(&str, &str)]) -> ClientEnv {
    ClientEnv::new(
        pairs
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect::<BTreeMap<_, _>>(),
    )
}

/// The context of a client in `/b` whose daemon runs in `/a`.
fn client_in_b() -> LaunchContext {
    LaunchContext {
        client_cwd: Some(PathBuf::from("/b")),
        client_env: ClientEnv::default(),
        own_cwd: PathBuf::from("/a"),
        own_env: ClientEnv::default(),
        config: Config::default(),
        // As the binary passes the mock's (the default first); the engine knows no mock.
        mock_scenarios: ["tool-then-answer", "multi-round", "rate-limit"]
            .map(str::to_owned)
            .to_vec(),
    }
}

fn config(edit: impl FnOnce(&mut Config)) -> Config {
    let mut config = Config::default();
    edit(&mut config);
    config
}

fn provider_settings(settings: ProviderSettings, provider: ProviderName) -> Config {
    config(|config| {
        config.providers.insert(provider, settings);
    })
}

fn recorded_own(provider: ProviderName, cwd: Option<&str>, cwd_exists: bool) -> Recorded {
    Recorded {
        log: PathBuf::from("/logs/old.jsonl"),
        cwd: cwd.map(PathBuf::from),
        cwd_exists,
        model: Some("recorded-model".to_owned()),
        name: Some("den".to_owned()),
        kind: RecordedKind::OwnLoop {
            provider,
            approval: Some("auto".to_owned()),
            window: None,
            max_iterations: Some(7),
            mock_scenario: Some("multi-round".to_owned()),
            rebuilt: Rebuilt::default(),
        },
    }
}

fn recorded_agent(provider: Provider, cwd: &str) -> Recorded {
    Recorded {
        log: PathBuf::from("/logs/agent.jsonl"),
        cwd: Some(PathBuf::from(cwd)),
        cwd_exists: true,
        model: Some("opus".to_owned()),
        name: None,
        kind: RecordedKind::Supervised {
            provider,
            named: None,
            agent_session_id: "thread-1".to_owned(),
        },
    }
}

struct Row {
    rule: &'static str,
    request: LaunchRequest,
    context: LaunchContext,
    /// The plan's [`line`], or `Err(` part of the error's sentence `)`.
    expected: Result<&'static str, &'static str>,
}

fn ask(provider: &str) -> LaunchRequest {
    LaunchRequest {
        provider: Some(provider.to_owned()),
        ..LaunchRequest::default()
    }
}

fn with_key(
    mut context: LaunchContext,
    client: &[(&str, &str)],
    own: &[(&str, &str)],
) -> LaunchContext {
    context.client_env = env(client);
    context.own_env = env(own);
    context
}

fn rows() -> Vec<Row> {
    let key_in_client = with_key(client_in_b(), &[("ANTHROPIC_API_KEY", "client-key")], &[]);
    vec![
        Row {
            rule: "no provider anywhere: the offline mock, full-access, in a fresh directory",
            request: LaunchRequest::default(),
            context: client_in_b(),
            expected: Ok("mock InProcess(\"tool-then-answer\") window=token-budget iterations=None rebuilt=false | as mock model=panewise-mock cwd=fresh approval=full-access"),
        },
        Row {
            rule: "project config beats the default: its provider, approval and model",
            request: LaunchRequest::default(),
            context: LaunchContext {
                config: config(|c| {
                    c.provider = Some(ProviderName::Anthropic);
                    c.approval = Some(ApprovalMode::ReadOnly);
                    c.model = Some("claude-x".to_owned());
                }),
                ..key_in_client.clone()
            },
            expected: Ok("own anthropic Anthropic key=client-key (Client) url=https://api.anthropic.com window=token-budget iterations=None cache=None rebuilt=false | as anthropic model=claude-x cwd=/b approval=read-only"),
        },
        Row {
            rule: "a session given no cwd runs in the client's directory, not the daemon's",
            request: ask("anthropic"),
            context: key_in_client.clone(),
            expected: Ok("own anthropic Anthropic key=client-key (Client) url=https://api.anthropic.com window=token-budget iterations=None cache=None rebuilt=false | as anthropic model=claude-sonnet-4-5 cwd=/b approval=ask"),
        },
        Row {
            rule: "a client that sent no context: the daemon's directory is the fallback",
            request: ask("anthropic"),
            context: LaunchContext {
                client_cwd: None,
                ..with_key(client_in_b(), &[], &[("ANTHROPIC_API_KEY", "daemon-key")])
            },
            expected: Ok("own anthropic Anthropic key=daemon-key (Own) url=https://api.anthropic.com window=token-budget iterations=None cache=None rebuilt=false | as anthropic model=claude-sonnet-4-5 cwd=/a approval=ask"),
        },
        Row {
            rule: "--cwd relative to the client's cwd",
            request: LaunchRequest {
                cwd: Some(PathBuf::from("sub/dir")),
                ..ask("anthropic")
            },
            context: key_in_client.clone(),
            expected: Ok("own anthropic Anthropic key=client-key (Client) url=https://api.anthropic.com window=token-budget iterations=None cache=None rebuilt=false | as anthropic model=claude-sonnet-4-5 cwd=/b/sub/dir approval=ask"),
        },
        Row {
            rule: "a relative cwd without a client directory is refused",
            request: LaunchRequest {
                cwd: Some(PathBuf::from("sub")),
                ..LaunchRequest::default()
            },
            context: LaunchContext {
                client_cwd: None,
                ..client_in_b()
            },
            expected: Err("cwd sub: give an absolute path"),
        },
        Row {
            rule: "the client's own directory must be absolute",
            request: LaunchRequest::default(),
            context: LaunchContext {
                client_cwd: Some(PathBuf::from("b")),
                ..client_in_b()
            },
            expected: Err("client.cwd b: give an absolute path"),
        },
        Row {
            rule: "a key in the client's env beats the daemon's",
            request: ask("anthropic"),
            context: with_key(
                client_in_b(),
                &[("ANTHROPIC_API_KEY", "client-key")],
                &[("ANTHROPIC_API_KEY", "daemon-key")],
            ),
            expected: Ok("own anthropic Anthropic key=client-key (Client) url=https://api.anthropic.com window=token-budget iterations=None cache=None rebuilt=false | as anthropic model=claude-sonnet-4-5 cwd=/b approval=ask"),
        },
        Row {
            rule: "the daemon's key is the fallback, and said to be",
            request: ask("openai"),
            context: with_key(client_in_b(), &[], &[("OPENAI_API_KEY", "daemon-key")]),
            expected: Ok("own openai OpenAi key=daemon-key (Own) url=https://api.openai.com window=token-budget iterations=None cache=None rebuilt=false | as openai model=gpt-5 cwd=/b approval=ask"),
        },
        Row {
            rule: "a blank key is no key",
            request: ask("gemini"),
            context: with_key(client_in_b(), &[("GEMINI_API_KEY", "  ")], &[]),
            expected: Err("--provider gemini: no API key: set GEMINI_API_KEY"),
        },
        Row {
            rule: "the endpoint from the client's env beats the daemon's",
            request: ask("anthropic"),
            context: with_key(
                client_in_b(),
                &[("ANTHROPIC_API_KEY", "k"), ("ANTHROPIC_BASE_URL", "http://client")],
                &[("ANTHROPIC_BASE_URL", "http://daemon")],
            ),
            expected: Ok("own anthropic Anthropic key=k (Client) url=http://client window=token-budget iterations=None cache=None rebuilt=false | as anthropic model=claude-sonnet-4-5 cwd=/b approval=ask"),
        },
        Row {
            rule: "the configured base_url beats every environment; api_key_env names the key's variable",
            request: ask("gemini"),
            context: LaunchContext {
                config: provider_settings(
                    ProviderSettings {
                        base_url: Some("http://gateway".to_owned()),
                        api_key_env: Some("MY_GEMINI".to_owned()),
                        prompt_cache: Some(false),
                    },
                    ProviderName::Gemini,
                ),
                ..with_key(
                    client_in_b(),
                    &[("MY_GEMINI", "mine"), ("GEMINI_API_KEY", "conventional"), ("GOOGLE_GEMINI_BASE_URL", "http://env")],
                    &[],
                )
            },
            expected: Ok("own gemini Gemini key=mine (Client) url=http://gateway window=token-budget iterations=None cache=Some(false) rebuilt=false | as gemini model=gemini-2.5-pro cwd=/b approval=ask"),
        },
        Row {
            rule: "flags beat the configuration",
            request: LaunchRequest {
                model: Some("flag-model".to_owned()),
                approval: Some(ApprovalMode::Auto),
                max_iterations: Some(3),
                submit_secs: Some(5),
                ..ask("anthropic")
            },
            context: LaunchContext {
                config: config(|c| {
                    c.model = Some("file-model".to_owned());
                    c.approval = Some(ApprovalMode::ReadOnly);
                    c.deadlines.stuck_secs = Some(9);
                }),
                ..key_in_client.clone()
            },
            expected: Ok("own anthropic Anthropic key=client-key (Client) url=https://api.anthropic.com window=token-budget iterations=Some(3) cache=None rebuilt=false | as anthropic model=flag-model cwd=/b approval=auto deadlines=5000/9000"),
        },
        Row {
            rule: "an unknown provider lists every name",
            request: ask("gpt"),
            context: client_in_b(),
            expected: Err("--provider gpt: expected one of mock, anthropic"),
        },
        Row {
            rule: "a mock scenario is the mock's alone",
            request: LaunchRequest {
                mock_scenario: Some("rate-limit".to_owned()),
                ..ask("anthropic")
            },
            context: key_in_client.clone(),
            expected: Err("only a session of the `mock` provider has one, not anthropic"),
        },
        Row {
            rule: "a mock scenario picks the in-process server",
            request: LaunchRequest {
                mock_scenario: Some("rate-limit".to_owned()),
                name: Some("rl".to_owned()),
                ..ask("mock")
            },
            context: client_in_b(),
            expected: Ok("mock InProcess(\"rate-limit\") window=token-budget iterations=None rebuilt=false | as mock model=panewise-mock cwd=fresh approval=full-access name=rl"),
        },
        Row {
            rule: "an unknown scenario lists every one",
            request: LaunchRequest {
                mock_scenario: Some("nope".to_owned()),
                ..ask("mock")
            },
            context: client_in_b(),
            expected: Err("mock_scenario \"nope\": expected one of tool-then-answer, multi-round, rate-limit"),
        },
        Row {
            rule: "a configured mock base_url is the mock's server, and refuses a scenario",
            request: LaunchRequest {
                mock_scenario: Some("rate-limit".to_owned()),
                ..ask("mock")
            },
            context: LaunchContext {
                config: provider_settings(
                    ProviderSettings {
                        base_url: Some("http://mock".to_owned()),
                        ..ProviderSettings::default()
                    },
                    ProviderName::Mock,
                ),
                ..client_in_b()
            },
            expected: Err("panewise.toml names the mock's base_url"),
        },
        Row {
            rule: "a configured mock base_url without a scenario",
            request: ask("mock"),
            context: LaunchContext {
                config: provider_settings(
                    ProviderSettings {
                        base_url: Some("http://mock".to_owned()),
                        ..ProviderSettings::default()
                    },
                    ProviderName::Mock,
                ),
                ..client_in_b()
            },
            expected: Ok("mock Configured(\"http://mock\") window=token-budget iterations=None rebuilt=false | as mock model=panewise-mock cwd=fresh approval=full-access"),
        },
        Row {
            rule: "claude-code: the configured approval, the client's own-provider key passed, others kept out",
            request: ask("claude-code"),
            context: LaunchContext {
                config: config(|c| c.approval = Some(ApprovalMode::Auto)),
                ..with_key(
                    client_in_b(),
                    &[("ANTHROPIC_API_KEY", "a"), ("OPENAI_API_KEY", "o"), ("PANEWISE_CLAUDE", "/opt/claude")],
                    &[],
                )
            },
            expected: Ok("claude-code /opt/claude ClaudeStreamJson | as claude-code model=- cwd=/b approval=auto env=ANTHROPIC_API_KEY"),
        },
        Row {
            rule: "the executable flag beats the client's variable, which beats the daemon's",
            request: LaunchRequest {
                programs: Programs {
                    codex: Some("/flag/codex".to_owned()),
                    ..Programs::default()
                },
                ..ask("codex")
            },
            context: with_key(client_in_b(), &[("PANEWISE_CODEX", "/client/codex")], &[]),
            expected: Ok("codex /flag/codex CodexAppServer | as codex model=- cwd=/b approval=ask"),
        },
        Row {
            rule: "the daemon's executable variable is the fallback",
            request: ask("gemini-cli"),
            context: with_key(client_in_b(), &[], &[("PANEWISE_GEMINI", "/daemon/gemini")]),
            expected: Ok("gemini-cli /daemon/gemini GeminiAcp | as gemini-cli model=- cwd=/b approval=ask"),
        },
        Row {
            rule: "codex exec cannot ask: ask runs read-only, with a notice",
            request: LaunchRequest {
                channel: Some(ChannelName::Exec),
                ..ask("codex")
            },
            context: client_in_b(),
            expected: Ok("codex codex CodexExec | as codex model=- cwd=/b approval=ask cannot-ask"),
        },
        Row {
            rule: "gemini-cli over stream-json under auto asks nothing and needs no notice",
            request: LaunchRequest {
                channel: Some(ChannelName::StreamJson),
                approval: Some(ApprovalMode::Auto),
                ..ask("gemini-cli")
            },
            context: client_in_b(),
            expected: Ok("gemini-cli gemini GeminiStreamJson | as gemini-cli model=- cwd=/b approval=auto"),
        },
        Row {
            rule: "a channel the agent has not is refused, naming its channels",
            request: LaunchRequest {
                channel: Some(ChannelName::Acp),
                ..ask("codex")
            },
            context: client_in_b(),
            expected: Err("--channel acp: codex is driven by app-server (default) or exec"),
        },
        Row {
            rule: "claude-code has one channel",
            request: LaunchRequest {
                channel: Some(ChannelName::Exec),
                ..ask("claude-code")
            },
            context: client_in_b(),
            expected: Err("--channel exec: claude-code is driven by stream-json"),
        },
        Row {
            rule: "acp with --agent-cmd runs that command",
            request: LaunchRequest {
                agent_cmd: Some("my-agent --acp --fast".to_owned()),
                ..ask("acp")
            },
            context: client_in_b(),
            expected: Ok("acp my-agent AcpAgent [\"--acp\", \"--fast\"] | as acp model=- cwd=/b approval=ask"),
        },
        Row {
            rule: "acp without --agent-cmd is gemini --acp",
            request: ask("acp"),
            context: client_in_b(),
            expected: Ok("gemini-cli gemini GeminiAcp | as acp model=- cwd=/b approval=ask"),
        },
        Row {
            rule: "--agent-cmd goes with acp alone",
            request: LaunchRequest {
                agent_cmd: Some("x".to_owned()),
                ..ask("codex")
            },
            context: client_in_b(),
            expected: Err("--agent-cmd names an ACP agent"),
        },
        Row {
            rule: "an empty --agent-cmd is refused",
            request: LaunchRequest {
                agent_cmd: Some("  ".to_owned()),
                ..ask("acp")
            },
            context: client_in_b(),
            expected: Err("--agent-cmd is empty"),
        },
        Row {
            rule: "a supervised agent keeps its own window",
            request: LaunchRequest {
                window: StrategyConfig::from_json(DEFAULT_WINDOW).ok(),
                ..ask("claude-code")
            },
            context: client_in_b(),
            expected: Err("window: a supervised agent keeps its own context window"),
        },
        Row {
            rule: "resume keeps the recorded provider, cwd, model, approval, limit, scenario and name",
            request: LaunchRequest {
                resume: Some(recorded_own(ProviderName::Mock, Some("/rec"), true)),
                ..LaunchRequest::default()
            },
            context: LaunchContext {
                config: config(|c| c.provider = Some(ProviderName::Anthropic)),
                ..client_in_b()
            },
            expected: Ok("mock InProcess(\"multi-round\") window=token-budget iterations=Some(7) rebuilt=true | as mock model=recorded-model cwd=/rec approval=auto name=den resumes=/logs/old.jsonl"),
        },
        Row {
            rule: "resume under flags: the flags win over the recorded settings",
            request: LaunchRequest {
                approval: Some(ApprovalMode::ReadOnly),
                model: Some("new-model".to_owned()),
                cwd: Some(PathBuf::from("elsewhere")),
                resume: Some(recorded_own(ProviderName::Anthropic, Some("/rec"), true)),
                ..LaunchRequest::default()
            },
            context: key_in_client.clone(),
            expected: Ok("own anthropic Anthropic key=client-key (Client) url=https://api.anthropic.com window=token-budget iterations=Some(7) cache=None rebuilt=true | as anthropic model=new-model cwd=/b/elsewhere approval=read-only name=den resumes=/logs/old.jsonl"),
        },
        Row {
            rule: "resume of the mock whose directory is gone: a fresh one",
            request: LaunchRequest {
                resume: Some(recorded_own(ProviderName::Mock, Some("/gone"), false)),
                ..LaunchRequest::default()
            },
            context: client_in_b(),
            expected: Ok("mock InProcess(\"multi-round\") window=token-budget iterations=Some(7) rebuilt=true | as mock model=recorded-model cwd=fresh approval=auto name=den resumes=/logs/old.jsonl"),
        },
        Row {
            rule: "resume of a real provider whose directory is gone is refused",
            request: LaunchRequest {
                resume: Some(recorded_own(ProviderName::Anthropic, Some("/gone"), false)),
                ..LaunchRequest::default()
            },
            context: key_in_client.clone(),
            expected: Err("its working directory /gone is gone"),
        },
        Row {
            rule: "resume with another provider of the own loop is refused",
            request: LaunchRequest {
                resume: Some(recorded_own(ProviderName::Mock, Some("/rec"), true)),
                ..ask("anthropic")
            },
            context: key_in_client.clone(),
            expected: Err("--provider anthropic: /logs/old.jsonl is a session of mock"),
        },
        Row {
            rule: "resume of an own-loop session with a supervised agent is refused",
            request: LaunchRequest {
                resume: Some(recorded_own(ProviderName::Mock, Some("/rec"), true)),
                ..ask("claude-code")
            },
            context: client_in_b(),
            expected: Err("is a session of mock"),
        },
        Row {
            rule: "resume of a supervised session keeps its agent, channel, model, cwd and id",
            request: LaunchRequest {
                resume: Some(recorded_agent(Provider::Codex, "/rec")),
                ..LaunchRequest::default()
            },
            context: client_in_b(),
            expected: Ok("codex codex CodexExec | as codex model=opus cwd=/rec approval=ask resumes=/logs/agent.jsonl id=thread-1 cannot-ask"),
        },
        Row {
            rule: "resume of a codex app-server session stays on app-server",
            request: LaunchRequest {
                resume: Some(recorded_agent(Provider::CodexAppServer, "/rec")),
                ..LaunchRequest::default()
            },
            context: client_in_b(),
            expected: Ok("codex codex CodexAppServer | as codex model=opus cwd=/rec approval=ask resumes=/logs/agent.jsonl id=thread-1"),
        },
        Row {
            rule: "resume of an acp session may be named gemini-cli: the same family",
            request: LaunchRequest {
                resume: Some(recorded_agent(Provider::Acp, "/rec")),
                ..ask("gemini-cli")
            },
            context: client_in_b(),
            expected: Ok("gemini-cli gemini GeminiAcp | as gemini-cli model=opus cwd=/rec approval=ask resumes=/logs/agent.jsonl id=thread-1"),
        },
        Row {
            rule: "resume of a gemini-cli session keeps the name it was given, not the stream's",
            request: LaunchRequest {
                resume: Some(Recorded {
                    kind: RecordedKind::Supervised {
                        provider: Provider::Acp,
                        named: Some(ProviderName::GeminiCli),
                        agent_session_id: "thread-1".to_owned(),
                    },
                    ..recorded_agent(Provider::Acp, "/rec")
                }),
                ..LaunchRequest::default()
            },
            context: client_in_b(),
            expected: Ok("gemini-cli gemini GeminiAcp | as gemini-cli model=opus cwd=/rec approval=ask resumes=/logs/agent.jsonl id=thread-1"),
        },
        Row {
            rule: "resume of an acp session named acp stays acp (gemini --acp without --agent-cmd)",
            request: LaunchRequest {
                resume: Some(Recorded {
                    kind: RecordedKind::Supervised {
                        provider: Provider::Acp,
                        named: Some(ProviderName::Acp),
                        agent_session_id: "thread-1".to_owned(),
                    },
                    ..recorded_agent(Provider::Acp, "/rec")
                }),
                ..LaunchRequest::default()
            },
            context: client_in_b(),
            expected: Ok("gemini-cli gemini GeminiAcp | as acp model=opus cwd=/rec approval=ask resumes=/logs/agent.jsonl id=thread-1"),
        },
        Row {
            rule: "a log written before the name was kept continues with the decoder's first agent",
            request: LaunchRequest {
                resume: Some(recorded_agent(Provider::Acp, "/rec")),
                ..LaunchRequest::default()
            },
            context: client_in_b(),
            expected: Ok("gemini-cli gemini GeminiAcp | as gemini-cli model=opus cwd=/rec approval=ask resumes=/logs/agent.jsonl id=thread-1"),
        },
        Row {
            rule: "resume of a supervised session with another agent is refused",
            request: LaunchRequest {
                resume: Some(recorded_agent(Provider::ClaudeCode, "/rec")),
                ..ask("codex")
            },
            context: client_in_b(),
            expected: Err("--provider codex: /logs/agent.jsonl is a session of claude-code"),
        },
        Row {
            rule: "resume of a supervised session with the own loop is refused",
            request: LaunchRequest {
                resume: Some(recorded_agent(Provider::ClaudeCode, "/rec")),
                ..ask("mock")
            },
            context: client_in_b(),
            expected: Err("is a session of claude-code"),
        },
        Row {
            rule: "a recorded approval this build does not know is refused",
            request: LaunchRequest {
                resume: Some(Recorded {
                    kind: RecordedKind::OwnLoop {
                        provider: ProviderName::Mock,
                        approval: Some("yolo".to_owned()),
                        window: None,
                        max_iterations: None,
                        mock_scenario: None,
                        rebuilt: Rebuilt::default(),
                    },
                    ..recorded_own(ProviderName::Mock, None, false)
                }),
                ..LaunchRequest::default()
            },
            context: client_in_b(),
            expected: Err("recorded approval mode \"yolo\""),
        },
    ]
}

#[test]
fn resolve_decides_every_combination_by_its_rule() {
    let mut failures = Vec::new();
    for row in rows() {
        let got = resolve(row.request, &row.context);
        let ok = match (&got, row.expected) {
            (Ok(plan), Ok(expected)) => line(plan) == expected,
            (Err(error), Err(part)) => error.to_string().contains(part),
            _ => false,
        };
        if !ok {
            failures.push(format!(
                "rule: {}\n  expected {:?}\n  got      {:?}",
                row.rule,
                row.expected,
                got.as_ref().map(line).map_err(ToString::to_string)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_configuration_is_found_from_the_session_directory_else_the_clients() {
    let rows: [(&str, LaunchRequest, &str); 4] = [
        ("the client's directory", LaunchRequest::default(), "/b"),
        (
            "a relative cwd, from the client's",
            LaunchRequest {
                cwd: Some(PathBuf::from("x")),
                ..LaunchRequest::default()
            },
            "/b/x",
        ),
        (
            "an absolute cwd",
            LaunchRequest {
                cwd: Some(PathBuf::from("/c")),
                ..LaunchRequest::default()
            },
            "/c",
        ),
        (
            "a resumed session's directory",
            LaunchRequest {
                resume: Some(recorded_agent(Provider::ClaudeCode, "/rec")),
                ..LaunchRequest::default()
            },
            "/rec",
        ),
    ];
    for (rule, request, expected) in rows {
        let dir = config_dir(&request, &client_in_b()).unwrap();
        assert_eq!(dir, PathBuf::from(expected), "rule: {rule}");
    }
}

#[test]
fn no_plan_or_env_shows_a_key_in_debug() {
    let context = with_key(
        client_in_b(),
        &[("ANTHROPIC_API_KEY", "sk-secret-client")],
        &[("ANTHROPIC_API_KEY", "sk-secret-daemon")],
    );
    let plan = resolve(ask("anthropic"), &context).unwrap();
    for shown in [format!("{plan:?}"), format!("{context:?}")] {
        assert!(!shown.contains("sk-secret"), "{shown}");
    }
    let claude = resolve(ask("claude-code"), &context).unwrap();
    let shown = format!("{claude:?}");
    assert!(
        shown.contains("ANTHROPIC_API_KEY") && !shown.contains("sk-secret"),
        "{shown}"
    );
}
