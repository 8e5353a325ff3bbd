use std::ffi::OsString;
use std::path::PathBuf;

use super::*;
use crate::approval::ApprovalMode;

const BWRAP: Result<Mechanism, &String> = Ok(Mechanism::Bubblewrap);

fn settings(network: bool) -> SandboxSettings {
    SandboxSettings {
        network: Some(network.into()),
        mechanism: None,
    }
}

fn boxed(kind: BoxKind, mechanism: Mechanism, network: bool) -> Option<BoxedBy> {
    Some(BoxedBy {
        kind,
        mechanism,
        network: network.into(),
    })
}

#[test]
fn each_mode_gets_its_box_and_asks_only_where_the_table_says() {
    use ApprovalMode::*;
    use ShellApproval::{Ask as Asks, Run as Runs};
    let none = "no bwrap".to_owned();
    /// (mode, network setting, mechanism, approval, box, said unboxed)
    type Case<'a> = (
        ApprovalMode,
        bool,
        Result<Mechanism, &'a String>,
        ShellApproval,
        Option<BoxedBy>,
        bool,
    );
    let cases: Vec<Case> = vec![
        (
            ReadOnly,
            false,
            BWRAP,
            Runs,
            boxed(BoxKind::ReadOnly, Mechanism::Bubblewrap, false),
            false,
        ),
        // read-only never has the network, whatever the setting.
        (
            ReadOnly,
            true,
            BWRAP,
            Runs,
            boxed(BoxKind::ReadOnly, Mechanism::Bubblewrap, false),
            false,
        ),
        (
            Ask,
            false,
            BWRAP,
            Asks,
            boxed(BoxKind::Workspace, Mechanism::Bubblewrap, false),
            false,
        ),
        (
            Auto,
            false,
            BWRAP,
            Runs,
            boxed(BoxKind::Workspace, Mechanism::Bubblewrap, false),
            false,
        ),
        (
            Auto,
            true,
            BWRAP,
            Runs,
            boxed(BoxKind::Workspace, Mechanism::Bubblewrap, true),
            false,
        ),
        (
            Auto,
            false,
            Ok(Mechanism::Landlock),
            Runs,
            boxed(BoxKind::Workspace, Mechanism::Landlock, false),
            false,
        ),
        (FullAccess, false, BWRAP, Runs, None, false),
        // No mechanism: auto asks and says why; ask asks; full-access runs; read-only denies.
        (Auto, false, Err(&none), Asks, None, true),
        (Ask, false, Err(&none), Asks, None, true),
        (FullAccess, false, Err(&none), Runs, None, false),
    ];
    for (mode, network, mechanism, approval, expected_box, says_why) in cases {
        let plan = plan_shell(mode, &settings(network), mechanism);
        let label = format!("{} network={network} {mechanism:?}", mode.name());
        assert_eq!(plan.approval, approval, "{label}");
        assert_eq!(plan.boxed, expected_box, "{label}");
        assert_eq!(plan.unboxed_because.is_some(), says_why, "{label}");
        if let Some(why) = plan.unboxed_because {
            assert!(why.contains("no bwrap"), "{label}: {why}");
        }
    }
    let denied = plan_shell(ReadOnly, &settings(false), Err(&none));
    assert!(
        matches!(&denied.approval, ShellApproval::Deny(reason) if reason.contains("no bwrap")),
        "{denied:?}"
    );
    assert_eq!(denied.boxed, None);
}

fn spec(kind: BoxKind, network: bool) -> BoxSpec {
    BoxSpec {
        boxed: BoxedBy {
            kind,
            mechanism: Mechanism::Bubblewrap,
            network: network.into(),
        },
        cwd: PathBuf::from("/work/repo"),
        tmpdir: PathBuf::from("/tmp/panewise-box-1"),
    }
}

fn words(args: &[OsString]) -> Vec<String> {
    args.iter()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect()
}

