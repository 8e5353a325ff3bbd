//! `panewise.toml`: lookup, layering, flag overrides, and an error naming file, key and
//! reason for every way a value can be wrong.

use std::path::{Path, PathBuf};

use panewise_host::approval::ApprovalMode;
use panewise_host::config::{
    self, project_file, user_file, Config, ConfigOverrides, ProviderName, ProviderSettings,
};
use panewise_window::{PinConfig, StrategyConfig};

use crate::write;

fn parse(text: &str) -> Result<Config, String> {
    Config::parse(text, Path::new("panewise.toml")).map_err(|error| error.to_string())
}

#[test]
fn every_key_is_read() {
    let config = parse(
        "provider = \"anthropic\"\nmodel = \"claude-x\"\napproval = \"auto\"\n\
         [window]\nstrategy = \"sliding-window\"\nkeepRecentTurns = 3\n\
         [providers.anthropic]\nbase_url = \"http://127.0.0.1:9000\"\napi_key_env = \"MY_KEY\"\n\
         prompt_cache = false\n",
    )
    .unwrap();
    assert_eq!(config.provider, Some(ProviderName::Anthropic));
    assert_eq!(config.model.as_deref(), Some("claude-x"));
    assert_eq!(config.approval, Some(ApprovalMode::Auto));
    assert_eq!(
        config.window,
        Some(StrategyConfig::SlidingWindow {
            keep_recent_turns: 3,
            pins: PinConfig::default()
        })
    );
    assert_eq!(
        config.providers.get(&ProviderName::Anthropic),
        Some(&ProviderSettings {
            base_url: Some("http://127.0.0.1:9000".into()),
            api_key_env: Some("MY_KEY".into()),
            prompt_cache: Some(false),
        })
    );
    assert_eq!(config.sources, [PathBuf::from("panewise.toml")]);
    for provider in ProviderName::ALL {
        let config = parse(&format!("provider = \"{}\"", provider.as_str())).unwrap();
        assert_eq!(config.provider, Some(provider));
    }
}

