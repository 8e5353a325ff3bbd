//! Which API key variables each process panewise starts goes without.

use panewise_host::agent::{AgentCommand, AgentProcess};
use panewise_host::config::{Config, ProviderName};
use panewise_host::secrets::{agent_env_removals, tool_env_removals, EnvPolicy, KEY_VARIABLES};

const ANTHROPIC: [&str; 3] = [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
];
const OPENAI: [&str; 2] = ["CODEX_API_KEY", "OPENAI_API_KEY"];
const GOOGLE: [&str; 2] = ["GEMINI_API_KEY", "GOOGLE_API_KEY"];

fn sorted(groups: &[&[&str]]) -> Vec<String> {
    let mut names: Vec<String> = groups
        .iter()
        .flat_map(|group| group.iter().map(|name| (*name).to_owned()))
        .collect();
    names.sort();
    names
}

#[test]
fn an_agent_keeps_its_own_providers_keys_and_no_other() {
    // (provider, what it goes without)
    let cases: [(ProviderName, Vec<String>); 4] = [
        (ProviderName::ClaudeCode, sorted(&[&OPENAI, &GOOGLE])),
        (ProviderName::Codex, sorted(&[&ANTHROPIC, &GOOGLE])),
        (ProviderName::GeminiCli, sorted(&[&ANTHROPIC, &OPENAI])),
        // An ACP agent is taken to be Gemini CLI; another gets its key through `pass_env`.
        (ProviderName::Acp, sorted(&[&ANTHROPIC, &OPENAI])),
    ];
    for (provider, removed) in cases {
        assert_eq!(agent_env_removals(provider, &[]), removed, "{provider:?}");
    }
    // `pass_env` hands another provider's key over anyway.
    let passed = agent_env_removals(ProviderName::ClaudeCode, &["OPENAI_API_KEY".to_owned()]);
    assert_eq!(passed, sorted(&[&["CODEX_API_KEY"], &GOOGLE]));
}

#[test]
fn tools_go_without_every_key_known_or_configured() {
    assert_eq!(
        tool_env_removals(&[]),
        sorted(&[&ANTHROPIC, &OPENAI, &GOOGLE])
    );
    assert_eq!(KEY_VARIABLES.len(), 7);
    let config = Config::parse(
        "pass_env = [\"OPENAI_API_KEY\"]\n\
         [providers.anthropic]\napi_key_env = \"MY_ANTHROPIC\"\n\
         [providers.mock]\napi_key_env = \"MY_MOCK\"\n",
        std::path::Path::new("panewise.toml"),
    )
    .unwrap();
    let policy = EnvPolicy::from_config(&config);
    assert_eq!(
        policy.tool_removals(),
        sorted(&[
            &ANTHROPIC,
            &["CODEX_API_KEY", "MY_ANTHROPIC", "MY_MOCK"],
            &GOOGLE
        ])
    );
    // A configured Anthropic key reaches Claude Code, the mock's reaches no agent.
    assert_eq!(
        policy.agent_removals(ProviderName::ClaudeCode),
        sorted(&[&["CODEX_API_KEY", "MY_MOCK"], &GOOGLE])
    );
    assert!(policy
        .agent_removals(ProviderName::Codex)
        .contains(&"MY_ANTHROPIC".to_owned()));
}

#[tokio::test]
async fn a_spawned_agent_goes_without_the_variables_removed_but_gets_those_set() {
    std::env::set_var("PANEWISE_TEST_AGENT_REMOVED", "sk-planted-agent");
    std::env::set_var("PANEWISE_TEST_AGENT_SET", "from-panewise");
    let mut agent = AgentProcess::spawn(&AgentCommand {
        program: "sh".to_owned(),
        args: vec!["-c".to_owned(), "env".to_owned()],
        env: vec![(
            "PANEWISE_TEST_AGENT_SET".to_owned(),
            "from-the-session".to_owned(),
        )],
        env_remove: vec![
            "PANEWISE_TEST_AGENT_REMOVED".to_owned(),
            "PANEWISE_TEST_AGENT_SET".to_owned(),
        ],
        stdin_null: true,
        ..AgentCommand::default()
    })
    .unwrap();
    let mut output = Vec::new();
    while let Some(chunk) = agent.next_output().await {
        output.extend(chunk);
    }
    agent.wait().await.unwrap();
    let output = String::from_utf8(output).unwrap();
    assert!(!output.contains("sk-planted-agent"), "{output}");
    assert!(
        output.contains("PANEWISE_TEST_AGENT_SET=from-the-session"),
        "{output}"
    );
}
