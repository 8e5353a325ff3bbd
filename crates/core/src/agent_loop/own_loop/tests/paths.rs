//! A file tool's paths in the own loop: facts the shell finds on disk, asked for with
//! [`Effect::ResolvePaths`] before the call is decided, never read by the core itself.

use super::*;
use crate::approval::PathFact;
use crate::error::WriteRefusal;

const WRITE: &str = r#"{"path": "notes/a.txt", "content": "hi"}"#;

/// The core up to the point where its `write_file` call is due, in `mode`.
fn write_due(mode: ApprovalMode) -> OwnLoop {
    let mut core = own_loop(mode);
    start_turn(&mut core, "write it");
    event(&mut core, tool_call("c1", "write_file", WRITE), 1_010);
    let (ended, _) = call_ended(100, 0, 20);
    event(&mut core, ended, 1_011);
    step(&mut core, LoopInput::ModelEnded { at_ms: 1_012 });
    core
}

fn resolved(core: &mut OwnLoop, id: &str, inside: Result<bool, WriteRefusal>) -> Vec<Effect> {
    let mut facts = PathFacts::new();
    facts.insert(
        "notes/a.txt".to_owned(),
        PathFact {
            system: None,
            write: inside,
        },
    );
    step(
        core,
        LoopInput::PathsResolved {
            id: id.to_owned(),
            facts,
            at_ms: 1_014,
        },
    )
}

/// Rule: a call that names a path is decided only over the facts the shell found for it: the
/// core asks for them, waits (a stray answer changes nothing), and decides the same call as
/// the policy's table says for what was found.
#[test]
fn a_file_tool_s_paths_are_resolved_by_the_shell_before_it_is_decided() {
    // (what the shell found, the mode, whether the tool starts, whether the person is asked)
    let cases = [
        (Ok(true), ApprovalMode::Auto, true, false),
        (Ok(false), ApprovalMode::Auto, false, true),
        (Ok(true), ApprovalMode::Ask, false, true),
        (Ok(false), ApprovalMode::FullAccess, true, false),
    ];
    for (inside, mode, starts, asks) in cases {
        let mut core = write_due(mode);
        assert_effects!(
            settle(&mut core, 1_013),
            vec![Effect::ResolvePaths {
                id: "c1".to_owned(),
                paths: vec!["notes/a.txt".to_owned()],
            }]
        );
        assert!(!core.is_due(true, false), "{mode:?}: waits for the facts");
        assert_effects!(resolved(&mut core, "c2", Ok(true)), vec![]);
        let effects = resolved(&mut core, "c1", inside.clone());
        let started = effects
            .iter()
            .any(|effect| matches!(effect, Effect::RunTool { id, .. } if id == "c1"));
        let asked = effects
            .iter()
            .any(|effect| matches!(effect, Effect::Reduce(Msg::ApprovalRequested { .. })));
        assert_eq!(
            (started, asked),
            (starts, asks),
            "{mode:?} {inside:?}: {effects:?}"
        );
    }
}

/// Rule: a path the write check refuses is denied in every mode, and the model reads why; an
/// interrupt while the facts are sought answers the call as interrupted.
#[test]
fn a_refused_path_is_denied_and_an_interrupt_while_resolving_answers_the_call() {
    let refusal = WriteRefusal::NotAFile {
        path: PathBuf::from("/work/project/notes/a.txt"),
        kind: "a named pipe (FIFO)",
    };
    for mode in ApprovalMode::ALL {
        let mut core = write_due(mode);
        settle(&mut core, 1_013);
        let effects = resolved(&mut core, "c1", Err(refusal.clone()));
        assert!(
            !effects
                .iter()
                .any(|effect| matches!(effect, Effect::RunTool { .. })),
            "{mode:?}: {effects:?}"
        );
        assert!(
            format!("{effects:?}").contains("write_file refuses this path")
                || mode == ApprovalMode::ReadOnly,
            "{mode:?}: {effects:?}"
        );
    }
    let mut core = write_due(ApprovalMode::Auto);
    settle(&mut core, 1_013);
    let effects = step(&mut core, LoopInput::Interrupt { at_ms: 1_014 });
    assert!(
        format!("{effects:?}").contains(INTERRUPTED_RESULT),
        "{effects:?}"
    );
    assert_effects!(resolved(&mut core, "c1", Ok(true)), vec![]);
}