#[test]
fn every_error_names_the_file_the_key_and_the_reason() {
    let cases: &[(&str, &str)] = &[
        (
            "[providers.openai]\nprompt_cache = \"off\"",
            "panewise.toml: key `providers.openai.prompt_cache`: must be true or false, got \
             the string \"off\"",
        ),
        (
            "approval = \"sometimes\"",
            "panewise.toml: key `approval`: unknown mode `sometimes`, expected one of read-only, \
             ask, auto, full-access",
        ),
        (
            "approval = 3",
            "panewise.toml: key `approval`: must be a string, got 3",
        ),
        (
            "provider = \"bard\"",
            "panewise.toml: key `provider`: unknown provider `bard`, expected one of mock, \
             anthropic, openai, gemini, claude-code, codex, gemini-cli, acp",
        ),
        (
            "model = \" \"",
            "panewise.toml: key `model`: must not be empty",
        ),
        (
            "model = [1]",
            "panewise.toml: key `model`: must be a string, got a list",
        ),
        (
            "colour = \"blue\"",
            "panewise.toml: key `colour`: unknown key, expected one of provider, model, \
             approval, pass_env, window, providers, deadlines, notify, telemetry, remote, sandbox, \
             limits, mcp",
        ),
        (
            "pass_env = \"ANTHROPIC_API_KEY\"",
            "panewise.toml: key `pass_env`: must be a list of environment variable names, got \
             the string \"ANTHROPIC_API_KEY\"",
        ),
        (
            "pass_env = [\"OPENAI_API_KEY\", 3]",
            "panewise.toml: key `pass_env[1]`: must be a string, got 3",
        ),
        (
            "pass_env = [\"OPENAI_API_KEY=sk-x\"]",
            "panewise.toml: key `pass_env[0]`: must name an environment variable (letters, \
             digits and `_`, not starting with a digit), got `OPENAI_API_KEY=sk-x`",
        ),
        (
            "window = \"hybrid\"",
            "panewise.toml: key `window`: the configuration must be an object (a table), got \
             the string \"hybrid\"",
        ),
        (
            "[window]\nstrategy = \"newest-only\"",
            "panewise.toml: key `window.strategy`: unknown strategy `newest-only`; one of \
             sliding-window, token-budget, summarize-oldest, observation-masking, hybrid, \
             anthropic-clear-tool-uses, anthropic-clear-thinking, anthropic-compact, openai-compaction",
        ),
        (
            "[window]\nstrategy = \"token-budget\"",
            "panewise.toml: key `window.thresholdTokens`: is required and has no default",
        ),
        (
            "[window]\nstrategy = \"sliding-window\"\nkeepRecentTurns = 2\nkeep = 1",
            "panewise.toml: key `window.keep`: is not an option of the `sliding-window` \
             strategy; it takes strategy, keepRecentTurns, keepLastToolResults, keepLedgerFacts, \
             excludeTools, paybackCalls, overflowTokens, shadow",
        ),
        (
            "providers = 3",
            "panewise.toml: key `providers`: must be a table of provider tables, got 3",
        ),
        (
            "[providers.azure]\nbase_url = \"https://x\"",
            "panewise.toml: key `providers.azure`: unknown provider `azure`, expected one of \
             mock, anthropic, openai, gemini, claude-code, codex, gemini-cli, acp",
        ),
        (
            "[providers]\nopenai = 1",
            "panewise.toml: key `providers.openai`: must be a table, got 1",
        ),
        (
            "[providers.openai]\napi_key = \"sk-secret\"",
            "panewise.toml: key `providers.openai.api_key`: API keys are never read from the \
             file; set `api_key_env` to the name of the environment variable that holds the key",
        ),
        (
            "[providers.openai]\nbase_url = \"ftp://x\"",
            "panewise.toml: key `providers.openai.base_url`: must start with http:// or \
             https://, got `ftp://x`",
        ),
        (
            "[providers.openai]\nbase_url = true",
            "panewise.toml: key `providers.openai.base_url`: must be a string, got true",
        ),
        (
            "[providers.openai]\napi_key_env = \"1KEY\"",
            "panewise.toml: key `providers.openai.api_key_env`: must name an environment \
             variable (letters, digits and `_`, not starting with a digit), got `1KEY`",
        ),
        (
            "[providers.openai]\nmodel = \"x\"",
            "panewise.toml: key `providers.openai.model`: unknown key, expected one of \
             base_url, api_key_env, prompt_cache",
        ),
    ];
    for (text, message) in cases {
        assert_eq!(parse(text).err().as_deref(), Some(*message), "{text}");
    }
    // The secret itself is never repeated in the message.
    let secret = parse("[providers.openai]\napi_key = \"sk-secret\"").unwrap_err();
    assert!(!secret.contains("sk-secret"));
}

#[test]
fn syntax_and_read_errors_name_the_file_and_line() {
    let error = parse("model = \"m\"\napproval = \n").unwrap_err();
    assert!(error.starts_with("panewise.toml: line 2: "), "{error}");
    let dir = tempfile::tempdir().unwrap();
    let error = config::read(dir.path()).unwrap_err().to_string();
    assert!(
        error.starts_with(&format!("cannot read {}: ", dir.path().display())),
        "{error}"
    );
}

/// Every strategy reads from a `[window]` table as the window crate reads its JSON.
#[test]
fn window_tables_are_read_as_strategy_configs() {
    let cases = [
        (
            "strategy = \"sliding-window\"\nkeepRecentTurns = 4\nkeepLastToolResults = false",
            r#"{"strategy": "sliding-window", "keepRecentTurns": 4, "keepLastToolResults": false}"#,
        ),
        (
            "strategy = \"token-budget\"\nthresholdTokens = 8000",
            r#"{"strategy": "token-budget", "thresholdTokens": 8000}"#,
        ),
        (
            "strategy = \"summarize-oldest\"\nthresholdTokens = 9000\nmodel = \"extractive\"\n\
             retain = \"discard\"",
            r#"{"strategy": "summarize-oldest", "thresholdTokens": 9000, "model": "extractive",
                "retain": "discard"}"#,
        ),
        (
            "strategy = \"observation-masking\"\nkeepRecentObservations = 3",
            r#"{"strategy": "observation-masking", "keepRecentObservations": 3}"#,
        ),
        (
            "strategy = \"hybrid\"\nthresholdTokens = 100\nmodel = \"m\"",
            r#"{"strategy": "hybrid", "thresholdTokens": 100, "model": "m"}"#,
        ),
    ];
    for (table, json) in cases {
        let config = parse(&format!("[window]\n{table}")).unwrap();
        assert_eq!(
            config.window,
            Some(StrategyConfig::from_json(json).unwrap()),
            "{table}"
        );
    }
}

