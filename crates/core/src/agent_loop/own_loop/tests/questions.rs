//! `ask_user` in the own loop.

use super::*;

/// Rule: `ask_user` runs in every approval mode; its question waits in the reducer's queue,
/// an answer for another call changes nothing, and the answer (a choice's number read as the
/// choice; none: nobody could answer) is the call's result.
#[test]
fn an_ask_user_question_waits_for_its_answer_and_the_answer_is_the_result() {
    const ASK: &str = r#"{"question": "Which colour?", "choices": ["red", "blue"]}"#;
    // (the mode, the answers given, the result's content, whether it is an error)
    let cases: [(ApprovalMode, &[&str], &str, bool); 4] = [
        (
            ApprovalMode::ReadOnly,
            &["2"],
            "The person answered: blue",
            false,
        ),
        (
            ApprovalMode::Ask,
            &["green"],
            "The person answered: green",
            false,
        ),
        (
            ApprovalMode::FullAccess,
            &["RED"],
            "The person answered: red",
            false,
        ),
        (ApprovalMode::Auto, &[], "Nobody could answer", true),
    ];
    for (mode, answers, content, is_error) in cases {
        let mut core = own_loop(mode);
        start_turn(&mut core, "pick a colour");
        event(&mut core, tool_call("c1", "ask_user", ASK), 1_010);
        step(&mut core, LoopInput::ModelEnded { at_ms: 1_011 });
        let asked = settle(&mut core, 1_012);
        let shown = "Which colour? [1] red [2] blue".to_owned();
        assert!(
            asked.contains(&Effect::Reduce(Msg::QuestionAsked {
                id: "c1".to_owned(),
                questions: vec![shown],
                turn: None,
            })),
            "{}: {asked:?}",
            mode.name()
        );
        assert!(!asked
            .iter()
            .any(|effect| matches!(effect, Effect::RunTool { .. })));
        // Waiting for the person: nothing is due, and a stray answer changes nothing.
        assert!(!core.is_due(true, false));
        let stray = LoopInput::Answered {
            id: "c9".to_owned(),
            answers: vec!["1".to_owned()],
            at_ms: 1_013,
        };
        assert!(step(&mut core, stray).is_empty());
        let answered = step(
            &mut core,
            LoopInput::Answered {
                id: "c1".to_owned(),
                answers: answers.iter().map(|a| (*a).to_owned()).collect(),
                at_ms: 1_014,
            },
        );
        let ended = answered.iter().find_map(|effect| match effect {
            Effect::Emit(ProviderEvent::ToolEnded { status, output, .. }) => {
                Some((*status, output.clone().unwrap_or_default()))
            }
            _ => None,
        });
        let Some((status, output)) = ended else {
            panic!("{}: the call ends: {answered:?}", mode.name());
        };
        assert!(output.starts_with(content), "{}: {output}", mode.name());
        let expected = if is_error {
            ToolStatus::Error
        } else {
            ToolStatus::Success
        };
        assert_eq!(status, expected, "{}", mode.name());
    }
}
