//! Where a tool's path argument points, and the one "inside the working directory" check.
//!
//! [`resolve`] joins a path to the working directory and takes `.` and `..` out lexically:
//! that is the path a tool names and opens. [`check_write`] then resolves it the way the
//! kernel will when the file is opened: component by component, every symlink followed (a
//! link's own `..` taken physically, from the directory the link is in), up to the system's
//! limit of links. It is the only check of "inside": the approval policy
//! (`panewise_core::approval::decide`, over the facts the host's `approval::resolve_paths`
//! finds with it) asks it for panewise's own writes and for a supervised agent's file edits
//! alike ([`is_inside`]), and the write tools ask it again at the moment of
//! the write ([`open_for_write`]), which then opens what the check resolved one component at a
//! time with `O_NOFOLLOW`, so a directory or the file swapped for a symlink after the check is
//! refused, and re-reads the link count on the opened file, so a hard link swapped in is too.
//!
//! Refused outright, whatever the mode: a path through a dangling symlink (anywhere along it,
//! and as its last component: writing would create the link's target, wherever it points),
//! a symlink loop, a file used as a directory, a path to something that is not a regular
//! file, and, for a path written inside the working directory or leading into it, a path that
//! leads outside it through a symlink and a file with more than one hard link.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs::File;
use std::io::ErrorKind;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{openat, OFlag, AT_FDCWD};
use nix::sys::stat::{mkdirat, Mode};

use crate::error::WriteRefusal;

/// The most symlinks one resolution follows, as Linux's `MAXSYMLINKS`.
pub const MAX_SYMLINKS: u32 = 40;

/// `path` joined to `cwd` when relative, with `.` and `..` resolved lexically (`..` at the
/// root stays at the root). Symlinks are not followed: this is the path the tools name and
/// open.
pub fn resolve(cwd: &Path, path: &str) -> PathBuf {
    lexical(&cwd.join(path))
}

fn lexical(path: &Path) -> PathBuf {
    let mut resolved = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                resolved.pop();
            }
            other => resolved.push(other.as_os_str()),
        }
    }
    resolved
}

/// What a write of a path would write, as [`check_write`] resolved it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteTarget {
    /// The path as given, resolved against the working directory ([`resolve`]).
    pub path: PathBuf,
    /// Where it leads: absolute, every symlink followed, the components that do not exist
    /// yet appended as written.
    pub real: PathBuf,
    /// `real` is inside the working directory (its own real path or below it), and, when it
    /// exists, a regular file with no other name. The only meaning of "inside".
    pub inside: bool,
    /// The write is held to the working directory: the path is written inside it or leads
    /// into it. Such a write refuses a file with other hard links, checked again on the
    /// opened file.
    pub confined: bool,
    /// `real` exists (a regular file).
    pub exists: bool,
}