/// A project's `[window]` swaps the user's strategy for its own, whole.
#[test]
fn a_project_file_overrides_the_user_file_key_by_key() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "user/panewise.toml",
        "provider = \"anthropic\"\nmodel = \"user-model\"\napproval = \"read-only\"\n\
         [window]\nstrategy = \"sliding-window\"\nkeepRecentTurns = 3\n\
         [providers.anthropic]\nbase_url = \"http://user\"\n\
         [providers.openai]\nbase_url = \"http://user-openai\"\n",
    );
    write(
        dir.path(),
        "project/panewise.toml",
        "model = \"project-model\"\n[window]\nstrategy = \"token-budget\"\nthresholdTokens = 8000\n\
         [providers.anthropic]\napi_key_env = \"PROJECT_KEY\"\n",
    );
    let user = dir.path().join("user/panewise.toml");
    let project = dir.path().join("project/panewise.toml");
    let missing = dir.path().join("missing.toml");
    let config = config::load_files(Some(&user), Some(&project)).unwrap();
    assert_eq!(config.provider, Some(ProviderName::Anthropic));
    assert_eq!(config.model.as_deref(), Some("project-model"));
    assert_eq!(config.approval, Some(ApprovalMode::ReadOnly));
    assert_eq!(
        config.window,
        Some(StrategyConfig::TokenBudget {
            threshold_tokens: 8000,
            keep_recent_turns: 6,
            pins: PinConfig::default()
        })
    );
    // A provider's table is replaced whole; another provider's stays.
    assert_eq!(
        config.providers.get(&ProviderName::Anthropic),
        Some(&ProviderSettings {
            base_url: None,
            api_key_env: Some("PROJECT_KEY".into()),
            prompt_cache: None,
        })
    );
    assert_eq!(
        config.providers[&ProviderName::Openai].base_url.as_deref(),
        Some("http://user-openai")
    );
    assert_eq!(config.sources, [user.clone(), project]);
    // Missing files are skipped.
    let only_user = config::load_files(Some(&user), Some(&missing)).unwrap();
    assert_eq!(only_user.model.as_deref(), Some("user-model"));
    assert_eq!(only_user.sources, [user]);
    assert_eq!(config::load_files(None, None).unwrap(), Config::default());
    assert_eq!(
        config::load_files(None, None)
            .unwrap()
            .approval_or_default(),
        ApprovalMode::Ask
    );
}

/// `pass_env` hands API keys to the model's tools: a project file, which comes with its
/// repository, may not set it; the user file may.
#[test]
fn pass_env_is_read_from_the_user_file_only() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("user.toml");
    let project = dir.path().join("project/panewise.toml");
    write(dir.path(), "user.toml", "pass_env = [\"OPENAI_API_KEY\"]\n");
    write(dir.path(), "project/panewise.toml", "model = \"m\"\n");
    let config = config::load_files(Some(&user), Some(&project)).unwrap();
    assert_eq!(config.pass_env, Some(vec!["OPENAI_API_KEY".to_owned()]));
    assert_eq!(config.model.as_deref(), Some("m"));
    write(
        dir.path(),
        "project/panewise.toml",
        "pass_env = [\"ANTHROPIC_API_KEY\"]\n",
    );
    let error = config::load_files(Some(&user), Some(&project)).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{}: key `pass_env`: is read from the user file only: a project file comes with its \
             repository, which could hand your API keys to the model's tools; set it in your \
             user file instead",
            project.display()
        )
    );
}

