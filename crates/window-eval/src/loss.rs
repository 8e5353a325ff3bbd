//! What the model lost: the two measures of a strategy's harm, computed against the recorded
//! agent's own later actions, each counted event listed as a [`LossEvent`] so it can be audited.
//!
//! The recorded agent saw the whole history (or its CLI's own compaction); the replay asks, at
//! each of its model calls, what it would have been missing under the strategy. Calls are
//! numbered from 0 in the recording's order; a message *left* the window at the call whose
//! visit removed or masked it (it is absent from that call's request on).
//!
//! ## Terms
//! A *term* is a token of a text that looks like a path, a file name or an identifier
//! ([`terms_of`]): it holds `/`, `_`, `::`, a digit after a letter, a dot between letters, or a
//! lower-case letter followed by an upper-case one. A plain English word is never a term.
//! - Texts are tool output, message text, and a tool call's *decoded* arguments: the JSON is
//!   parsed and its string values taken (a key only when it looks like a path: keys such as
//!   `file_path` are the tool's schema, not something the model read).
//! - A backslash escape left in text (`\n`, `\t`, `\"`, `\\`, `\u00e9`… written as characters,
//!   as recordings that encode JSON twice hold them) separates tokens: `\nFixes` gives no term.
//! - A path is normalised: surrounding quotes and backticks, leading `./`, repeated `/` and a
//!   trailing `/` or `:line:col` are dropped. A path matches another when they share their
//!   whole text or an ending of at least two components (`pkg/a/x.go` matches
//!   `/home/me/repo/pkg/a/x.go`, the same file under the working directory); its file name
//!   alone keeps it in view but never makes it lost. A path in view also keeps its directory
//!   (and that directory's endings) and every ancestor as written in view, so the working
//!   directory, which the unrecorded system prompt names, is never lost while a path under it
//!   is in view. An action's bare file name that is also the end of one of its paths is needed
//!   as that path only; `/dev/null`, `/dev/std*` and `/tmp` are never needed.
//!
//! ## evicted-before-use
//! A call counts (one [`LossEvent`]) when its action (the tool calls the model made in answer)
//! names a term that the history held before the call only in content the strategy had
//! removed or masked by then: no message still in the window, no stage note (drop notice,
//! summary) and no masked placeholder holds it, and neither the system prompt nor the user's
//! current request (the last user message a person wrote before the call) names it. The event
//! names the first such term, the newest removed message that held it and the call at which
//! that message left. The share is over the calls that made at least one tool call.
//!
//! ## re-fetch
//! A tool call counts (one [`LossEvent`]) when it fetches again content the strategy removed or
//! masked, and nothing changed that content in between:
//! - a read (`Read`, `read_file`, `view`, an editor tool's `view` command) is the same fetch as
//!   an earlier read of the same path *and* line range (`offset`/`limit`, `view_range`, or the
//!   line numbers its output starts and ends with; no range is the whole file); an edit, a write
//!   or a shell command that changes files (`sed -i`, a redirect, `mv`, `git checkout`, a
//!   formatter…) naming that path, or one naming no path, between the two makes the read
//!   legitimate;
//! - any other tool is the same fetch as an earlier call of the same name with the same
//!   arguments (compared as JSON values); any change to any file in between makes it
//!   legitimate (a test run after an edit is new information);
//! - a call that changes files is never a fetch.
//!
//! Among the earlier identical fetches since the last change, at least one result must be gone
//! (removed or masked) and none still in the window (a repeat made with its output in view was
//! made for another reason). The event names the tool and what it fetched, the newest gone
//! result and the call at which it left. The share is over all tool calls of the replayed calls.
//!
//! ## Limits and precision
//! A name the model rebuilt from memory or spelled differently is not seen; an action that
//! needed removed prose is not seen either. Both measures read what the recorded agent did,
//! not what an agent under the strategy would have done next: they count the places where the
//! strategy would have hurt, not the outcome.
//!
//! Precision checked by hand on the shared corpus (`--events`, default strategies, session
//! files read around each event; "real" = the action needed something only removed content
//! had told the agent):
//! - evicted-before-use, two samples of 20 taken while the rules above were being settled:
//!   14/20 real before the directory rules (false: `and/or` in prose read as a path; two
//!   directories named only inside longer visible paths; three working-directory paths), and
//!   12/20 real on a fresh sample before the `/dev/null` and file-name rules (false: five
//!   `/dev/null`, a file name matching another directory's file, the flag `--noEmit`, the
//!   common identifier `createdAt` matching unrelated code). The rules since remove 11 of
//!   those 14 false events; what remains wrong is prose with slashes and common identifiers.
//! - re-fetch: strict re-fetches are rare in this corpus (1 decision, counted under two
//!   default strategies; 3 under `sliding-window/2` and `observation-masking/3`): of the 3, 1
//!   is a re-run of an unchanged lint (real), 1 a `cat` of a file the agent had just rewritten
//!   through a heredoc the SpecStory render shows only as prose (false: the change is not a
//!   tool call), 1 a re-run of a command the person had rejected the first time (false: the
//!   first had no output to lose).

