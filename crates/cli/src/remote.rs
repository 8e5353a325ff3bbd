//! `--remote HOST`: the daemons of other machines, reached over the user's own SSH. panewise
//! runs `SSH_COMMAND HOST 'REMOTE_COMMAND daemon --stdio'` (default `ssh` and `panewise`; the
//! ssh command from `PANEWISE_SSH_COMMAND`, else `[remote] ssh_command` of the user file) and
//! speaks the same API through its standard input and output: no listener, no credentials of
//! panewise's own. The ssh process is killed when its client is dropped, and ends by itself
//! when this process does (its standard input closes).
//!
//! A session on a remote host is named `HOST:ID` (any of the forms `ID` takes after the
//! colon: id, unique prefix, name), where `HOST` is `local` or a host given with `--remote` or
//! listed in `[remote] hosts`; any other text before a colon is part of the id or name. An id
//! without a host is looked up on every host listed, and must name a session on one of them
//! only.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use panewise_api::{ListParams, ListResult, Method, SessionSummary};
use panewise_supervisor::{Client, SupervisorError};

/// How long a command waits for a daemon it started to answer.
pub const START_DEADLINE: Duration = Duration::from_secs(10);

/// How long reaching a remote host's daemon may take, ssh's own connection and login
/// included: past it, the host is unreachable (never a hang).
pub const CONNECT_DEADLINE: Duration = Duration::from_secs(15);

/// `--remote HOST`, repeatable.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct RemoteArgs {
    /// Also reach HOST's daemon over SSH (`ssh HOST panewise daemon --stdio`; repeatable,
    /// added to `[remote] hosts` of the user's panewise.toml). A session there is named
    /// HOST:ID.
    #[arg(long = "remote", value_name = "HOST", value_parser = parse_host)]
    pub remote: Vec<String>,
}

fn parse_host(text: &str) -> Result<String, String> {
    panewise_host::config::check_host(text).map(|()| text.to_owned())
}

/// A daemon: this machine's, or a remote host's.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Host {
    /// This machine's daemon, on its socket.
    Local,
    /// A host's daemon, over ssh.
    Remote(String),
}

impl Host {
    /// Its name as the list shows it: `local`, or the host as given.
    pub fn label(&self) -> &str {
        match self {
            Host::Local => panewise_host::config::LOCAL,
            Host::Remote(host) => host,
        }
    }

    /// How a session `id` on this host is named on the command line: `ID` on this machine,
    /// `HOST:ID` on another.
    pub fn key(&self, id: &str) -> String {
        match self {
            Host::Local => id.to_owned(),
            Host::Remote(host) => format!("{host}:{id}"),
        }
    }
}

/// The hosts listed and how to reach them.
#[derive(Debug, Clone)]
pub struct Remotes {
    ssh_command: Vec<String>,
    remote_command: String,
    /// `--remote` hosts, then the file's, without repeats.
    listed: Vec<String>,
    program: PathBuf,
}

impl Remotes {
    /// The hosts of `args` and of the user file's `[remote]` table, and the commands that
    /// reach them.
    pub fn load(args: &RemoteArgs) -> anyhow::Result<Remotes> {
        let user = panewise_host::config::user_file();
        // A file that does not read (a typo mid-edit) must not stop anyone from seeing or
        // answering the agents that run: said, and this machine's daemon reached as if it had
        // no `[remote]` table. Whatever starts a session reads it again and refuses there.
        let settings = match panewise_host::config::load_files(user.as_deref(), None) {
            Ok(config) => config.remote,
            Err(error) => {
                eprintln!(
                    "panewise: {error}; its [remote] hosts are left out until it reads again"
                );
                panewise_host::config::RemoteSettings::default()
            }
        };
        let ssh = std::env::var("PANEWISE_SSH_COMMAND")
            .ok()
            .filter(|command| !command.trim().is_empty())
            .or(settings.ssh_command)
            .unwrap_or_else(|| "ssh".to_owned());
        let ssh_command = shlex::split(&ssh)
            .filter(|words| !words.is_empty())
            .with_context(|| {
                format!("the ssh command {ssh:?} cannot be split into words as a shell would")
            })?;
        let mut listed: Vec<String> = Vec::new();
        for host in args.remote.iter().chain(&settings.hosts) {
            if !listed.contains(host) {
                listed.push(host.clone());
            }
        }
        Ok(Remotes {
            ssh_command,
            remote_command: settings
                .remote_command
                .unwrap_or_else(|| "panewise".to_owned()),
            listed,
            program: std::env::current_exe().context("cannot find the panewise binary")?,
        })
    }

    /// Every host: this machine first, then the listed ones.
    pub fn hosts(&self) -> Vec<Host> {
        std::iter::once(Host::Local)
            .chain(self.listed.iter().cloned().map(Host::Remote))
            .collect()
    }

    /// Whether any remote host is listed.
    pub fn any(&self) -> bool {
        !self.listed.is_empty()
    }

    /// The command that reaches `host`'s daemon.
    pub fn argv(&self, host: &str) -> Vec<String> {
        let mut argv = self.ssh_command.clone();
        argv.push(host.to_owned());
        argv.push(format!("{} daemon --stdio", self.remote_command));
        argv
    }

    /// A client of `host`'s daemon, named `name`: this machine's started when none runs
    /// (as there, `daemon --stdio` starts a remote one).
    pub async fn connect(&self, host: &Host, name: &str) -> Result<Client, SupervisorError> {
        match host {
            Host::Local => Client::connect_or_start(&self.program, name, START_DEADLINE).await,
            Host::Remote(remote) => {
                Client::over_command(&self.argv(remote), remote, name, CONNECT_DEADLINE).await
            }
        }
    }