/// `telemetry.content` sends prompts and tool output to the collector: a project file may not
/// opt in; the user file may.
#[test]
fn telemetry_content_is_read_from_the_user_file_only() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("user.toml");
    let project = dir.path().join("project/panewise.toml");
    write(dir.path(), "user.toml", "[telemetry]\ncontent = true\n");
    write(dir.path(), "project/panewise.toml", "model = \"m\"\n");
    let config = config::load_files(Some(&user), Some(&project)).unwrap();
    assert_eq!(config.telemetry.content, Some(true));
    write(
        dir.path(),
        "project/panewise.toml",
        "[telemetry]\ncontent = false\n",
    );
    let error = config::load_files(Some(&user), Some(&project))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("key `telemetry.content`: is read from the user file only"),
        "{error}"
    );
    let error = parse("[telemetry]\ncontent = \"yes\"")
        .unwrap_err()
        .to_string();
    assert!(error.contains("telemetry.content"), "{error}");
}

#[test]
fn flags_override_the_files() {
    let files = parse(
        "provider = \"openai\"\nmodel = \"file-model\"\napproval = \"auto\"\n\
         [window]\nstrategy = \"sliding-window\"\nkeepRecentTurns = 3\n",
    )
    .unwrap();
    let swapped = StrategyConfig::from_json(r#"{"strategy": "observation-masking"}"#).unwrap();
    // (overrides, provider, model, approval, window)
    let cases = [
        (
            ConfigOverrides::default(),
            ProviderName::Openai,
            "file-model",
            ApprovalMode::Auto,
            files.window.clone(),
        ),
        (
            ConfigOverrides {
                approval: Some(ApprovalMode::FullAccess),
                ..ConfigOverrides::default()
            },
            ProviderName::Openai,
            "file-model",
            ApprovalMode::FullAccess,
            files.window.clone(),
        ),
        (
            ConfigOverrides {
                provider: Some(ProviderName::Mock),
                model: Some("flag-model".into()),
                approval: Some(ApprovalMode::ReadOnly),
                window: Some(swapped.clone()),
            },
            ProviderName::Mock,
            "flag-model",
            ApprovalMode::ReadOnly,
            Some(swapped),
        ),
    ];
    for (overrides, provider, model, approval, window) in cases {
        let merged = files.clone().with_overrides(overrides.clone());
        assert_eq!(merged.provider, Some(provider), "{overrides:?}");
        assert_eq!(merged.model.as_deref(), Some(model), "{overrides:?}");
        assert_eq!(merged.approval_or_default(), approval, "{overrides:?}");
        assert_eq!(merged.window, window, "{overrides:?}");
        assert_eq!(merged.sources, files.sources, "{overrides:?}");
    }
}

#[test]
fn the_project_file_is_the_nearest_one_up_to_the_repository_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "outer/panewise.toml", "");
    write(root, "outer/repo/.git/HEAD", "");
    write(root, "outer/repo/a/b/c/.keep", "");
    write(root, "outer/repo/a/panewise.toml", "");
    write(root, "outer/plain/x/.keep", "");
    let repo = root.join("outer/repo");
    // (cwd, the file found)
    let cases = [
        // The nearest file wins.
        (repo.join("a/b/c"), Some(repo.join("a/panewise.toml"))),
        (repo.join("a"), Some(repo.join("a/panewise.toml"))),
        // `.git` ends the search: the file above the repository is not its configuration.
        (repo.clone(), None),
        // Without a repository the search goes up to the root.
        (
            root.join("outer/plain/x"),
            Some(root.join("outer/panewise.toml")),
        ),
    ];
    for (cwd, found) in cases {
        assert_eq!(project_file(&cwd), found, "{}", cwd.display());
    }
    write(root, "outer/repo/panewise.toml", "");
    write(root, "outer/repo/other/.keep", "");
    // The repository root itself is searched.
    for cwd in [repo.clone(), repo.join("other")] {
        assert_eq!(
            project_file(&cwd),
            Some(repo.join("panewise.toml")),
            "{}",
            cwd.display()
        );
    }
}

