//! Process groups that outlive nothing: every command panewise starts (an agent CLI, a `shell`
//! tool call) goes through [`spawn`], and its [`ProcessGroup`] ends everything the command
//! started when it is killed or dropped.
//!
//! Three layers, because each alone leaves something running:
//! - **A process group of its own.** The command leads a new group; [`ProcessGroup::kill`]
//!   sends SIGKILL to the group, so its children and grandchildren die with it.
//! - **A mark in the environment.** Every spawned command gets the variable
//!   `PANEWISE_PROCESS_MARK_<token>=<spawn id>` (the token is this panewise process's, see
//!   [`mark_name`]). Descendants inherit it, including those that leave the group with
//!   `setsid`; [`ProcessGroup::kill`] finds them in `/proc/*/environ` (and, through their
//!   parent, any descendant of the group or of a marked process) and kills them too. The name
//!   carries the token, so a panewise started inside another's tool adds its mark beside the
//!   outer one instead of replacing it. A process that clears its environment *and* leaves
//!   the group *and* loses its parent is not found: the [`KillReport`] says only what was seen.
//! - **Death with panewise.** When panewise itself is killed (`kill -9`), nothing in it runs.
//!   The spawned command gets `PR_SET_PDEATHSIG(SIGKILL)` before exec (`die_with_parent`),
//!   so the kernel kills it; the rest of its group and its marked descendants are killed by
//!   the guard, one small `sh` process per panewise process, started with the first group.
//!   The guard reads `+PGID` / `-PGID` lines on a pipe whose write end only panewise holds
//!   (Rust's pipes are close-on-exec, so no spawned command inherits it); at end of file —
//!   panewise has exited, however it died — it kills every group still registered and, if
//!   there was one, every process carrying this panewise's mark, then exits. (A panewise that
//!   ended in order dropped, killed and unregistered every group, so its guard just exits.)
//!
//! The parent-death signal is tied to the *thread* that spawned the child: spawn from the main
//! thread or a runtime worker (which live as long as the runtime), never from a short-lived
//! thread such as a `spawn_blocking` one, or the child is killed when that thread exits.
//!
//! Linux only in substance (`/proc`, `prctl`); elsewhere the group and the mark remain and the
//! scans find nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use nix::errno::Errno;
use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

/// The prefix of the environment variable that marks every process panewise starts.
pub const MARK_PREFIX: &str = "PANEWISE_PROCESS_MARK_";

/// How many times a kill looks again for processes forked while it was killing.
const KILL_ROUNDS: usize = 8;

/// The guard: waits for end of file on its stdin (panewise gone); if a group is still
/// registered (panewise died with something running), kills every such group and every process
/// whose environment holds `$1=` (this panewise's mark), one `grep` a round. It
/// ignores the terminal's SIGHUP and SIGINT (it is in a group of its own, but a hangup may
/// still reach it through the session) so that it outlives panewise long enough to clean up.
const GUARD_SCRIPT: &str = r#"mark="$1"
trap '' HUP INT
groups=' '
while IFS= read -r line; do
  case "$line" in
    +[0-9]*) groups="$groups${line#+} " ;;
    -[0-9]*)
      g=${line#-}
      case "$groups" in *" $g "*) groups="${groups%% "$g" *} ${groups#* "$g" }" ;; esac ;;
  esac
done
# Every group was dropped (and killed with what left it): panewise ended in order.
[ "$groups" = ' ' ] && exit 0
for g in $groups; do kill -9 "-$g" 2>/dev/null; done
round=0
while [ "$round" -lt 8 ]; do
  round=$((round + 1))
  found=
  for environ in $(grep -laF -- "$mark=" /proc/[0-9]*/environ 2>/dev/null); do
    pid=${environ#/proc/}
    pid=${pid%/environ}
    kill -9 "$pid" 2>/dev/null && found=1
  done
  [ -n "$found" ] || break
done
"#;

/// This panewise process's token: its pid and start time, unique among the processes alive.
fn token() -> &'static str {
    static TOKEN: OnceLock<String> = OnceLock::new();
    TOKEN.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| elapsed.as_nanos())
            .unwrap_or_default();
        format!("{:x}_{:x}", std::process::id(), nanos)
    })
}

