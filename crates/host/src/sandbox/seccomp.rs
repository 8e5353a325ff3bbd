//! The seccomp filter of every box (built with `seccompiler`): everything allowed but what
//! could leave the box, which fails with `EPERM`.
//!
//! - `io_uring_setup`, `io_uring_enter`, `io_uring_register`: io_uring does I/O (sockets
//!   included) without the system calls the rest of the filter watches;
//! - `ptrace`, `process_vm_readv`, `process_vm_writev`: reading or steering another process
//!   (under Landlock, where there is no PID namespace, panewise itself);
//! - without network: `socket` of any family but `AF_UNIX` (a local socket stays usable:
//!   many build tools talk to themselves over one).

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// The system calls every box refuses, by name and number.
pub fn denied_always() -> Vec<(&'static str, i64)> {
    vec![
        ("io_uring_setup", libc::SYS_io_uring_setup),
        ("io_uring_enter", libc::SYS_io_uring_enter),
        ("io_uring_register", libc::SYS_io_uring_register),
        ("ptrace", libc::SYS_ptrace),
        ("process_vm_readv", libc::SYS_process_vm_readv),
        ("process_vm_writev", libc::SYS_process_vm_writev),
    ]
}

/// The filter for a box with or without network, compiled for this machine.
pub fn program(network: bool) -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|error| format!("seccomp: {error}"))?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = denied_always()
        .into_iter()
        .map(|(_, number)| (number, Vec::new()))
        .collect();
    if !network {
        let not_unix = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            u64::try_from(libc::AF_UNIX).unwrap_or(1),
        )
        .and_then(|condition| SeccompRule::new(vec![condition]))
        .map_err(|error| format!("seccomp: {error}"))?;
        rules.insert(libc::SYS_socket, vec![not_unix]);
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(u32::try_from(libc::EPERM).unwrap_or(1)),
        arch,
    )
    .map_err(|error| format!("seccomp: {error}"))?;
    BpfProgram::try_from(filter).map_err(|error| format!("seccomp: {error}"))
}

/// The program as bubblewrap's `--seccomp FD` reads it: the `struct sock_filter` array,
/// 8 bytes an instruction, in the machine's byte order.
pub fn program_bytes(program: &BpfProgram) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for instruction in program {
        bytes.extend_from_slice(&instruction.code.to_ne_bytes());
        bytes.push(instruction.jt);
        bytes.push(instruction.jf);
        bytes.extend_from_slice(&instruction.k.to_ne_bytes());
    }
    bytes
}