/// The only test in this binary that touches the environment.
#[test]
fn the_user_file_lives_under_xdg_config_home() {
    let dir = tempfile::tempdir().unwrap();
    std::env::set_var("XDG_CONFIG_HOME", dir.path());
    assert_eq!(
        user_file(),
        Some(dir.path().join("panewise").join("panewise.toml"))
    );
    write(
        dir.path(),
        "panewise/panewise.toml",
        "approval = \"full-access\"\nmodel = \"u\"",
    );
    write(dir.path(), "work/.git/HEAD", "");
    write(dir.path(), "work/panewise.toml", "model = \"p\"");
    let config = config::load(&dir.path().join("work")).unwrap();
    assert_eq!(config.approval, Some(ApprovalMode::FullAccess));
    assert_eq!(config.model.as_deref(), Some("p"));
    assert_eq!(config.sources.len(), 2);
    std::env::remove_var("XDG_CONFIG_HOME");
}

/// The example in docs/CONFIG.md is a valid file.
#[test]
fn the_documented_example_parses() {
    let doc = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/CONFIG.md"),
    )
    .unwrap();
    let example = doc
        .split("```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/CONFIG.md has a ```toml example");
    let config = parse(example).unwrap();
    assert!(
        config.provider.is_some() && config.window.is_some(),
        "{config:?}"
    );
}