/// The name of the environment variable every process this panewise starts carries
/// (`PANEWISE_PROCESS_MARK_<token>`); its value is the spawn's id.
pub fn mark_name() -> String {
    format!("{MARK_PREFIX}{}", token())
}

/// The ids of spawns, one per [`spawn`] in this process.
static NEXT_SPAWN: AtomicU64 = AtomicU64::new(1);

/// A process seen in `/proc`: its pid and its command name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ProcessInfo {
    /// The process id.
    pub pid: i32,
    /// Its command name (`/proc/PID/comm`, at most 15 bytes).
    pub name: String,
}

impl fmt::Display for ProcessInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} `{}`", self.pid, self.name)
    }
}

/// What a kill reached beyond the process group, and what it could not kill.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KillReport {
    /// Processes that had left the group (a new group or session, e.g. `setsid`), found by
    /// the mark or through their parent, and sent SIGKILL.
    pub escaped: Vec<ProcessInfo>,
    /// Processes found that could not be sent SIGKILL, with the reason.
    pub failed: Vec<(ProcessInfo, String)>,
}

impl KillReport {
    /// Whether nothing escaped and nothing failed.
    pub fn is_empty(&self) -> bool {
        self.escaped.is_empty() && self.failed.is_empty()
    }

    /// Adds `other`'s findings (a later kill of the same group), each process once.
    pub fn merge(&mut self, other: KillReport) {
        for process in other.escaped {
            if !self.escaped.contains(&process) {
                self.escaped.push(process);
            }
        }
        for failure in other.failed {
            if !self.failed.contains(&failure) {
                self.failed.push(failure);
            }
        }
    }

    /// The report as lines for a tool result: what left the group and was killed, what
    /// could not be killed. Empty when the group was all there was.
    pub fn lines(&self) -> Vec<String> {
        let list = |processes: &mut dyn Iterator<Item = String>| {
            processes.collect::<Vec<String>>().join(", ")
        };
        let mut lines = Vec::new();
        if !self.escaped.is_empty() {
            lines.push(format!(
                "[killed {} process(es) it had left running outside its process group: {}]",
                self.escaped.len(),
                list(&mut self.escaped.iter().map(ToString::to_string))
            ));
        }
        if !self.failed.is_empty() {
            lines.push(format!(
                "[could not kill {} process(es) it started, still running: {}]",
                self.failed.len(),
                list(
                    &mut self
                        .failed
                        .iter()
                        .map(|(process, why)| format!("{process} ({why})"))
                )
            ));
        }
        lines
    }
}

/// A started command's process group, with its mark. Dropping it kills the group and every
/// process found to have left it.
#[derive(Debug)]
pub struct ProcessGroup {
    leader: Option<Pid>,
    spawn_id: u64,
}

/// Starts `command` as a [`ProcessGroup`]: in a new process group, marked, killed by the
/// kernel if panewise dies, and registered with the guard. The child is `kill_on_drop`.
///
/// Anything the caller set on `command` (arguments, environment, pipes) stays; the mark is
/// added on top of the environment it was given.
pub fn spawn(command: &mut Command) -> std::io::Result<(Child, ProcessGroup)> {
    let spawn_id = NEXT_SPAWN.fetch_add(1, Ordering::Relaxed);
    command
        .env(mark_name(), spawn_id.to_string())
        .process_group(0)
        .kill_on_drop(true);
    die_with_parent(command);
    // The guard first: a group it does not know of could outlive a `kill -9` of panewise.
    let guard = guard();
    let child = command.spawn()?;
    let leader = child
        .id()
        .and_then(|pid| i32::try_from(pid).ok())
        .map(Pid::from_raw);
    if let (Some(guard), Some(leader)) = (guard, leader) {
        guard.send(&format!("+{leader}"));
    }
    Ok((child, ProcessGroup { leader, spawn_id }))
}

impl ProcessGroup {
    /// The group's id (its leader's pid), once started.
    pub fn id(&self) -> Option<Pid> {
        self.leader
    }