/// The one check: where writing `path` (given to a tool in `cwd`) would write, or why it must
/// not. Reads the filesystem (`lstat`, `readlink`) and changes nothing.
pub fn check_write(cwd: &Path, path: &str) -> Result<WriteTarget, WriteRefusal> {
    let cwd = std::path::absolute(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let lexical_cwd = lexical(&cwd);
    let written = resolve(&lexical_cwd, path);
    // The working directory itself must be a directory for anything to be inside it.
    let real_cwd = match walk(&lexical_cwd, &mut Vec::new()) {
        Ok(walked) if walked.metadata.as_ref().is_some_and(|meta| meta.is_dir()) => walked.real,
        Ok(walked) => {
            let (reason, kind) = match walked.metadata {
                None => ("it does not exist", ErrorKind::NotFound),
                Some(_) => ("it is not a directory", ErrorKind::NotADirectory),
            };
            return Err(WriteRefusal::Io {
                action: "resolve the working directory",
                path: lexical_cwd,
                reason: reason.to_owned(),
                kind,
            });
        }
        Err(refusal) => return Err(refusal),
    };
    let walked = walk(&written, &mut Vec::new())?;
    let written_inside = written.starts_with(&lexical_cwd) || written.starts_with(&real_cwd);
    let leads_inside = walked.real.starts_with(&real_cwd);
    if written_inside && !leads_inside {
        return Err(WriteRefusal::Escapes {
            path: written,
            real: walked.real,
        });
    }
    let confined = written_inside || leads_inside;
    if let Some(metadata) = &walked.metadata {
        if let Some(kind) = not_a_file(metadata.file_type()) {
            return Err(WriteRefusal::NotAFile {
                path: walked.real,
                kind,
            });
        }
        if confined && metadata.nlink() > 1 {
            return Err(WriteRefusal::HardLinked {
                path: walked.real,
                links: metadata.nlink(),
            });
        }
    }
    Ok(WriteTarget {
        path: written,
        real: walked.real,
        inside: leads_inside,
        confined,
        exists: walked.metadata.is_some(),
    })
}

/// True when writing `path` (relative to `cwd`, or absolute) lands inside `cwd`: the check
/// passes and its target is inside ([`WriteTarget::inside`]).
pub fn is_inside(cwd: &Path, path: &str) -> bool {
    check_write(cwd, path).is_ok_and(|target| target.inside)
}

/// For a result: where the write really went, when symlinks made it another path than the
/// one given (empty otherwise).
pub fn through_links_note(target: &WriteTarget) -> String {
    if target.real == target.path {
        String::new()
    } else {
        format!(" (through a symlink: {})", target.real.display())
    }
}

/// What a file type is when it is not a regular file, for a refusal.
pub(crate) fn not_a_file(file_type: std::fs::FileType) -> Option<&'static str> {
    if file_type.is_file() {
        None
    } else if file_type.is_dir() {
        Some("a directory")
    } else if file_type.is_fifo() {
        Some("a FIFO")
    } else if file_type.is_socket() {
        Some("a socket")
    } else if file_type.is_char_device() {
        Some("a character device")
    } else if file_type.is_block_device() {
        Some("a block device")
    } else if file_type.is_symlink() {
        Some("a symlink")
    } else {
        Some("not a file")
    }
}

/// A path walked as the kernel would: the real path, and the metadata of what is there
/// (`None` when the last components do not exist yet).
pub(crate) struct Walked {
    pub(crate) real: PathBuf,
    metadata: Option<std::fs::Metadata>,
}

/// One component still to walk, and the symlink whose target it came from.
struct Pending {
    part: Part,
    from_link: Option<usize>,
}

enum Part {
    Root,
    Parent,
    Name(OsString),
    /// What came before must be a directory: the path ended in `/` or `/.`, which
    /// [`Path::components`] drops but the kernel does not.
    Directory,
}

fn parts(path: &Path, from_link: Option<usize>) -> Vec<Pending> {
    let mut parts: Vec<Pending> = path
        .components()
        .filter_map(|component| {
            let part = match component {
                Component::RootDir | Component::Prefix(_) => Part::Root,
                Component::CurDir => return None,
                Component::ParentDir => Part::Parent,
                Component::Normal(name) => Part::Name(name.to_owned()),
            };
            Some(Pending { part, from_link })
        })
        .collect();
    let text = path.as_os_str().as_bytes();
    if text.ends_with(b"/") || text.ends_with(b"/.") {
        parts.push(Pending {
            part: Part::Directory,
            from_link,
        });
    }
    parts
}