mod fetch;

use std::collections::{BTreeMap, BTreeSet};

use panewise_window::{Message, Role, ToolCall};
use serde::Serialize;

/// Where one message of the recorded history stands in the window at a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Not yet part of the history at this call.
    Unsent,
    /// In the window as recorded.
    Visible,
    /// In the window with its content replaced (observation masking), since the call with
    /// this index.
    Masked(usize),
    /// Removed from the window (dropped or folded into a summary) at the call with this index.
    Removed(usize),
}

impl Standing {
    /// The call at which the message left the window, when it did.
    pub fn left_at(self) -> Option<usize> {
        match self {
            Standing::Masked(at) | Standing::Removed(at) => Some(at),
            Standing::Unsent | Standing::Visible => None,
        }
    }
}

/// The two kinds of loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LossKind {
    /// An action named a term held only by removed or masked content.
    EvictedBeforeUse,
    /// A tool call fetched again content the strategy removed or masked.
    Refetch,
}

impl LossKind {
    /// The name written in event files.
    pub fn as_str(self) -> &'static str {
        match self {
            LossKind::EvictedBeforeUse => "evicted_before_use",
            LossKind::Refetch => "refetch",
        }
    }
}

/// One counted loss, for audit: each count of [`crate::replay::Figures`] is one of these.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LossEvent {
    /// The index of the call whose answer needed the content (from 0, in recording order).
    pub call: usize,
    /// Which measure counted it.
    pub kind: LossKind,
    /// What matched: the normalised term, or for a re-fetch the tool and what it fetched.
    pub term: String,
    /// The call at which that content left the window.
    pub evicted_at: usize,
    /// The history message (index into the recording's messages) that held it.
    pub message: usize,
}

/// The normalised terms of a text: tokens that look like a path, a file name or an identifier,
/// never a plain word, with backslash escapes read as separators. A path also yields its file
/// name when that is itself a term, so `src/app/main.rs` in an action matches `main.rs` in a
/// listing.
pub fn terms_of(text: &str) -> BTreeSet<String> {
    let mut terms = BTreeSet::new();
    let cleaned = without_escapes(text);
    for raw in cleaned.split(|c: char| !is_term_char(c)) {
        let Some(token) = normalized_token(raw) else {
            continue;
        };
        if token.contains('/') {
            if let Some(last) = token.rsplit('/').next() {
                if is_identifier_like(last) {
                    terms.insert(last.to_string());
                }
            }
            terms.insert(token);
        } else if is_identifier_like(&token) {
            terms.insert(token);
        }
    }
    terms
}