    /// Sends `signal` to the whole group; a group already gone is not an error.
    pub fn signal(&self, signal: Signal) -> std::io::Result<()> {
        match self.leader {
            Some(group) => match killpg(group, signal) {
                Ok(()) | Err(Errno::ESRCH) => Ok(()),
                Err(errno) => Err(std::io::Error::from(errno)),
            },
            None => Ok(()),
        }
    }

    /// Sends SIGKILL to the group, to every process carrying this spawn's mark, and to every
    /// descendant of either, again until a look finds nothing new; returns what had left the
    /// group and what could not be killed. Safe to call again: a second kill finds the rest.
    pub fn kill(&self) -> KillReport {
        let mark = format!("{}={}", mark_name(), self.spawn_id);
        let group = self.leader.map(Pid::as_raw);
        let mut report = KillReport::default();
        let mut signalled = BTreeSet::new();
        // Frozen first, not killed: a parent that died now would orphan what left the group
        // before it is found through that parent.
        let _gone = self.signal(Signal::SIGSTOP);
        for _round in 0..KILL_ROUNDS {
            let scanned = scan_processes();
            let fresh: Vec<&ScannedProcess> = reachable(&scanned, group, &mark)
                .into_iter()
                .filter(|process| !signalled.contains(&process.info.pid))
                .collect();
            if fresh.is_empty() {
                break;
            }
            for process in fresh {
                signalled.insert(process.info.pid);
                match kill(Pid::from_raw(process.info.pid), Signal::SIGKILL) {
                    Ok(()) if Some(process.group) != group => {
                        report.escaped.push(process.info.clone())
                    }
                    Ok(()) | Err(Errno::ESRCH) => {}
                    Err(errno) => report
                        .failed
                        .push((process.info.clone(), errno.desc().to_owned())),
                }
            }
            // A member forked between the group kill and now is in the group too.
            let _gone = self.signal(Signal::SIGKILL);
        }
        // Whatever the scans found or missed, the group itself dies.
        let _gone = self.signal(Signal::SIGKILL);
        report
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        let report = self.kill();
        if !report.is_empty() {
            tracing::info!(
                escaped = ?report.escaped,
                failed = ?report.failed,
                "killed processes that had left a process group"
            );
        }
        // Gone now: the guard must not kill another group that is given the id later.
        if let (Some(guard), Some(leader)) = (GUARD.get().and_then(Option::as_ref), self.leader) {
            guard.send(&format!("-{leader}"));
        }
    }
}

/// Sets the parent-death signal of the command's process to SIGKILL, in the child between
/// fork and exec, so that the kernel kills it when panewise dies — the one moment nothing in
/// panewise can run. `unsafe` because `pre_exec` runs code in the forked child, where only
/// async-signal-safe operations are sound; this is the workspace's one `unsafe` (the
/// workspace lint denies it everywhere else, and `xtask/tests/tidy.rs` fails on another).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn die_with_parent(command: &mut Command) {
    let parent = nix::unistd::getpid();
    // SAFETY: the closure runs in the child after fork and before exec. It makes two system
    // calls through nix's thin wrappers (prctl(PR_SET_PDEATHSIG) and getppid), both
    // async-signal-safe; it allocates nothing (an `io::Error` from a raw OS error is not
    // boxed), takes no lock and touches no state shared with the parent. `parent` is a
    // plain integer copied into the closure.
    unsafe {
        command.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)
                .map_err(|errno| std::io::Error::from_raw_os_error(errno as i32))?;
            // panewise died between the fork and the prctl: the signal will never come.
            if nix::unistd::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(Errno::ESRCH as i32));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_command: &mut Command) {}

/// One process as `/proc` showed it.
#[derive(Debug, Clone)]
struct ScannedProcess {
    info: ProcessInfo,
    parent: i32,
    group: i32,
    /// Its environment, NUL-separated `NAME=VALUE` entries (empty when it cannot be read).
    environ: Vec<u8>,
}

