//! `ask_user` in the own loop: the call's question goes into the reducer's question queue
//! (`Msg::QuestionAsked`, which the session records in the transcript as it does every
//! agent's), and the person's answer, whoever gives it first, is the call's result
//! ([`crate::tools::ask_user::result`]). Pure, as the loop is.

use super::*;

impl OwnLoop {
    /// Puts an `ask_user` call's question to the person; `started` is the call's start, for
    /// the pane. The loop waits ([`UnderWay::Question`]) until [`LoopInput::Answered`].
    pub(super) fn ask(
        &mut self,
        args: crate::tools::ask_user::Args,
        started: ProviderEvent,
    ) -> Vec<Effect> {
        let shown = args.shown();
        let UnderWay::Tool { id, name, .. } =
            std::mem::replace(&mut self.under_way, UnderWay::Nothing)
        else {
            return Vec::new();
        };
        self.under_way = UnderWay::Question {
            id: id.clone(),
            name,
            args,
        };
        vec![
            Effect::Emit(started),
            Effect::Reduce(Msg::QuestionAsked {
                id,
                questions: vec![shown],
                turn: None,
            }),
        ]
    }

    /// The answer to the question an `ask_user` call put: the call's result. An answer for
    /// any other call changes nothing.
    pub(super) fn answered(&mut self, id: &str, answers: &[String], at_ms: u64) -> Vec<Effect> {
        let (name, args) = match std::mem::replace(&mut self.under_way, UnderWay::Nothing) {
            UnderWay::Question {
                id: asked,
                name,
                args,
            } if asked == id => (name, args),
            other => {
                self.under_way = other;
                return Vec::new();
            }
        };
        let outcome = crate::tools::ask_user::result(&args, answers);
        self.under_way = UnderWay::Tool {
            id: id.to_owned(),
            name,
            summary: args.shown(),
        };
        self.tool_finished(outcome, at_ms)
    }
}