/// Every form a text's terms match under ([`forms_of`] over [`terms_of`]): what a message
/// is indexed by, and what a stage note or a masked placeholder is searched by.
pub fn text_forms(text: &str) -> BTreeSet<String> {
    let mut forms = BTreeSet::new();
    for term in terms_of(text) {
        forms.extend(forms_of(&term));
        forms.extend(file_name_of(&term));
        // A file's path names its directories too: `pkg/config/config.go` holds `pkg/config`
        // (and, under the working directory, `/repo/pkg/config` holds it), and every ancestor
        // as written, so the working directory stays in view while any path under it does.
        if let Some((parent, _)) = term.rsplit_once('/') {
            if parent.trim_start_matches('/').contains('/') {
                forms.extend(forms_of(parent));
            }
        }
        for (at, _) in term.match_indices('/').skip(1) {
            if let Some(ancestor) = term.get(..at) {
                if ancestor.trim_start_matches('/').contains('/') {
                    forms.insert(ancestor.to_string());
                }
            }
        }
    }
    forms
}

/// The forms under which `term` matches: itself, and for a path every ending of at least two
/// components (so a path relative to the working directory matches it absolute).
pub fn forms_of(term: &str) -> Vec<String> {
    let mut forms = vec![term.to_string()];
    if term.contains('/') {
        let parts: Vec<&str> = term.split('/').filter(|part| !part.is_empty()).collect();
        for start in 1..parts.len().saturating_sub(1) {
            if let Some(tail) = parts.get(start..) {
                forms.push(tail.join("/"));
            }
        }
    }
    forms
}

/// A path's file name, when it is a term of its own.
fn file_name_of(term: &str) -> Option<String> {
    if !term.contains('/') {
        return None;
    }
    term.rsplit('/')
        .next()
        .filter(|last| is_identifier_like(last))
        .map(str::to_string)
}

/// The text with each backslash escape written as characters replaced by a space: a run of
/// backslashes, then the escape's letter (`n`, `t`, `r`, …, `u` with four hex digits).
fn without_escapes(text: &str) -> String {
    if !text.contains('\\') {
        return text.to_string();
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut index = 0;
    while let Some(&c) = chars.get(index) {
        if c != '\\' {
            out.push(c);
            index += 1;
            continue;
        }
        while chars.get(index) == Some(&'\\') {
            index += 1;
        }
        match chars.get(index) {
            Some('n' | 't' | 'r' | 'b' | 'f' | 'v' | '0' | 'd' | 'w' | 's') => index += 1,
            Some('u') => {
                let hex = chars
                    .get(index + 1..index + 5)
                    .is_some_and(|digits| digits.iter().all(char::is_ascii_hexdigit));
                index += if hex { 5 } else { 1 };
            }
            _ => {}
        }
        out.push(' ');
    }
    out
}

fn is_term_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '.' | '/' | '-' | ':' | '\'')
}

/// A raw token trimmed and normalised, or `None` when it is too short or long to be a term.
fn normalized_token(raw: &str) -> Option<String> {
    let token = raw.trim_end_matches(['.', ':', '-', '/', '\'']);
    let token = token.trim_start_matches([':', '-', '\'']);
    let mut token = strip_line_suffix(token);
    while let Some(rest) = token.strip_prefix("./") {
        token = rest;
    }
    let token = token.trim_end_matches('/');
    if token.len() < 4 || token.len() > 200 {
        return None;
    }
    let mut normalized = String::with_capacity(token.len());
    for c in token.chars() {
        if c == '/' && normalized.ends_with('/') {
            continue;
        }
        normalized.push(c);
    }
    if normalized.contains('/') && !normalized.chars().any(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    Some(normalized)
}

/// `path.rs:12:5` and `path.rs:12` name the file `path.rs`.
fn strip_line_suffix(token: &str) -> &str {
    let mut rest = token;
    while let Some((head, tail)) = rest.rsplit_once(':') {
        if !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) {
            rest = head;
        } else {
            break;
        }
    }
    rest
}

