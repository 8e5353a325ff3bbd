//! The seccomp filter of every box (built with `seccompiler`): everything allowed but what
//! could leave the box, which fails with `EPERM`.
//!
//! - `io_uring_setup`, `io_uring_enter`, `io_uring_register`: io_uring does I/O (sockets
//!   included) without the system calls the rest of the filter watches;
//! - `ptrace`, `process_vm_readv`, `process_vm_writev`: reading or steering another process
//!   (under Landlock, where there is no PID namespace, panewise itself);
//! - without network: `socket` of any family but `AF_UNIX` (a local socket stays usable:
//!   many build tools talk to themselves over one);
//! - with loopback ports only: `socket` of any family but `AF_UNIX`, `AF_INET` and
//!   `AF_INET6`, and of those two any type but `SOCK_STREAM` (no UDP: under Landlock, which
//!   filters TCP only, a datagram could still leave; no raw or packet sockets).

use std::collections::BTreeMap;

use super::BoxNetwork;
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

/// The socket types refused in the Internet families when only loopback ports are allowed:
/// every type but `SOCK_STREAM` (compared on the type's low bits, under its flags).
/// (`SOCK_PACKET`, 10, is the obsolete packet socket; `libc` deprecates its name, not the type.)
const NOT_STREAM: [i32; 6] = [
    libc::SOCK_DGRAM,
    libc::SOCK_RAW,
    libc::SOCK_RDM,
    libc::SOCK_SEQPACKET,
    libc::SOCK_DCCP,
    10,
];

/// The low bits of `socket`'s type argument that name the type (the rest are flags).
const SOCK_TYPE_MASK: u64 = 0xf;

fn condition(arg: u8, op: SeccompCmpOp, value: i32) -> Result<SeccompCondition, String> {
    SeccompCondition::new(
        arg,
        SeccompCmpArgLen::Dword,
        op,
        u64::try_from(value).map_err(|error| format!("seccomp: {error}"))?,
    )
    .map_err(|error| format!("seccomp: {error}"))
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
    SeccompRule::new(conditions).map_err(|error| format!("seccomp: {error}"))
}

/// The `socket` calls refused in a box with `network` (any rule matching refuses).
fn socket_rules(network: &BoxNetwork) -> Result<Vec<SeccompRule>, String> {
    match network {
        BoxNetwork::Full => Ok(Vec::new()),
        BoxNetwork::None => Ok(vec![rule(vec![condition(
            0,
            SeccompCmpOp::Ne,
            libc::AF_UNIX,
        )?])?]),
        BoxNetwork::LoopbackPorts(_) => {
            let mut rules = vec![rule(vec![
                condition(0, SeccompCmpOp::Ne, libc::AF_UNIX)?,
                condition(0, SeccompCmpOp::Ne, libc::AF_INET)?,
                condition(0, SeccompCmpOp::Ne, libc::AF_INET6)?,
            ])?];
            for family in [libc::AF_INET, libc::AF_INET6] {
                for kind in NOT_STREAM {
                    rules.push(rule(vec![
                        condition(0, SeccompCmpOp::Eq, family)?,
                        condition(1, SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK), kind)?,
                    ])?);
                }
            }
            Ok(rules)
        }
    }
}

/// The filter for a box with `network`, compiled for this machine.
pub fn program(network: &BoxNetwork) -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|error| format!("seccomp: {error}"))?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = denied_always()
        .into_iter()
        .map(|(_, number)| (number, Vec::new()))
        .collect();
    let sockets = socket_rules(network)?;
    if !sockets.is_empty() {
        rules.insert(libc::SYS_socket, sockets);
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