/// Every top-level key the parser takes is in docs/CONFIG.md's table of keys, and every key
/// the table lists is one the parser takes.
#[test]
fn the_documented_keys_are_the_parsed_keys() {
    let doc = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/CONFIG.md"),
    )
    .unwrap();
    let keys = doc
        .split("## Keys")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("docs/CONFIG.md has a Keys section");
    let documented: std::collections::BTreeSet<String> = keys
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split_once('`').map(|(key, _)| key.to_owned()))
        .map(|key| {
            key.trim_start_matches('[')
                .trim_end_matches(']')
                .split('.')
                .next()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    let parsed: std::collections::BTreeSet<String> = panewise_host::config::TOP_LEVEL_KEYS
        .iter()
        .map(|key| (*key).to_owned())
        .collect();
    assert_eq!(documented, parsed);
}

#[test]
fn the_notify_table_is_read_and_checked() {
    let config = parse("[notify]\ndelay_secs = 0\ncommand = \"cat\"\ndesktop = false").unwrap();
    assert_eq!(config.notify.delay_secs, Some(0));
    assert_eq!(config.notify.command.as_deref(), Some("cat"));
    assert_eq!(config.notify.desktop, Some(false));
    let error = parse("[notify]\nsound = true").unwrap_err().to_string();
    assert!(error.contains("notify.sound"), "{error}");
    let error = parse("[notify]\ndelay_secs = -1").unwrap_err().to_string();
    assert!(error.contains("notify.delay_secs"), "{error}");
}

#[test]
fn the_telemetry_table_is_read_and_checked() {
    let config = parse(
        "[telemetry]\nendpoint = \"http://127.0.0.1:4318\"\nprotocol = \"grpc\"\n\
         service_name = \"ci\"\nresource_attributes = { team = \"core\" }",
    )
    .unwrap();
    assert_eq!(
        config.telemetry.endpoint.as_deref(),
        Some("http://127.0.0.1:4318")
    );
    assert_eq!(config.telemetry.protocol.as_deref(), Some("grpc"));
    assert_eq!(config.telemetry.service_name.as_deref(), Some("ci"));
    assert_eq!(
        config
            .telemetry
            .resource_attributes
            .get("team")
            .map(String::as_str),
        Some("core")
    );
    // Headers hold API keys: a file may not set them.
    let error = parse("[telemetry]\nheaders = \"k=v\"")
        .unwrap_err()
        .to_string();
    assert!(error.contains("telemetry.headers"), "{error}");
    let error = parse("[telemetry]\nprotocol = \"http/json\"")
        .unwrap_err()
        .to_string();
    assert!(error.contains("telemetry.protocol"), "{error}");
}

#[test]
fn the_remote_table_is_read_checked_and_refused_in_a_project_file() {
    let config = parse(
        "[remote]\nhosts = [\"build-box\", \"ci@runner\"]\nssh_command = \"ssh -F cfg\"\n\
         remote_command = \"/opt/panewise\"",
    )
    .unwrap();
    assert_eq!(config.remote.hosts, ["build-box", "ci@runner"]);
    assert_eq!(config.remote.ssh_command.as_deref(), Some("ssh -F cfg"));
    assert_eq!(
        config.remote.remote_command.as_deref(),
        Some("/opt/panewise")
    );
    for (text, key) in [
        (
            "[remote]\nhosts = [\"-oProxyCommand=x\"]",
            "remote.hosts[0]",
        ),
        ("[remote]\nhosts = [\"local\"]", "remote.hosts[0]"),
        ("[remote]\nhosts = \"box\"", "remote.hosts"),
        ("[remote]\nssh_command = \" \"", "remote.ssh_command"),
        ("[remote]\nport = 22", "remote.port"),
    ] {
        let error = parse(text).unwrap_err().to_string();
        assert!(error.contains(&format!("`{key}`")), "{text}: {error}");
    }
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("panewise.toml");
    std::fs::write(&project, "[remote]\nssh_command = \"sh -c evil\"\n").unwrap();
    let error = panewise_host::config::load_files(None, Some(&project))
        .unwrap_err()
        .to_string();
    assert!(error.contains("user file only"), "{error}");
}

/// `[sandbox] network`: a boolean or a list of loopback ports; anything that opens the network
/// is read from the user file only.
#[test]
fn sandbox_network_is_a_boolean_or_loopback_ports_and_opened_from_the_user_file_only() {
    use panewise_host::sandbox::BoxNetwork;
    let cases: &[(&str, Result<BoxNetwork, &str>)] = &[
        ("false", Ok(BoxNetwork::None)),
        ("true", Ok(BoxNetwork::Full)),
        ("[]", Ok(BoxNetwork::None)),
        (
            "[5173, 8080, 5173]",
            Ok(BoxNetwork::LoopbackPorts(vec![5173, 8080])),
        ),
        ("[0]", Err("`0` is no port (1 to 65535)")),
        ("[70000]", Err("`70000` is no port (1 to 65535)")),
        ("[\"5173\"]", Err("`\"5173\"` is no port")),
        (
            "\"yes\"",
            Err("must be true, false or a list of loopback ports such as [5173, 8080]"),
        ),
    ];
    for (value, expected) in cases {
        let parsed = parse(&format!("[sandbox]\nnetwork = {value}\n"));
        match (expected, parsed) {
            (Ok(network), Ok(config)) => {
                assert_eq!(config.sandbox.network.as_ref(), Some(network), "{value}")
            }
            (Err(part), Err(error)) => {
                assert!(error.contains("key `sandbox.network`"), "{value}: {error}");
                assert!(error.contains(part), "{value}: {error}");
            }
            (expected, parsed) => panic!("{value}: {parsed:?}, expected {expected:?}"),
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("user.toml");
    let project = dir.path().join("project/panewise.toml");
    write(dir.path(), "user.toml", "[sandbox]\nnetwork = [5173]\n");
    for (value, refused) in [("false", false), ("[8080]", true), ("true", true)] {
        write(
            dir.path(),
            "project/panewise.toml",
            &format!("[sandbox]\nnetwork = {value}\n"),
        );
        let loaded = config::load_files(Some(&user), Some(&project));
        assert_eq!(loaded.is_err(), refused, "{value}: {loaded:?}");
        if let Err(error) = loaded {
            assert!(
                error
                    .to_string()
                    .contains("is read from the user file only"),
                "{error}"
            );
        }
    }
}

/// `[limits]`' spend caps: dollars above 0 (a whole number reads as dollars), tokens above 0;
/// every bad value and unknown key named; the flags win over the file for a session's caps.
#[test]
fn the_limits_table_reads_the_spend_caps() {
    let config = parse(
        "[limits]\nmax_cost_usd = 0.5\nmax_tokens = 20000\ndaemon_max_cost_usd = 10\n\
         daily_max_cost_usd = 2.5\n",
    )
    .unwrap();
    assert_eq!(config.limits.max_cost_usd, Some(0.5));
    assert_eq!(config.limits.max_tokens, Some(20_000));
    assert_eq!(config.limits.daemon_max_cost_usd, Some(10.0));
    assert_eq!(config.limits.daily_max_cost_usd, Some(2.5));
    let caps = |cost, tokens| panewise_pane_state::BudgetCaps {
        max_cost_usd: cost,
        max_tokens: tokens,
    };
    assert_eq!(
        config.limits.budget(None, None),
        Some(caps(Some(0.5), Some(20_000)))
    );
    assert_eq!(
        config.limits.budget(Some(2.0), None),
        Some(caps(Some(2.0), Some(20_000))),
        "a flag wins over the file"
    );
    assert_eq!(Config::default().limits.budget(None, None), None);
    let cases: &[(&str, &str)] = &[
        (
            "[limits]\nmax_cost_usd = 0",
            "panewise.toml: key `limits.max_cost_usd`: must be a number of US dollars above 0, \
             got 0",
        ),
        (
            "[limits]\ndaily_max_cost_usd = \"5\"",
            "panewise.toml: key `limits.daily_max_cost_usd`: must be a number of US dollars \
             above 0, got the string \"5\"",
        ),
        (
            "[limits]\nmax_tokens = 1.5",
            "panewise.toml: key `limits.max_tokens`: must be a whole number of tokens above 0, \
             got 1.5",
        ),
        (
            "[limits]\nmax_usd = 1",
            "panewise.toml: key `limits.max_usd`: unknown key, expected one of log_max_mib, \
             max_cost_usd, max_tokens, daemon_max_cost_usd, daily_max_cost_usd",
        ),
    ];
    for (text, message) in cases {
        assert_eq!(parse(text).err().as_deref(), Some(*message), "{text}");
    }
}

/// `[mcp]`: servers read with their source (the project file's are the project's), every bad
/// value named by key, and `project_servers` from the user file only.
#[test]
fn the_mcp_table_is_read_with_its_source_and_project_servers_from_the_user_file_only() {
    use panewise_mcp::config::Source;
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("user.toml");
    let project = dir.path().join("project/panewise.toml");
    write(
        dir.path(),
        "user.toml",
        "[mcp]\nproject_servers = true\ntool_budget_tokens = 500\n\
         [mcp.servers.web]\nurl = \"http://127.0.0.1:1/mcp\"\nenv_headers = { Authorization = \"T\" }\n",
    );
    write(
        dir.path(),
        "project/panewise.toml",
        "[mcp.servers.files]\ncommand = \"npx\"\nargs = [\"x\"]\n",
    );
    let config = config::load_files(Some(&user), Some(&project)).unwrap();
    assert_eq!(config.mcp.project_servers, Some(true));
    assert_eq!(config.mcp.tool_budget_tokens, Some(500));
    assert_eq!(config.mcp.servers["web"].source, Source::User);
    assert_eq!(config.mcp.servers["files"].source, Source::Project);
    for (text, key) in [
        ("[mcp]\nnope = 1\n", "mcp.nope"),
        ("[mcp.servers.a]\nurl = \"ftp://x\"\n", "mcp.servers.a.url"),
        ("[mcp.servers.a]\n", "mcp.servers.a"),
    ] {
        let error = parse(text).unwrap_err();
        assert!(error.contains(&format!("key `{key}`")), "{text}: {error}");
    }
    write(
        dir.path(),
        "project/panewise.toml",
        "[mcp]\nproject_servers = true\n",
    );
    let error = config::load_files(Some(&user), Some(&project)).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("key `mcp.project_servers`: is read from the user file only"),
        "{error}"
    );
}