/// A token that is not a plain word: it holds an underscore, a digit after a letter, a dot
/// between letters (a file name, a module path), `::`, or a lower-case letter followed by an
/// upper-case one (camelCase, `TypeError`).
fn is_identifier_like(token: &str) -> bool {
    if token.len() < 4 || !token.chars().any(|c| c.is_alphabetic()) {
        return false;
    }
    if token.contains("::") || token.contains('_') {
        return true;
    }
    let bytes = token.as_bytes();
    let mut previous: Option<u8> = None;
    for (index, byte) in bytes.iter().enumerate() {
        if let Some(before) = previous {
            if before.is_ascii_lowercase() && byte.is_ascii_uppercase() {
                return true;
            }
            if before.is_ascii_alphabetic() && byte.is_ascii_digit() {
                return true;
            }
            if *byte == b'.' {
                let after = bytes.get(index + 1).copied();
                if before.is_ascii_alphanumeric() && after.is_some_and(|a| a.is_ascii_alphabetic())
                {
                    return true;
                }
            }
        }
        previous = Some(*byte);
    }
    false
}

/// A key of a tool's arguments that names a file rather than a parameter of the schema.
fn is_path_like(token: &str) -> bool {
    token.contains('/')
        || token
            .rsplit_once('.')
            .is_some_and(|(stem, ext)| !stem.is_empty() && (1..=5).contains(&ext.len()))
}

/// The texts a tool call's arguments hold: the string values of the decoded JSON (and its keys
/// that look like paths), or the arguments as written when they are not JSON.
pub fn argument_texts(args: &str) -> Vec<String> {
    fn walk(value: &serde_json::Value, out: &mut Vec<String>) {
        match value {
            serde_json::Value::String(text) => out.push(text.clone()),
            serde_json::Value::Array(items) => items.iter().for_each(|item| walk(item, out)),
            serde_json::Value::Object(map) => {
                for (key, item) in map {
                    if is_path_like(key) {
                        out.push(key.clone());
                    }
                    walk(item, out);
                }
            }
            _ => {}
        }
    }
    match serde_json::from_str::<serde_json::Value>(args) {
        Ok(value) => {
            let mut out = Vec::new();
            walk(&value, &mut out);
            out
        }
        Err(_) => vec![args.to_string()],
    }
}

/// The terms of a tool call's decoded arguments.
pub fn call_terms(call: &ToolCall) -> BTreeSet<String> {
    let mut terms = BTreeSet::new();
    for text in argument_texts(&call.args) {
        terms.extend(terms_of(&text));
    }
    terms
}

/// Paths every system has, never learned from a session's content.
const SYSTEM_PATHS: &[&str] = &[
    "/dev/null",
    "/dev/stdin",
    "/dev/stdout",
    "/dev/stderr",
    "/tmp",
];

/// One term an action needs: what it is shown as, and the forms it matches under.
#[derive(Debug, Clone)]
struct Need {
    term: String,
    /// Forms whose holders can make it lost (and keep it in view).
    forms: Vec<String>,
    /// A form that only keeps it in view: a path's file name.
    in_view_also: Option<String>,
}

/// An earlier identical fetch of one tool call: what is shown, and the results since the
/// last change.
#[derive(Debug, Clone)]
struct Repeat {
    term: String,
    results: Vec<usize>,
}

/// What one recording's actions name, indexed once and shared by every strategy's replay.
#[derive(Debug, Clone)]
pub struct LossIndex {
    /// Per form, the history messages holding it, in order.
    postings: BTreeMap<String, Vec<usize>>,
    /// Per assistant message, the terms its tool calls' arguments name.
    needs: BTreeMap<usize, Vec<Need>>,
    /// Per tool call (by its assistant message and position), the earlier identical fetches.
    repeats: BTreeMap<(usize, usize), Repeat>,
    /// Forms of the system prompt, always in the window.
    head_forms: BTreeSet<String>,
    /// Per `sent`, the last user message a person wrote among the first `sent` messages.
    request_before: Vec<Option<usize>>,
}