/// Walks the absolute `path` component by component, following every symlink; every path
/// looked at on the way (each component, each symlink) is pushed on `visited`, also when the
/// walk then fails.
pub(crate) fn walk(path: &Path, visited: &mut Vec<PathBuf>) -> Result<Walked, WriteRefusal> {
    let given = path.to_path_buf();
    let mut pending: VecDeque<Pending> = parts(path, None).into();
    let mut links: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut real = PathBuf::from("/");
    let mut metadata = std::fs::symlink_metadata(&real).ok();
    while let Some(Pending { part, from_link }) = pending.pop_front() {
        let name = match part {
            Part::Root => {
                real = PathBuf::from("/");
                continue;
            }
            // `real` holds no symlink, so its lexical parent is its physical parent.
            Part::Parent => {
                real.pop();
                continue;
            }
            // Checked when the component before it was found.
            Part::Directory => continue,
            Part::Name(name) => name,
        };
        let candidate = real.join(&name);
        visited.push(candidate.clone());
        match std::fs::symlink_metadata(&candidate) {
            Ok(found) if found.file_type().is_symlink() => {
                if links.len() >= MAX_SYMLINKS as usize {
                    return Err(WriteRefusal::LinkLoop {
                        path: given,
                        link: candidate,
                    });
                }
                let target = std::fs::read_link(&candidate)
                    .map_err(|error| io_refusal("resolve", &candidate, &error))?;
                let index = links.len();
                for part in parts(&target, Some(index)).into_iter().rev() {
                    pending.push_front(part);
                }
                links.push((candidate, target));
            }
            Ok(found) => {
                if !pending.is_empty() && !found.is_dir() {
                    return Err(WriteRefusal::NotADirectory {
                        path: given,
                        component: candidate,
                    });
                }
                real = candidate;
                metadata = Some(found);
            }
            Err(error) if error.kind() == ErrorKind::NotFound => {
                if let Some((link, target)) = from_link.and_then(|index| links.get(index)) {
                    return Err(WriteRefusal::DanglingLink {
                        path: given,
                        link: link.clone(),
                        target: target.clone(),
                    });
                }
                // What follows is the path's own (every link's part came before it), and the
                // lexical resolution left no `..` in it: it is created as written.
                real = candidate;
                for rest in pending.drain(..) {
                    if let Part::Name(name) = rest.part {
                        real.push(name);
                    }
                }
                metadata = None;
            }
            Err(error) => return Err(io_refusal("resolve", &candidate, &error)),
        }
    }
    Ok(Walked { real, metadata })
}

fn io_refusal(action: &'static str, path: &Path, error: &std::io::Error) -> WriteRefusal {
    WriteRefusal::Io {
        action,
        path: path.to_path_buf(),
        reason: error.to_string(),
        kind: error.kind(),
    }
}

fn errno_refusal(action: &'static str, path: &Path, errno: Errno) -> WriteRefusal {
    io_refusal(action, path, &std::io::Error::from(errno))
}

/// How a directory on the way to a file is opened: only to resolve names in it (`O_PATH`
/// where there is one, so a directory one may pass through but not list does not stop it),
/// never through a symlink.
fn directory_flags() -> OFlag {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let access = OFlag::O_PATH;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let access = OFlag::O_RDONLY;
    access | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC
}

/// How [`open_for_write`] opens the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenFor {
    /// Write it whole (`write_file`): created, with its missing parent directories, when
    /// it does not exist; not truncated (the caller truncates once the checks passed).
    Replace,
    /// Read it and write it back (`edit_file`): it must exist.
    Edit,
}

