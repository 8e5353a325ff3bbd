//! The shell sandbox's policy: what box a `shell` command gets in each approval mode
//! ([`plan_shell`], over what the host's probe of the machine found, [`Probe`]), the
//! `[sandbox]` settings, and the box's writable directories and refusal notes. The host builds
//! and enters the box (`panewise_host::sandbox`).

use std::path::PathBuf;

use crate::approval_mode::ApprovalMode;

/// The keys of the `[sandbox]` table.
pub const SANDBOX_KEYS: [&str; 2] = ["network", "mechanism"];

/// What network a box has.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum BoxNetwork {
    /// None: a network namespace of its own with only its own loopback (bubblewrap), or no
    /// TCP at all (Landlock); no socket but `AF_UNIX` either way.
    #[default]
    None,
    /// This machine's network, loopback included (`[sandbox] network = true`).
    Full,
    /// Only these TCP ports of this machine's loopback, e.g. a dev server's (`[sandbox]
    /// network = [5173]`): under bubblewrap a forwarder in the box listens on
    /// `127.0.0.1:PORT` and carries each connection to the port outside (the host's `sandbox::forward`); under
    /// Landlock, TCP connections to these ports only (Landlock filters ports, not addresses).
    LoopbackPorts(Vec<u16>),
}

impl From<bool> for BoxNetwork {
    fn from(network: bool) -> Self {
        if network {
            BoxNetwork::Full
        } else {
            BoxNetwork::None
        }
    }
}

impl BoxNetwork {
    /// How `sandbox check` and the docs name it.
    pub fn describe(&self) -> String {
        match self {
            BoxNetwork::None => "no".to_owned(),
            BoxNetwork::Full => "yes".to_owned(),
            BoxNetwork::LoopbackPorts(ports) => format!(
                "only 127.0.0.1 port{} {}",
                if ports.len() == 1 { "" } else { "s" },
                ports
                    .iter()
                    .map(u16::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// The `[sandbox]` table of `panewise.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxSettings {
    /// `network`: what network the workspace box (modes `ask` and `auto`) has: `false` (the
    /// default) none, `true` all of it, loopback included, or a list of loopback ports.
    pub network: Option<BoxNetwork>,
    /// `mechanism`: which mechanism to use (default: the best available).
    pub mechanism: Option<MechanismChoice>,
}

impl SandboxSettings {
    /// The workspace box's network.
    pub fn network(&self) -> BoxNetwork {
        self.network.clone().unwrap_or_default()
    }

    /// `self` over `base`, key by key.
    pub fn over(self, base: SandboxSettings) -> SandboxSettings {
        SandboxSettings {
            network: self.network.or(base.network),
            mechanism: self.mechanism.or(base.mechanism),
        }
    }
}

/// `[sandbox] mechanism`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MechanismChoice {
    /// `auto`: bubblewrap where it works, else Landlock.
    #[default]
    Auto,
    /// `bubblewrap` only.
    Bubblewrap,
    /// `landlock` only (no PID namespace: see the module doc).
    Landlock,
}

impl MechanismChoice {
    /// Every choice.
    pub const ALL: [MechanismChoice; 3] = [
        MechanismChoice::Auto,
        MechanismChoice::Bubblewrap,
        MechanismChoice::Landlock,
    ];

    /// The name as written in the file.
    pub fn name(self) -> &'static str {
        match self {
            MechanismChoice::Auto => "auto",
            MechanismChoice::Bubblewrap => "bubblewrap",
            MechanismChoice::Landlock => "landlock",
        }
    }

    /// The choice called `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|choice| choice.name() == name)
    }
}

/// How a box is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    /// bubblewrap (namespaces, its own `/proc`) with a seccomp filter.
    Bubblewrap,
    /// Landlock with a seccomp filter, applied to the command's process (no namespaces).
    Landlock,
}

impl Mechanism {
    /// Its name, as `sandbox check` prints it.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Bubblewrap => "bubblewrap",
            Mechanism::Landlock => "landlock",
        }
    }
}

/// Which box.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoxKind {
    /// The whole file system read-only, no network (mode `read-only`).
    ReadOnly,
    /// The working directory and a private temporary directory writable (modes `ask`, `auto`).
    Workspace,
}

