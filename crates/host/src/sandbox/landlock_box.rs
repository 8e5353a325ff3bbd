//! The Landlock box, where bubblewrap cannot build one: the calling thread is restricted
//! (read and execute everywhere, write only the writable roots and a few devices, no TCP
//! without network; signals and abstract sockets scoped to the box where the kernel can) and
//! the command started from it inherits that. Landlock cannot give the command a PID
//! namespace or its own `/proc`: the seccomp filter's `ptrace`/`process_vm_*` denial is what
//! keeps it out of other processes' memory.

use std::path::PathBuf;

use landlock::{
    path_beneath_rules, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};

use super::BoxNetwork;

/// The devices a command may write even in the read-only box (as a terminal program does).
const WRITABLE_DEVICES: [&str; 4] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// Restricts the calling thread (and what it starts afterwards) to the box: writes only
/// under `writable`, and TCP as `network` says: none, any, or connections to the listed ports
/// only (on any address: Landlock filters ports, not addresses; the seccomp filter refuses
/// every socket but TCP's and `AF_UNIX`'s then). Fails when Landlock enforces nothing.
pub fn restrict_thread(writable: &[PathBuf], network: &BoxNetwork) -> Result<(), String> {
    let abi = ABI::V5;
    let fail = |error: &dyn std::fmt::Display| format!("Landlock: {error}");
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(|error| fail(&error))?;
    if *network != BoxNetwork::Full {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(|error| fail(&error))?;
    }
    ruleset = ruleset
        .scope(Scope::Signal | Scope::AbstractUnixSocket)
        .map_err(|error| fail(&error))?;
    let status = ruleset
        .create()
        .and_then(|created| created.add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi))))
        .and_then(|created| {
            created.add_rules(path_beneath_rules(writable, AccessFs::from_all(abi)))
        })
        .and_then(|created| {
            created.add_rules(path_beneath_rules(
                WRITABLE_DEVICES,
                AccessFs::from_read(abi) | AccessFs::WriteFile,
            ))
        })
        .and_then(|created| {
            let ports = match network {
                BoxNetwork::LoopbackPorts(ports) => ports.clone(),
                BoxNetwork::None | BoxNetwork::Full => Vec::new(),
            };
            created.add_rules(ports.into_iter().map(|port| {
                Ok::<_, landlock::RulesetError>(NetPort::new(port, AccessNet::ConnectTcp))
            }))
        })
        .and_then(|created| created.restrict_self())
        .map_err(|error| fail(&error))?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("Landlock enforced nothing on this kernel".to_owned());
    }
    Ok(())
}
