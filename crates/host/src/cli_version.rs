//! The version of a supervised CLI, for the session log's header: read from the npm package the
//! executable belongs to when it is one (no process started), else from `PROGRAM --version`.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long `PROGRAM --version` may take before the version is left unknown.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);

/// The CLI's version, or `None` when it cannot be told.
pub async fn cli_version(program: &str, npm_package: &str) -> Option<String> {
    if let Some(version) = find_on_path(program).and_then(|path| npm_version(&path, npm_package)) {
        return Some(version);
    }
    let output = tokio::time::timeout(
        VERSION_TIMEOUT,
        tokio::process::Command::new(program)
            .arg("--version")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .ok()?
    .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text.lines().find(|line| !line.trim().is_empty())?.trim();
    // Only a short line with a digit is taken as a version: anything else (a banner, a JSON
    // line of a program that ignored the flag) leaves the version unknown.
    let looks_like_version =
        line.len() <= 80 && line.chars().any(|c| c.is_ascii_digit()) && !line.starts_with('{');
    (output.status.success() && looks_like_version).then(|| line.to_owned())
}

/// `program` itself when it names a path, else the first match on `PATH`.
fn find_on_path(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        return Some(PathBuf::from(program));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// The version in the `package.json` of `npm_package` that `executable` (an npm bin link) leads
/// to.
fn npm_version(executable: &Path, npm_package: &str) -> Option<String> {
    let target = std::fs::canonicalize(executable).ok()?;
    target.ancestors().skip(1).take(6).find_map(|dir| {
        let text = std::fs::read_to_string(dir.join("package.json")).ok()?;
        let manifest: serde_json::Value = serde_json::from_str(&text).ok()?;
        (manifest.get("name")?.as_str()? == npm_package)
            .then(|| manifest.get("version")?.as_str().map(str::to_owned))
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_version_comes_from_the_npm_package_the_bin_link_leads_to() {
        let dir = std::env::temp_dir().join(format!("panewise-cli-version-{}", std::process::id()));
        let package = dir.join("node_modules/@scope/tool");
        let bin = dir.join("node_modules/.bin");
        std::fs::create_dir_all(package.join("dist")).ok();
        std::fs::create_dir_all(&bin).ok();
        std::fs::write(
            package.join("package.json"),
            r#"{"name":"@scope/tool","version":"1.2.3"}"#,
        )
        .ok();
        std::fs::write(package.join("dist/cli.js"), "").ok();
        let link = bin.join("tool");
        let _ignored = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(package.join("dist/cli.js"), &link).ok();
        let program = link.display().to_string();
        assert_eq!(
            cli_version(&program, "@scope/tool").await.as_deref(),
            Some("1.2.3")
        );
        // Another package's manifest is not this CLI's version, and `--version` of a file
        // that cannot run gives none.
        assert_eq!(cli_version(&program, "@other/tool").await, None);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[tokio::test]
    async fn without_a_package_the_cli_is_asked_for_its_version() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("panewise-cli-ask-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok();
        let script = dir.join("tool");
        std::fs::write(&script, "#!/bin/sh\necho\necho '9.9.9 (Tool)'\n").ok();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).ok();
        let program = script.display().to_string();
        assert_eq!(
            cli_version(&program, "no-such-package").await.as_deref(),
            Some("9.9.9 (Tool)")
        );
        assert_eq!(cli_version("/no/such/program", "x").await, None);
        std::fs::remove_dir_all(&dir).ok();
    }
}