/// Whether a `shell` call runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShellApproval {
    /// Run it, unasked.
    Run,
    /// Ask the person first.
    Ask,
    /// Refuse it, saying why.
    Deny(String),
}

/// What [`plan_shell`] decided for the mode's `shell` calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellPlan {
    /// Whether a call runs.
    pub approval: ShellApproval,
    /// The box it runs in, `None` for none.
    pub boxed: Option<BoxedBy>,
    /// Why a mode that boxes runs without one (no mechanism), to be said once.
    pub unboxed_because: Option<String>,
}

/// A box and the mechanism that builds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoxedBy {
    /// The box.
    pub kind: BoxKind,
    /// The mechanism.
    pub mechanism: Mechanism,
    /// Its network.
    pub network: BoxNetwork,
}

/// The sandbox a session's `shell` calls get: the settings and the probe's verdict, decided
/// once when the session starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellSandbox {
    /// `[sandbox]`.
    pub settings: SandboxSettings,
    /// The mechanism to use, or why there is none.
    pub mechanism: Result<Mechanism, String>,
}

impl ShellSandbox {
    /// No mechanism, for `reason` (tests and callers that never probed).
    pub fn unavailable(reason: impl Into<String>) -> Self {
        Self {
            settings: SandboxSettings::default(),
            mechanism: Err(reason.into()),
        }
    }

    /// What `probe` found on the machine, under `settings`.
    pub fn from_probe(settings: SandboxSettings, probe: &Probe) -> Self {
        let mechanism = probe.mechanism(settings.mechanism.unwrap_or_default());
        Self {
            settings,
            mechanism,
        }
    }

    /// [`plan_shell`] for `mode`.
    pub fn plan(&self, mode: ApprovalMode) -> ShellPlan {
        plan_shell(mode, &self.settings, self.mechanism.as_ref().copied())
    }
}

/// The decision: for `mode`, under `settings`, with `mechanism` (or the reason there is
/// none), whether `shell` calls run and in which box (the table of the module doc).
pub fn plan_shell(
    mode: ApprovalMode,
    settings: &SandboxSettings,
    mechanism: Result<Mechanism, &String>,
) -> ShellPlan {
    let boxed = |kind: BoxKind, mechanism: Mechanism| BoxedBy {
        kind,
        mechanism,
        network: match kind {
            BoxKind::Workspace => settings.network(),
            BoxKind::ReadOnly => BoxNetwork::None,
        },
    };
    match (mode, mechanism) {
        (ApprovalMode::FullAccess, _) => ShellPlan {
            approval: ShellApproval::Run,
            boxed: None,
            unboxed_because: None,
        },
        (ApprovalMode::ReadOnly, Ok(mechanism)) => ShellPlan {
            approval: ShellApproval::Run,
            boxed: Some(boxed(BoxKind::ReadOnly, mechanism)),
            unboxed_because: None,
        },
        (ApprovalMode::ReadOnly, Err(reason)) => ShellPlan {
            approval: ShellApproval::Deny(format!(
                "denied by approval mode read-only: shell runs only in a read-only sandbox, and \
                 none is available here ({reason})"
            )),
            boxed: None,
            unboxed_because: None,
        },
        (ApprovalMode::Ask, Ok(mechanism)) => ShellPlan {
            approval: ShellApproval::Ask,
            boxed: Some(boxed(BoxKind::Workspace, mechanism)),
            unboxed_because: None,
        },
        (ApprovalMode::Auto, Ok(mechanism)) => ShellPlan {
            approval: ShellApproval::Run,
            boxed: Some(boxed(BoxKind::Workspace, mechanism)),
            unboxed_because: None,
        },
        (ApprovalMode::Ask | ApprovalMode::Auto, Err(reason)) => ShellPlan {
            approval: ShellApproval::Ask,
            boxed: None,
            unboxed_because: Some(format!(
                "no sandbox for shell commands ({reason}); each command is asked and, once \
                 allowed, runs unconfined (`panewise sandbox check` says more)"
            )),
        },
    }
}

/// The box a session's `shell` commands run in, with the mode that chose it (named in the
/// output's note when the box refused something).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellBox {
    /// The box.
    pub boxed: BoxedBy,
    /// The approval mode.
    pub mode: ApprovalMode,
}