#[test]
fn bwrap_argv_binds_only_the_writable_roots_and_unshares_what_the_box_lacks() {
    let command = [
        OsString::from("sh"),
        OsString::from("-c"),
        OsString::from("true"),
    ];
    let cases = [
        (
            spec(BoxKind::ReadOnly, false),
            Some(7),
            "--ro-bind / / --dev /dev --unshare-pid --proc /proc --unshare-ipc --unshare-net \
             --die-with-parent --new-session --seccomp 7 --chdir /work/repo -- sh -c true",
        ),
        (
            spec(BoxKind::Workspace, false),
            Some(3),
            "--ro-bind / / --dev /dev --bind /work/repo /work/repo --bind /tmp/panewise-box-1 \
             /tmp/panewise-box-1 --unshare-pid --proc /proc --unshare-ipc --unshare-net \
             --die-with-parent --new-session --seccomp 3 --chdir /work/repo -- sh -c true",
        ),
        (
            spec(BoxKind::Workspace, true),
            None,
            "--ro-bind / / --dev /dev --bind /work/repo /work/repo --bind /tmp/panewise-box-1 \
             /tmp/panewise-box-1 --unshare-pid --proc /proc --unshare-ipc \
             --die-with-parent --new-session --chdir /work/repo -- sh -c true",
        ),
    ];
    for (spec, fd, expected) in cases {
        let expected: Vec<&str> = expected.split_whitespace().collect();
        assert_eq!(
            words(&bwrap::argv(&spec, fd, &command)),
            expected,
            "{spec:?}"
        );
    }
}

#[test]
fn a_box_gets_the_allowed_variables_and_its_tmpdir_never_a_key() {
    let vars = [
        ("PATH", "/usr/bin"),
        ("HOME", "/root"),
        ("ANTHROPIC_API_KEY", "sk-secret"),
        ("OPENAI_API_KEY", "sk-other"),
        ("MY_TOKEN", "t"),
        ("LANG", "C.UTF-8"),
        ("TMPDIR", "/var/tmp"),
    ]
    .map(|(name, value)| (OsString::from(name), OsString::from(value)));
    let env = bwrap::box_env(vars, &spec(BoxKind::Workspace, false));
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(name, value)| {
            (
                name.to_string_lossy().into_owned(),
                value.to_string_lossy().into_owned(),
            )
        })
        .collect();
    let expected = [
        ("PATH", "/usr/bin"),
        ("HOME", "/root"),
        ("LANG", "C.UTF-8"),
        ("TMPDIR", "/tmp/panewise-box-1"),
    ]
    .map(|(name, value)| (name.to_owned(), value.to_owned()));
    assert_eq!(env, expected);
}

#[test]
fn a_refusal_in_the_output_is_named_as_the_sandbox_s() {
    let cases = [
        (
            BoxKind::Workspace,
            false,
            "touch: cannot touch '../outside': Read-only file system",
            Some("[sandbox: writes outside the working directory are refused in mode auto]"),
        ),
        (
            BoxKind::ReadOnly,
            false,
            "sh: 1: cannot create x: Read-only file system",
            Some("[sandbox: every write is refused in mode auto]"),
        ),
        (
            BoxKind::Workspace,
            false,
            "bash: connect: Connection refused",
            Some("[sandbox: no network in mode auto; `[sandbox] network = true` allows it]"),
        ),
        (
            BoxKind::Workspace,
            true,
            "bash: connect: Connection refused",
            None,
        ),
        (BoxKind::Workspace, false, "all fine", None),
    ];
    for (kind, network, output, expected) in cases {
        let note = spec(kind, network).refusal_note(ApprovalMode::Auto, output);
        assert_eq!(note.as_deref(), expected, "{output}");
    }
    let mut ports = spec(BoxKind::Workspace, false);
    ports.boxed.network = BoxNetwork::LoopbackPorts(vec![5173, 8080]);
    assert_eq!(
        ports
            .refusal_note(ApprovalMode::Auto, "curl: (7) Connection refused")
            .as_deref(),
        Some(
            "[sandbox: the network in mode auto is only 127.0.0.1 ports 5173, 8080; \
             `[sandbox] network` lists the ports]"
        )
    );
}

