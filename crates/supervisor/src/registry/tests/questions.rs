//! `session/answer`: the answer goes to the question waiting, by its id, as who answered;
//! with no question waiting (nothing, or an approval) it is refused as `not_waiting`.

use panewise_pane_state::log::Actor;
use panewise_pane_state::Msg;
use serde_json::json;

use super::*;

fn question(id: &str) -> Vec<Msg> {
    vec![Msg::QuestionAsked {
        id: id.to_owned(),
        questions: vec!["Which colour? [1] red [2] blue".to_owned()],
        turn: None,
    }]
}

#[test]
fn an_answer_goes_to_the_question_waiting_and_is_refused_when_none_waits() {
    let mut h = Harness::new(limits());
    connected(&mut h, &[A]);
    h.host(A, "s1");
    let refused = h.request(A, "session/answer", json!({"session": "s1", "text": "2"}));
    assert!(controls(&refused).is_empty());
    assert_eq!(
        sent(&refused, A)[0]["error"]["code"],
        json!(-32003),
        "not_waiting"
    );
    h.record("s1", 10, asked("r1"));
    let approval = h.request(A, "session/answer", json!({"session": "s1", "text": "2"}));
    assert!(
        controls(&approval).is_empty(),
        "an approval is not a question"
    );
    assert_eq!(sent(&approval, A)[0]["error"]["code"], json!(-32003));
    h.record(
        "s1",
        11,
        vec![Msg::ApprovalAnswered {
            id: Some("r1".to_owned()),
            approved: true,
            for_session: false,
            by: None,
            reason: None,
        }],
    );
    h.record("s1", 12, question("q1"));
    let answered = h.request(A, "session/answer", json!({"session": "s1", "text": "2"}));
    match controls(&answered).as_slice() {
        [(session, Control::AnswerQuestion { id, answers, by })] => {
            assert_eq!(session, "s1");
            assert_eq!(id, "q1");
            assert_eq!(answers, &["2".to_owned()]);
            assert!(matches!(by, Actor::Api { .. }), "{by:?}");
        }
        other => panic!("{other:?}"),
    }
}