/// Where a box's command runs and what it may write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoxSpec {
    /// The box and its mechanism.
    pub boxed: BoxedBy,
    /// The working directory (writable in the workspace box).
    pub cwd: PathBuf,
    /// The private temporary directory (`TMPDIR`; writable in the workspace box).
    pub tmpdir: PathBuf,
}

impl BoxSpec {
    /// The directories the command may write: none in the read-only box; the working
    /// directory and the temporary directory in the workspace box.
    pub fn writable(&self) -> Vec<PathBuf> {
        match self.boxed.kind {
            BoxKind::ReadOnly => Vec::new(),
            BoxKind::Workspace => vec![self.cwd.clone(), self.tmpdir.clone()],
        }
    }

    /// The line a refused write or connection gets in the tool's output, naming the sandbox.
    pub fn refusal_note(&self, mode: ApprovalMode, output: &str) -> Option<String> {
        let lower = output.to_ascii_lowercase();
        let write_refused = lower.contains("read-only file system")
            || (self.boxed.mechanism == Mechanism::Landlock && lower.contains("permission denied"));
        let net_refused = self.boxed.network != BoxNetwork::Full
            && (lower.contains("network is unreachable")
                || lower.contains("connection refused")
                || lower.contains("operation not permitted")
                || lower.contains("temporary failure in name resolution"));
        let mut notes = Vec::new();
        if write_refused {
            notes.push(match self.boxed.kind {
                BoxKind::ReadOnly => {
                    format!("[sandbox: every write is refused in mode {}]", mode.name())
                }
                BoxKind::Workspace => format!(
                    "[sandbox: writes outside the working directory are refused in mode {}]",
                    mode.name()
                ),
            });
        }
        if net_refused {
            notes.push(match (&self.boxed.network, self.boxed.kind) {
                (BoxNetwork::LoopbackPorts(_), _) => format!(
                    "[sandbox: the network in mode {} is {}; `[sandbox] network` lists the \
                     ports]",
                    mode.name(),
                    self.boxed.network.describe()
                ),
                (_, BoxKind::Workspace) => format!(
                    "[sandbox: no network in mode {}; `[sandbox] network = true` allows it]",
                    mode.name()
                ),
                (_, BoxKind::ReadOnly) => {
                    format!("[sandbox: no network in mode {}]", mode.name())
                }
            });
        }
        (!notes.is_empty()).then(|| notes.join("\n"))
    }
}

/// What the probe found; each part the thing found or why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// `bwrap` on `PATH`: its path and version.
    pub bwrap: Result<(PathBuf, String), String>,
    /// Whether `bwrap` could build a box (user, PID, network namespaces, its own `/proc`).
    pub namespaces: Result<(), String>,
    /// The Landlock ABI the kernel enforces.
    pub landlock: Result<u32, String>,
    /// Whether seccomp filters can be installed.
    pub seccomp: Result<(), String>,
}

impl Probe {
    /// The mechanism `choice` gets on this machine, or why none: bubblewrap when it runs,
    /// else Landlock; seccomp is required by both.
    pub fn mechanism(&self, choice: MechanismChoice) -> Result<Mechanism, String> {
        if let Err(reason) = &self.seccomp {
            return Err(format!("seccomp is unavailable: {reason}"));
        }
        let bubblewrap = match (&self.bwrap, &self.namespaces) {
            (Ok(_), Ok(())) => Ok(Mechanism::Bubblewrap),
            (Err(reason), _) => Err(format!("bubblewrap: {reason}")),
            (Ok(_), Err(reason)) => Err(format!("bubblewrap cannot build a box: {reason}")),
        };
        let landlock = match &self.landlock {
            Ok(_) => Ok(Mechanism::Landlock),
            Err(reason) => Err(format!("Landlock: {reason}")),
        };
        match choice {
            MechanismChoice::Bubblewrap => bubblewrap,
            MechanismChoice::Landlock => landlock,
            MechanismChoice::Auto => match (bubblewrap, landlock) {
                (Ok(found), _) | (Err(_), Ok(found)) => Ok(found),
                (Err(first), Err(second)) => Err(format!("{first}; {second}")),
            },
        }
    }
}