/// Opens what `target` ([`check_write`]) resolved to, so that what is written is what was
/// checked: every directory of [`WriteTarget::real`] is opened from the root with
/// `openat(O_DIRECTORY | O_NOFOLLOW)` (a directory swapped for a symlink since the check is
/// refused, never followed), the file itself with `O_NOFOLLOW | O_NONBLOCK` (a symlink put
/// there is refused; a FIFO does not block the open), and the opened file must be a regular
/// file with, when the write is confined, a single link.
pub fn open_for_write(target: &WriteTarget, purpose: OpenFor) -> Result<File, WriteRefusal> {
    let real = &target.real;
    let (Some(parent), Some(name)) = (real.parent(), real.file_name()) else {
        return Err(WriteRefusal::NotAFile {
            path: real.clone(),
            kind: "a directory",
        });
    };
    let directory_flags = directory_flags();
    let mut directory: OwnedFd = openat(AT_FDCWD, "/", directory_flags, Mode::empty())
        .map_err(|errno| errno_refusal("open", Path::new("/"), errno))?;
    let mut reached = PathBuf::from("/");
    for component in parent.components() {
        let Component::Normal(component) = component else {
            continue;
        };
        reached.push(component);
        let opened = match openat(&directory, component, directory_flags, Mode::empty()) {
            Err(Errno::ENOENT) if purpose == OpenFor::Replace => {
                match mkdirat(&directory, component, Mode::from_bits_truncate(0o777)) {
                    Ok(()) | Err(Errno::EEXIST) => {}
                    Err(errno) => {
                        return Err(errno_refusal("create the directory", &reached, errno))
                    }
                }
                openat(&directory, component, directory_flags, Mode::empty())
            }
            other => other,
        };
        directory = match opened {
            Ok(opened) => opened,
            Err(Errno::ELOOP | Errno::ENOTDIR) => {
                return Err(WriteRefusal::Changed {
                    path: target.path.clone(),
                    what: format!(
                        "{} is no longer a directory (a symlink or a file is there now)",
                        reached.display()
                    ),
                })
            }
            Err(Errno::ENOENT) => {
                return Err(errno_refusal("read", &target.path, Errno::ENOENT));
            }
            Err(errno) => return Err(errno_refusal("open", &reached, errno)),
        };
    }
    let file_flags = match purpose {
        OpenFor::Replace => OFlag::O_WRONLY | OFlag::O_CREAT,
        OpenFor::Edit => OFlag::O_RDWR,
    } | OFlag::O_NOFOLLOW
        | OFlag::O_NONBLOCK
        | OFlag::O_CLOEXEC;
    let action = match purpose {
        OpenFor::Replace => "write",
        OpenFor::Edit => "read",
    };
    let file = match openat(
        &directory,
        name,
        file_flags,
        Mode::from_bits_truncate(0o666),
    ) {
        Ok(opened) => File::from(opened),
        Err(Errno::ELOOP) => {
            return Err(WriteRefusal::Changed {
                path: target.path.clone(),
                what: format!("{} is a symlink now", real.display()),
            })
        }
        // A FIFO opened for writing without a reader.
        Err(Errno::ENXIO) => {
            return Err(WriteRefusal::NotAFile {
                path: real.clone(),
                kind: "a FIFO",
            })
        }
        Err(Errno::EISDIR) => {
            return Err(WriteRefusal::NotAFile {
                path: real.clone(),
                kind: "a directory",
            })
        }
        Err(Errno::ENOENT) => return Err(errno_refusal(action, &target.path, Errno::ENOENT)),
        Err(errno) => return Err(errno_refusal(action, &target.path, errno)),
    };
    let metadata = file
        .metadata()
        .map_err(|error| io_refusal(action, &target.path, &error))?;
    if let Some(kind) = not_a_file(metadata.file_type()) {
        return Err(WriteRefusal::NotAFile {
            path: real.clone(),
            kind,
        });
    }
    if target.confined && metadata.nlink() > 1 {
        return Err(WriteRefusal::HardLinked {
            path: real.clone(),
            links: metadata.nlink(),
        });
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolution_is_lexical_and_relative_to_cwd() {
        let cases = [
            ("a/b.txt", "/w/a/b.txt"),
            ("./a/../b", "/w/b"),
            ("../x", "/x"),
            ("../../../..", "/"),
            ("/etc/passwd", "/etc/passwd"),
            (".", "/w"),
        ];
        for (path, expected) in cases {
            assert_eq!(
                resolve(Path::new("/w"), path),
                PathBuf::from(expected),
                "{path}"
            );
        }
    }
}