impl LossIndex {
    /// Indexes `messages` (the whole recorded history) and the system prompt.
    pub fn new(messages: &[Message], system: Option<&str>) -> Self {
        let mut postings: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        let mut needs = BTreeMap::new();
        let mut result_of: BTreeMap<&str, usize> = BTreeMap::new();
        for (index, message) in messages.iter().enumerate() {
            if let Some(id) = message.tool_call_id.as_deref() {
                result_of.entry(id).or_insert(index);
            }
        }
        let mut request_before = Vec::with_capacity(messages.len() + 1);
        let mut last_request = None;
        request_before.push(None);
        for (index, message) in messages.iter().enumerate() {
            let mut forms = text_forms(&message.content);
            for call in &message.tool_calls {
                for text in argument_texts(&call.args) {
                    forms.extend(text_forms(&text));
                }
            }
            for form in forms {
                postings.entry(form).or_default().push(index);
            }
            if message.role == Role::User
                && message.injected_by.is_none()
                && message.tool_call_id.is_none()
            {
                last_request = Some(index);
            }
            request_before.push(last_request);
            if message.tool_calls.is_empty() {
                continue;
            }
            let mut named = BTreeSet::new();
            for call in &message.tool_calls {
                named.extend(call_terms(call));
            }
            // A file name the action gives as part of a path is needed as that path, not as
            // any file of that name; a device every system has is no one's content.
            let paths: Vec<String> = named.iter().filter(|t| t.contains('/')).cloned().collect();
            named.retain(|term| {
                !SYSTEM_PATHS.contains(&term.as_str())
                    && (term.contains('/')
                        || !paths.iter().any(|path| path.ends_with(&format!("/{term}"))))
            });
            let list: Vec<Need> = named
                .into_iter()
                .map(|term| Need {
                    forms: forms_of(&term),
                    in_view_also: file_name_of(&term),
                    term,
                })
                .collect();
            needs.insert(index, list);
        }
        let repeats = fetch::repeats(messages, &result_of);
        Self {
            postings,
            needs,
            repeats: repeats
                .into_iter()
                .map(|(key, (term, results))| (key, Repeat { term, results }))
                .collect(),
            head_forms: system.map(text_forms).unwrap_or_default(),
            request_before,
        }
    }

    /// Whether `message` holds `form`.
    fn holds(&self, form: &str, message: usize) -> bool {
        self.postings
            .get(form)
            .is_some_and(|holders| holders.binary_search(&message).is_ok())
    }

    /// The evicted-before-use event of the assistant message `answer`, when its action names a
    /// term held, before `sent`, only by messages the window removed or masked. `standing`
    /// tells each history message's place in the window; `in_notes` says whether a stage note
    /// or masked placeholder in the window holds a form. The event's `call` is `call`.
    pub fn evicted_before_use(
        &self,
        call: usize,
        answer: usize,
        sent: usize,
        standing: &[Standing],
        in_notes: &dyn Fn(&str) -> bool,
    ) -> Option<LossEvent> {
        let needs = self.needs.get(&answer)?;
        let request = self.request_before.get(sent).copied().flatten();
        needs.iter().find_map(|need| {
            let every = need.forms.iter().chain(need.in_view_also.iter());
            for form in every.clone() {
                if self.head_forms.contains(form)
                    || request.is_some_and(|request| self.holds(form, request))
                {
                    return None;
                }
            }
            let mut lost: Option<(usize, usize)> = None;
            for form in every.clone() {
                let Some(holders) = self.postings.get(form) else {
                    continue;
                };
                for &holder in holders.iter().take_while(|&&holder| holder < sent) {
                    match standing.get(holder).copied().unwrap_or(Standing::Unsent) {
                        Standing::Visible => return None,
                        Standing::Masked(at) | Standing::Removed(at) => {
                            if need.forms.iter().any(|f| f == form)
                                && lost.is_none_or(|(newest, _)| holder > newest)
                            {
                                lost = Some((holder, at));
                            }
                        }
                        Standing::Unsent => {}
                    }
                }
            }
            let (message, evicted_at) = lost?;
            if every.clone().any(|form| in_notes(form)) {
                return None;
            }
            Some(LossEvent {
                call,
                kind: LossKind::EvictedBeforeUse,
                term: need.term.clone(),
                evicted_at,
                message,
            })
        })
    }

