//! `ask_user`: the model asks the person a question, in free text or as a choice, and waits
//! for the answer. The own loop answers it itself: the question goes into the reducer's
//! question queue (`Msg::QuestionAsked`), every front end shows it (the dashboard, `attach`,
//! `panewise answer`, the API's `session/answer`), and the answer comes back as the call's
//! result. Nothing runs and nothing changes, so it runs in every approval mode.
//!
//! Choices travel inside the question's one line (`Which colour? [1] red [2] blue`), so the
//! reducer's question sets stay plain strings and every front end that shows a question
//! shows the choices; an answer that is a choice's number is read as that choice
//! ([`result`]).

use serde::Deserialize;
use serde_json::{json, Value};

use super::ToolOutcome;

/// The name the model calls it by.
pub const NAME: &str = "ask_user";

/// What it does, for the model.
pub const DESCRIPTION: &str = "Ask the person a question and wait for their answer. Use it \
only when you are blocked on a decision that is genuinely theirs: one the request, the code \
and sensible defaults do not settle. Give `question`, and `choices` when the answer is one of \
a few options (the person may still answer in their own words). The result is their answer.";

/// The most choices a question offers: the dashboard picks them with the keys 1 to 9.
pub const MAX_CHOICES: usize = 9;

/// The opening of every answered call's result.
pub const ANSWERED: &str = "The person answered: ";

/// The arguments.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The question.
    pub question: String,
    /// The options offered, if any.
    #[serde(default)]
    pub choices: Vec<String>,
}

/// The JSON schema of [`Args`].
pub fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "question": {"type": "string", "description": "The question, in one sentence."},
            "choices": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_CHOICES,
                        "description": "Options to pick from (at most 9); omit for free text."}
        },
        "required": ["question"],
        "additionalProperties": false
    })
}

impl Args {
    /// The question as every front end shows it: one line, the choices numbered after it.
    pub fn shown(&self) -> String {
        let mut line = one_line(&self.question);
        for (index, choice) in self.choices.iter().take(MAX_CHOICES).enumerate() {
            line.push_str(&format!(
                " [{}] {}",
                index.saturating_add(1),
                one_line(choice)
            ));
        }
        line
    }
}

/// The call's result, from the answers the person gave (empty when nobody could answer):
/// an answer that is a choice's number (`2`) or a choice's text in any case is that choice.
pub fn result(args: &Args, answers: &[String]) -> ToolOutcome {
    let Some(answer) = answers.first().map(|answer| answer.trim()) else {
        return ToolOutcome::error(
            "Nobody could answer the question (no person is attached to this session); \
             decide by yourself and say what you assumed."
                .to_owned(),
        );
    };
    let chosen = answer
        .parse::<usize>()
        .ok()
        .and_then(|number| number.checked_sub(1))
        .and_then(|index| self_choice(args, index))
        .or_else(|| {
            args.choices
                .iter()
                .find(|choice| choice.trim().eq_ignore_ascii_case(answer))
                .map(String::as_str)
        });
    match chosen {
        Some(choice) => ToolOutcome::ok(format!("{ANSWERED}{choice}")),
        None => ToolOutcome::ok(format!("{ANSWERED}{answer}")),
    }
}

fn self_choice(args: &Args, index: usize) -> Option<&str> {
    (index < MAX_CHOICES)
        .then(|| args.choices.get(index))
        .flatten()
        .map(String::as_str)
}

/// `text` on one line: line breaks and tabs become spaces.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(question: &str, choices: &[&str]) -> Args {
        Args {
            question: question.to_owned(),
            choices: choices.iter().map(|c| (*c).to_owned()).collect(),
        }
    }

    #[test]
    fn a_question_shows_on_one_line_with_its_choices_numbered() {
        let cases = [
            (args("Which colour?", &[]), "Which colour?"),
            (
                args("Which\ncolour?", &["red", "deep\tblue"]),
                "Which colour? [1] red [2] deep blue",
            ),
        ];
        for (args, shown) in cases {
            assert_eq!(args.shown(), shown);
        }
    }

    #[test]
    fn an_answer_is_a_choice_by_number_or_text_else_the_words_given() {
        let colour = args("Which colour?", &["red", "blue"]);
        let cases: [(&[&str], bool, &str); 7] = [
            (&["2"], false, "The person answered: blue"),
            (&[" 1 "], false, "The person answered: red"),
            (&["BLUE"], false, "The person answered: blue"),
            (&["3"], false, "The person answered: 3"),
            (&["0"], false, "The person answered: 0"),
            (
                &["green, please"],
                false,
                "The person answered: green, please",
            ),
            (&[], true, "Nobody could answer"),
        ];
        for (answers, is_error, starts) in cases {
            let answers: Vec<String> = answers.iter().map(|a| (*a).to_owned()).collect();
            let outcome = result(&colour, &answers);
            assert_eq!(outcome.is_error, is_error, "{answers:?}");
            assert!(
                outcome.content.starts_with(starts),
                "{answers:?}: {}",
                outcome.content
            );
        }
    }

    #[test]
    fn the_arguments_need_a_question_and_nothing_else() {
        let cases = [
            (json!({"question": "Why?"}), true),
            (json!({"question": "Why?", "choices": ["a"]}), true),
            (json!({"choices": ["a"]}), false),
            (json!({"question": "Why?", "urgent": true}), false),
        ];
        for (value, parses) in cases {
            assert_eq!(Args::deserialize(&value).is_ok(), parses, "{value}");
        }
    }
}