/// Every live (not zombie) process in `/proc` whose environment could be read or whose
/// parent and group are known; empty where there is no `/proc`.
fn scan_processes() -> Vec<ScannedProcess> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let own = i32::try_from(std::process::id()).unwrap_or(-1);
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            if pid == own {
                return None;
            }
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let (name, rest) = stat.split_once(" (")?.1.rsplit_once(") ")?;
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let (state, parent, group) = match fields.as_slice() {
                [state, parent, group, ..] => (*state, parent.parse().ok()?, group.parse().ok()?),
                _ => return None,
            };
            if matches!(state, "Z" | "X" | "x") {
                return None;
            }
            Some(ScannedProcess {
                info: ProcessInfo {
                    pid,
                    name: name.to_owned(),
                },
                parent,
                group,
                environ: std::fs::read(entry.path().join("environ")).unwrap_or_default(),
            })
        })
        .collect()
}

/// The processes a kill of `group` with `mark` must reach: the group's members, the processes
/// whose environment holds `mark`, and every descendant of those.
fn reachable<'a>(
    processes: &'a [ScannedProcess],
    group: Option<i32>,
    mark: &str,
) -> Vec<&'a ScannedProcess> {
    let mut children: BTreeMap<i32, Vec<&ScannedProcess>> = BTreeMap::new();
    for process in processes {
        children.entry(process.parent).or_default().push(process);
    }
    let mut queue: Vec<&ScannedProcess> = processes
        .iter()
        .filter(|process| {
            Some(process.group) == group
                || process
                    .environ
                    .split(|byte| *byte == 0)
                    .any(|entry| entry == mark.as_bytes())
        })
        .collect();
    let mut seen: BTreeSet<i32> = BTreeSet::new();
    let mut found = Vec::new();
    while let Some(process) = queue.pop() {
        if !seen.insert(process.info.pid) {
            continue;
        }
        found.push(process);
        if let Some(kids) = children.get(&process.info.pid) {
            queue.extend(kids.iter().copied());
        }
    }
    found
}

/// The guard process of this panewise process, with the write end of its pipe.
struct Guard {
    stdin: Mutex<std::process::ChildStdin>,
    /// Held so its pid stays known; the guard exits only after panewise.
    child: std::process::Child,
}

impl Guard {
    /// Writes one line; a guard that is gone is reported once in the trace.
    fn send(&self, line: &str) {
        let Ok(mut stdin) = self.stdin.lock() else {
            return;
        };
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        if let Err(error) = stdin.write_all(&bytes) {
            static WARNED: OnceLock<()> = OnceLock::new();
            if WARNED.set(()).is_ok() {
                tracing::warn!(%error, "the process guard is gone: a kill -9 of panewise may leave processes running");
            }
        }
    }
}

static GUARD: OnceLock<Option<Guard>> = OnceLock::new();

/// The guard, started on first use; `None` (reported once) when `sh` cannot be started.
fn guard() -> Option<&'static Guard> {
    GUARD
        .get_or_init(|| {
            let started = std::process::Command::new("sh")
                .arg("-c")
                .arg(GUARD_SCRIPT)
                .arg("panewise-guard")
                .arg(mark_name())
                .current_dir("/")
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                // Its own group: a Ctrl-C on the terminal, meant for panewise, does not reach it.
                .process_group(0)
                .spawn();
            match started {
                Ok(mut child) => child.stdin.take().map(|stdin| Guard {
                    stdin: Mutex::new(stdin),
                    child,
                }),
                Err(error) => {
                    tracing::warn!(%error, "cannot start the process guard: a kill -9 of panewise may leave processes running");
                    None
                }
            }
        })
        .as_ref()
}

/// The pid of the guard, when it runs (for tests that kill it or look for it).
pub fn guard_pid() -> Option<u32> {
    guard().map(|guard| guard.child.id())
}

/// The live processes carrying this panewise's mark (any spawn's), for tests and diagnostics.
pub fn marked_processes() -> Vec<ProcessInfo> {
    let prefix = format!("{}=", mark_name());
    scan_processes()
        .into_iter()
        .filter(|process| {
            process
                .environ
                .split(|byte| *byte == 0)
                .any(|entry| entry.starts_with(prefix.as_bytes()))
        })
        .map(|process| process.info)
        .collect()
}