    /// The re-fetch events of the first `calls` tool calls of the assistant message `answer`:
    /// one per call that fetches again what the window removed or masked, with no earlier
    /// identical fetch since the last change still in view. The events' `call` is `call`.
    pub fn refetches(
        &self,
        call: usize,
        answer: usize,
        calls: usize,
        standing: &[Standing],
    ) -> Vec<LossEvent> {
        let mut events = Vec::new();
        for position in 0..calls {
            let Some(repeat) = self.repeats.get(&(answer, position)) else {
                continue;
            };
            let at = |result: &usize| standing.get(*result).copied();
            if repeat
                .results
                .iter()
                .any(|result| at(result) == Some(Standing::Visible))
            {
                continue;
            }
            let gone = repeat.results.iter().rev().find_map(|result| {
                at(result)
                    .and_then(Standing::left_at)
                    .map(|left| (*result, left))
            });
            if let Some((message, evicted_at)) = gone {
                events.push(LossEvent {
                    call,
                    kind: LossKind::Refetch,
                    term: repeat.term.clone(),
                    evicted_at,
                    message,
                });
            }
        }
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_file_names_and_identifiers_are_terms_plain_words_are_not() {
        let terms = terms_of(
            "see ./src/app/main.rs:12:5 where parse_config fails with TypeError; the value is wrong",
        );
        assert!(terms.contains("src/app/main.rs"), "{terms:?}");
        assert!(terms.contains("main.rs"));
        assert!(terms.contains("parse_config"));
        assert!(terms.contains("TypeError"));
        assert!(!terms.contains("value"));
        assert!(!terms.contains("wrong"));
        assert!(!terms.contains("where"));
    }

    #[test]
    fn module_paths_and_versions_with_letters_are_terms() {
        let terms = terms_of("call serde_json::from_str and test_window_v2 in crate.module");
        assert!(terms.contains("serde_json::from_str"));
        assert!(terms.contains("test_window_v2"));
        assert!(terms.contains("crate.module"));
    }

    #[test]
    fn escapes_written_as_characters_separate_words() {
        let cases: [(&str, &[&str], &[&str]); 5] = [
            (r"done.\nFixes parse_config", &["parse_config"], &["nFixes"]),
            (r"a\tTypeError here", &["TypeError"], &["tTypeError"]),
            (
                r#"\"src/lib.rs\" ok"#,
                &["src/lib.rs"],
                &[r#"\"src/lib.rs"#],
            ),
            (r"x\\nThisWord", &["ThisWord"], &["nThisWord"]),
            (r"caf\u00e9Name_x", &["Name_x"], &["u00e9Name_x"]),
        ];
        for (text, present, absent) in cases {
            let terms = terms_of(text);
            for term in present {
                assert!(terms.contains(*term), "{text}: {terms:?}");
            }
            for term in absent {
                assert!(!terms.contains(*term), "{text}: {terms:?}");
            }
        }
    }

    #[test]
    fn paths_are_normalised() {
        for (text, path) in [
            ("`./pkg//a/x.go`", "pkg/a/x.go"),
            ("'src/lib/'", "src/lib"),
            ("\"/abs/repo/x.rs:3\"", "/abs/repo/x.rs"),
        ] {
            assert!(
                terms_of(text).contains(path),
                "{text}: {:?}",
                terms_of(text)
            );
        }
        assert!(forms_of("/home/me/repo/pkg/x.go").contains(&"pkg/x.go".to_string()));
    }

    #[test]
    fn decoded_arguments_give_values_and_path_keys_only() {
        let texts = argument_texts(r#"{"file_path":"a/b.rs","edits":{"c/d.rs":"x"},"n":3}"#);
        let texts: BTreeSet<String> = texts.into_iter().collect();
        let expected: BTreeSet<String> = ["x", "c/d.rs", "a/b.rs"].map(String::from).into();
        assert_eq!(texts, expected);
        assert_eq!(argument_texts("not json"), vec!["not json".to_string()]);
    }
}
