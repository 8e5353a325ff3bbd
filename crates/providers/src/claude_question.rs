//! Claude Code's `AskUserQuestion`: the tool reaches the host as a permission request
//! (`can_use_tool`) whose input holds `questions` (each a `question`, a `header`, `options`
//! with a `label` and a `description`, and `multiSelect`). It is a question to the person,
//! not an approval: the host shows each question on one line with its options numbered
//! ([`question_lines`]), and answers by allowing the tool with the input it asked for plus
//! `answers`, each question's text mapped to the label chosen or the person's own words
//! ([`answered_input`]), which is how Claude Code's SDK hosts answer it.

use serde_json::{Map, Value};

/// The tool's name.
pub const TOOL: &str = "AskUserQuestion";

/// The most options a question shows numbered: the dashboard picks them with 1 to 9.
const MAX_OPTIONS: usize = 9;

fn questions(input: &Value) -> impl Iterator<Item = &Value> {
    input["questions"].as_array().into_iter().flatten()
}

fn labels(question: &Value) -> Vec<&str> {
    question["options"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|option| option["label"].as_str())
        .collect()
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Each question of the tool's input on one line, its options numbered after it
/// (`Which colour? [1] red [2] blue`); a question without text is left out.
pub fn question_lines(input: &Value) -> Vec<String> {
    questions(input)
        .filter_map(|question| {
            let mut line = one_line(question["question"].as_str()?);
            for (index, label) in labels(question).into_iter().take(MAX_OPTIONS).enumerate() {
                line.push_str(&format!(
                    " [{}] {}",
                    index.saturating_add(1),
                    one_line(label)
                ));
            }
            Some(line)
        })
        .collect()
}

/// The input to allow the tool with: the one it asked for, plus `answers` mapping each
/// question's text to its answer. Answer `n` goes to question `n` (the last answer to the
/// questions past the answers given); an answer that is an option's number or label is that
/// label, anything else the person's own words (Claude Code's "Other").
pub fn answered_input(input: &Value, answers: &[String]) -> Value {
    let mut mapped = Map::new();
    for (index, question) in questions(input).enumerate() {
        let Some(text) = question["question"].as_str() else {
            continue;
        };
        let Some(answer) = answers.get(index).or(answers.last()).map(|a| a.trim()) else {
            continue;
        };
        let labels = labels(question);
        let chosen = answer
            .parse::<usize>()
            .ok()
            .and_then(|number| number.checked_sub(1))
            .filter(|index| *index < MAX_OPTIONS)
            .and_then(|index| labels.get(index).copied())
            .or_else(|| {
                labels
                    .iter()
                    .find(|label| label.eq_ignore_ascii_case(answer))
                    .copied()
            })
            .unwrap_or(answer);
        mapped.insert(text.to_owned(), Value::String(chosen.to_owned()));
    }
    let mut updated = match input {
        Value::Object(fields) => fields.clone(),
        _ => Map::new(),
    };
    updated.insert("answers".to_owned(), Value::Object(mapped));
    Value::Object(updated)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn asked() -> Value {
        json!({"questions": [
            {"question": "Which colour?", "header": "Colour", "multiSelect": false,
             "options": [{"label": "red", "description": "warm"},
                         {"label": "blue", "description": "cool"}]},
            {"question": "Which\nsize?", "header": "Size", "multiSelect": false,
             "options": [{"label": "small", "description": ""}]}
        ]})
    }

    #[test]
    fn each_question_is_one_line_with_its_options_numbered() {
        assert_eq!(
            question_lines(&asked()),
            ["Which colour? [1] red [2] blue", "Which size? [1] small"]
        );
        assert!(question_lines(&json!({"questions": "no"})).is_empty());
        assert!(question_lines(&json!({"questions": [{"header": "x"}]})).is_empty());
    }

    #[test]
    fn answers_map_each_question_to_a_label_or_the_persons_words() {
        // (the answers given, the answers the tool is allowed with)
        let cases: [(&[&str], Value); 5] = [
            (
                &["2", "1"],
                json!({"Which colour?": "blue", "Which\nsize?": "small"}),
            ),
            (
                &["RED"],
                json!({"Which colour?": "red", "Which\nsize?": "RED"}),
            ),
            (
                &["green", "9"],
                json!({"Which colour?": "green", "Which\nsize?": "9"}),
            ),
            (
                &["0", "small"],
                json!({"Which colour?": "0", "Which\nsize?": "small"}),
            ),
            (&[], json!({})),
        ];
        for (answers, expected) in cases {
            let answers: Vec<String> = answers.iter().map(|a| (*a).to_owned()).collect();
            let updated = answered_input(&asked(), &answers);
            assert_eq!(updated["answers"], expected, "{answers:?}");
            assert_eq!(
                updated["questions"],
                asked()["questions"],
                "the input is kept"
            );
        }
    }
}
