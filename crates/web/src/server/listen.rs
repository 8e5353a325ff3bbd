//! Where the server listens: loopback TCP by default, a 0600 Unix socket for `ssh -L` and
//! reverse proxies, any other address only when asked for explicitly.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

/// Where to listen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    /// A TCP address.
    Tcp(SocketAddr),
    /// A Unix socket path.
    Unix(PathBuf),
}

/// Why a bind was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindError {
    /// A non-loopback address without the explicit flag.
    #[error(
        "{0} is reachable from other machines; panewise web listens on loopback only unless \
         `--i-know-this-is-exposed` is given too (prefer `--unix PATH` with `ssh -L`, or \
         `tailscale serve`)"
    )]
    Exposed(IpAddr),
}

/// Whether listening on `ip` is allowed: loopback always, anything else only with
/// `exposed_ok` (pure: the decision is table-tested).
pub fn check_bind(ip: IpAddr, exposed_ok: bool) -> Result<(), BindError> {
    if ip.is_loopback() || exposed_ok {
        Ok(())
    } else {
        Err(BindError::Exposed(ip))
    }
}

/// Binds a Unix socket at `path`, private to this user (0600), replacing a stale socket
/// file (never another kind of file).
pub(crate) fn bind_unix(path: &Path) -> std::io::Result<tokio::net::UnixListener> {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if meta.file_type().is_socket() {
            std::fs::remove_file(path)?;
        }
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let listener = tokio::net::UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// Serves `router` at `listen` until the process ends; `ready` is told the bound address.
pub async fn serve(
    listen: &Listen,
    router: axum::Router,
    ready: impl FnOnce(String),
) -> std::io::Result<()> {
    match listen {
        Listen::Tcp(addr) => {
            let listener = tokio::net::TcpListener::bind(addr).await?;
            ready(listener.local_addr()?.to_string());
            axum::serve(listener, router).await
        }
        Listen::Unix(path) => {
            let listener = bind_unix(path)?;
            ready(path.display().to_string());
            axum::serve(listener, router).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_without_the_flag() {
        let table: [(&str, bool, bool); 6] = [
            ("127.0.0.1", false, true),
            ("::1", false, true),
            ("127.0.0.2", false, true),
            ("0.0.0.0", false, false),
            ("192.168.1.5", false, false),
            ("0.0.0.0", true, true),
        ];
        for (ip, flag, ok) in table {
            let ip: IpAddr = ip.parse().unwrap_or(IpAddr::from([255, 255, 255, 255]));
            assert_eq!(check_bind(ip, flag).is_ok(), ok, "{ip} {flag}");
        }
    }
}
