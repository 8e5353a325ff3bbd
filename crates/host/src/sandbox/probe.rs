//! What this machine offers, found by trying it: `bwrap` on `PATH` and its version, whether
//! it can build a box (unprivileged user namespaces: refused on Ubuntu 24.04 by AppArmor
//! unless its profile is loaded), the Landlock ABI, seccomp. [`Probe::mechanism`] is the pure
//! verdict on the result.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::Probe;

/// The first executable `name` on `PATH`.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        // A relative entry would be the working directory's, which a repository controls.
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|candidate| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(candidate)
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
}

/// Probes the machine (runs `bwrap` twice and restricts a throwaway thread with Landlock).
pub fn probe() -> Probe {
    let bwrap = match find_on_path("bwrap") {
        None => {
            Err("`bwrap` is not on PATH (Debian/Ubuntu: apt-get install bubblewrap)".to_owned())
        }
        Some(path) => match Command::new(&path).arg("--version").output() {
            Ok(out) if out.status.success() => {
                Ok((path, String::from_utf8_lossy(&out.stdout).trim().to_owned()))
            }
            Ok(out) => Err(format!(
                "`{} --version` failed: {}",
                path.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Err(error) => Err(format!("cannot run {}: {error}", path.display())),
        },
    };
    let namespaces = match &bwrap {
        Err(_) => Err("not tried (no bwrap)".to_owned()),
        Ok((path, _)) => try_bwrap(path),
    };
    Probe {
        bwrap,
        namespaces,
        landlock: landlock_abi(),
        seccomp: seccomp_available(),
    }
}

/// Runs `true` in the strictest box bwrap builds (every namespace of the read-only box).
fn try_bwrap(path: &PathBuf) -> Result<(), String> {
    let out = Command::new(path)
        .args([
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--unshare-pid",
            "--proc",
            "/proc",
            "--unshare-ipc",
            "--unshare-net",
            "--die-with-parent",
            "--new-session",
            "--",
            "true",
        ])
        .stdin(Stdio::null())
        .output()
        .map_err(|error| format!("cannot run {}: {error}", path.display()))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    let remedy = if stderr.contains("RTM_NEWADDR")
        || stderr.contains("setting up uid map")
        || stderr.contains("Operation not permitted")
        || stderr.contains("Permission denied")
    {
        " (unprivileged user namespaces are refused: on Ubuntu 24.04 load AppArmor's \
         `bwrap-userns-restrict` profile from apparmor-profiles, or set \
         kernel.apparmor_restrict_unprivileged_userns=0)"
    } else {
        ""
    };
    Err(format!("`bwrap ... true` failed: {stderr}{remedy}"))
}

/// The Landlock ABI, found by restricting a thread that then ends.
fn landlock_abi() -> Result<u32, String> {
    std::thread::spawn(|| {
        use landlock::{Access, AccessFs, LandlockStatus, Ruleset, RulesetAttr, ABI};
        let status = Ruleset::default()
            .handle_access(AccessFs::from_all(ABI::V1))
            .and_then(|ruleset| ruleset.create())
            .and_then(|created| created.restrict_self())
            .map_err(|error| error.to_string())?;
        match status.landlock {
            LandlockStatus::Available {
                effective_abi,
                kernel_abi,
            } => Ok(kernel_abi
                .and_then(|abi| u32::try_from(abi).ok())
                .unwrap_or(effective_abi as u32)),
            LandlockStatus::NotEnabled => {
                Err("not enabled in this kernel (boot option lsm=)".to_owned())
            }
            LandlockStatus::NotImplemented => Err("not built into this kernel".to_owned()),
        }
    })
    .join()
    .unwrap_or_else(|_| Err("the probe's thread panicked".to_owned()))
}

/// Whether the kernel has seccomp filters (`Seccomp:` in `/proc/self/status`).
fn seccomp_available() -> Result<(), String> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|error| format!("cannot read /proc/self/status: {error}"))?;
    if status.lines().any(|line| line.starts_with("Seccomp:")) {
        Ok(())
    } else {
        Err("this kernel has no seccomp (CONFIG_SECCOMP_FILTER)".to_owned())
    }
}