    /// A key's host, when it starts with `HOST:` of a known host, and the rest.
    pub fn split<'a>(&self, key: &'a str) -> (Option<Host>, &'a str) {
        if let Some((host, rest)) = key.split_once(':') {
            if host == panewise_host::config::LOCAL {
                return (Some(Host::Local), rest);
            }
            if self.listed.iter().any(|listed| listed == host) {
                return (Some(Host::Remote(host.to_owned())), rest);
            }
        }
        (None, key)
    }

    /// Every host's client and list, side by side; a host that cannot be reached gives its
    /// error instead.
    pub async fn list_all(&self, name: &str) -> Vec<(Host, Result<Listed, SupervisorError>)> {
        let mut tasks = tokio::task::JoinSet::new();
        for (order, host) in self.hosts().into_iter().enumerate() {
            let remotes = self.clone();
            let name = name.to_owned();
            tasks.spawn(async move {
                let listed = async {
                    let client = remotes.connect(&host, &name).await?;
                    let list: ListResult = client.call(Method::List, ListParams {}).await?;
                    Ok(Listed {
                        client,
                        sessions: list.sessions,
                    })
                }
                .await;
                (order, host, listed)
            });
        }
        let mut out = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok(done) => out.push(done),
                Err(error) => tracing::warn!(%error, "a host's listing task failed"),
            }
        }
        out.sort_by_key(|(order, _, _)| *order);
        out.into_iter()
            .map(|(_, host, listed)| (host, listed))
            .collect()
    }

    /// The session `key` names, its host's client and its id there (see the module doc).
    pub async fn target(&self, key: &str, name: &str) -> anyhow::Result<Target> {
        match self.split(key) {
            (Some(host), session) => Ok(Target {
                client: self.connect(&host, name).await?,
                session: session.to_owned(),
                host,
            }),
            (None, session) if !self.any() => {
                let client = self.connect(&Host::Local, name).await?;
                if let Some(host) = unlisted_host(session) {
                    // `HOST:ID` with a host panewise was not told of: unless a local session
                    // is named so, the person meant that host.
                    let list: ListResult = client.call(Method::List, ListParams {}).await?;
                    let local = panewise_api::resolve_session(
                        list.sessions
                            .iter()
                            .map(|s| (s.id.as_str(), s.name.as_str())),
                        session,
                    );
                    anyhow::ensure!(
                        local.is_ok(),
                        "no session {session:?} here, and {host:?} is not a host panewise knows: \
                         give `--remote {host}` (or list it under [remote] hosts in the user's \
                         panewise.toml) to reach its daemon"
                    );
                }
                Ok(Target {
                    client,
                    session: session.to_owned(),
                    host: Host::Local,
                })
            }
            (None, session) => self.find(session, name).await,
        }
    }

    /// Looks `session` up on every host.
    async fn find(&self, session: &str, name: &str) -> anyhow::Result<Target> {
        let mut found = Vec::new();
        let mut unreachable = Vec::new();
        for (host, listed) in self.list_all(name).await {
            match listed {
                Ok(listed) => {
                    let resolved = panewise_api::resolve_session(
                        listed
                            .sessions
                            .iter()
                            .map(|s| (s.id.as_str(), s.name.as_str())),
                        session,
                    );
                    if let Ok(id) = resolved {
                        found.push(Target {
                            host,
                            client: listed.client,
                            session: id,
                        });
                    }
                }
                Err(error) => unreachable.push(error.to_string()),
            }
        }
        for error in &unreachable {
            eprintln!("panewise: {error}");
        }
        if found.len() > 1 {
            let keys: Vec<String> = found
                .iter()
                .map(|target| target.host.key(&target.session))
                .collect();
            anyhow::bail!(
                "{session:?} names a session on {} hosts: give one of {}",
                found.len(),
                keys.join(", ")
            );
        }
        found.pop().with_context(|| {
            let hosts: Vec<String> = self
                .hosts()
                .iter()
                .map(|host| host.label().to_owned())
                .collect();
            format!(
                "no session has the id, prefix or name {session:?} on {} (see `panewise agents`)",
                hosts.join(", ")
            )
        })
    }
}

/// A host's client and its sessions.
pub struct Listed {
    /// The client.
    pub client: Client,
    /// Its sessions.
    pub sessions: Vec<SessionSummary>,
}

/// A session found: its host, that host's client, and its id (or the key as given) there.
pub struct Target {
    /// The host.
    pub host: Host,
    /// A client of its daemon.
    pub client: Client,
    /// The session as that daemon names it.
    pub session: String,
}

/// The host a `HOST:ID` key names when HOST is a valid host name (`--remote` would take it);
/// `None` for a key without a colon, or whose prefix could not be a host.
fn unlisted_host(key: &str) -> Option<&str> {
    let (host, rest) = key.split_once(':')?;
    (!rest.is_empty() && panewise_host::config::check_host(host).is_ok()).then_some(host)
}

#[cfg(test)]
mod tests {
    use super::unlisted_host;

    #[test]
    fn a_host_prefix_is_read_only_where_a_host_could_be() {
        // (rule, key, the host it names)
        let table: [(&str, &str, Option<&str>); 5] = [
            ("HOST:ID names HOST", "devbox:den", Some("devbox")),
            (
                "user@host is a host ssh takes",
                "me@devbox:1a2b",
                Some("me@devbox"),
            ),
            ("a key without a colon names no host", "den", None),
            ("nothing after the colon names no session", "devbox:", None),
            (
                "a prefix ssh would read as an option is no host",
                "-x:den",
                None,
            ),
        ];
        for (rule, key, host) in table {
            assert_eq!(unlisted_host(key), host, "{rule}");
        }
    }
}