#[test]
fn loopback_ports_reach_the_workspace_box_only() {
    let settings = SandboxSettings {
        network: Some(BoxNetwork::LoopbackPorts(vec![5173])),
        mechanism: None,
    };
    let auto = plan_shell(ApprovalMode::Auto, &settings, BWRAP);
    assert_eq!(
        auto.boxed.map(|boxed| boxed.network),
        Some(BoxNetwork::LoopbackPorts(vec![5173]))
    );
    let read_only = plan_shell(ApprovalMode::ReadOnly, &settings, BWRAP);
    assert_eq!(
        read_only.boxed.map(|boxed| boxed.network),
        Some(BoxNetwork::None)
    );
    // The box keeps a network namespace of its own: the ports come in through the forwarder.
    let mut boxed = spec(BoxKind::Workspace, false);
    boxed.boxed.network = BoxNetwork::LoopbackPorts(vec![5173]);
    assert!(words(&bwrap::argv(&boxed, None, &[OsString::from("true")]))
        .contains(&"--unshare-net".to_owned()));
}

#[test]
fn the_probe_s_verdict_prefers_bubblewrap_and_falls_back_to_landlock() {
    let ok_bwrap = Ok((
        PathBuf::from("/usr/bin/bwrap"),
        "bubblewrap 0.8.0".to_owned(),
    ));
    let probe = |bwrap: Result<(PathBuf, String), String>,
                 namespaces: Result<(), String>,
                 landlock: Result<u32, String>,
                 seccomp: Result<(), String>| Probe {
        bwrap,
        namespaces,
        landlock,
        seccomp,
    };
    let refused = || Err("RTM_NEWADDR".to_owned());
    let cases = [
        (
            probe(ok_bwrap.clone(), Ok(()), Ok(7), Ok(())),
            MechanismChoice::Auto,
            Ok(Mechanism::Bubblewrap),
        ),
        (
            probe(ok_bwrap.clone(), refused(), Ok(7), Ok(())),
            MechanismChoice::Auto,
            Ok(Mechanism::Landlock),
        ),
        (
            probe(Err("not on PATH".into()), refused(), Ok(3), Ok(())),
            MechanismChoice::Auto,
            Ok(Mechanism::Landlock),
        ),
        (
            probe(ok_bwrap.clone(), Ok(()), Ok(7), Ok(())),
            MechanismChoice::Landlock,
            Ok(Mechanism::Landlock),
        ),
        (
            probe(ok_bwrap.clone(), refused(), Ok(7), Ok(())),
            MechanismChoice::Bubblewrap,
            Err("RTM_NEWADDR"),
        ),
        (
            probe(ok_bwrap.clone(), refused(), Err("not built".into()), Ok(())),
            MechanismChoice::Auto,
            Err("not built"),
        ),
        (
            probe(ok_bwrap.clone(), Ok(()), Ok(7), Err("none".into())),
            MechanismChoice::Auto,
            Err("seccomp"),
        ),
    ];
    for (probe, choice, expected) in cases {
        let verdict = probe.mechanism(choice);
        match (expected, &verdict) {
            (Ok(mechanism), Ok(found)) => assert_eq!(*found, mechanism, "{probe:?}"),
            (Err(part), Err(reason)) => assert!(reason.contains(part), "{reason}"),
            (expected, verdict) => {
                panic!("{probe:?} {choice:?}: {verdict:?}, expected {expected:?}")
            }
        }
    }
}

#[test]
fn the_seccomp_program_compiles_with_and_without_network() {
    let lengths: Vec<usize> = [
        BoxNetwork::None,
        BoxNetwork::Full,
        BoxNetwork::LoopbackPorts(vec![5173]),
    ]
    .iter()
    .map(|network| seccomp::program(network).map_or(0, |program| program.len()))
    .collect();
    // Each network refuses more sockets than the one before it allows: the programs differ.
    assert!(
        lengths[1] < lengths[0] && lengths[0] < lengths[2],
        "{lengths:?}"
    );
    for network in [false, true] {
        let program = seccomp::program(&network.into());
        assert!(
            matches!(&program, Ok(program) if !program.is_empty()),
            "{program:?}"
        );
        if let Ok(program) = program {
            assert_eq!(seccomp::program_bytes(&program).len(), program.len() * 8);
        }
    }
}
