//! Text from a model, a tool or an agent made safe to print on a terminal: every control
//! character, escape sequence and bidirectional override is shown escaped (`\u{1b}`), never
//! interpreted, so a tool's output cannot move the cursor, retitle the window or hide text.

/// `text` with every character a terminal would act on shown as an escape. Line breaks are
/// kept as line breaks (each is preceded by `indent` on the next line) and tabs as tabs; a
/// carriage return is escaped, since it would let a line overwrite itself.
pub fn escape_controls(text: &str, indent: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => {
                out.push('\n');
                out.push_str(indent);
            }
            '\t' => out.push('\t'),
            c if is_unsafe(c) => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    out
}

/// `text` as a table cell of at most `width` characters: [`one_line`] whole when it
/// fits, else cut so that `…` is its last character, so a column stays a column.
pub fn cell(text: &str, width: usize) -> String {
    let whole = one_line(text, width);
    if whole.chars().count() <= width {
        whole
    } else {
        one_line(text, width.saturating_sub(1))
    }
}

/// `text` on one line of at most `max` characters (then `…`): every character a terminal
/// would act on shown escaped, a line break as `\n`, so a command cannot hide a second line.
pub fn one_line(text: &str, max: usize) -> String {
    let mut out = String::new();
    let mut shown = 0_usize;
    for c in text.chars() {
        let piece: String = match c {
            '\n' => "\\n".to_owned(),
            '\t' => " ".to_owned(),
            c if is_unsafe(c) => c.escape_unicode().collect(),
            c => c.to_string(),
        };
        let width = piece.chars().count();
        if shown.saturating_add(width) > max {
            out.push('…');
            return out;
        }
        shown = shown.saturating_add(width);
        out.push_str(&piece);
    }
    out
}

/// C0 and C1 controls, DEL, and the Unicode format characters that reorder or hide text.
fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_shows_every_line_and_escape_and_cuts_at_the_width() {
        assert_eq!(
            one_line("touch x #\r\u{1b}[2Kallow", 80),
            "touch x #\\u{d}\\u{1b}[2Kallow"
        );
        assert_eq!(one_line("a\nb", 10), "a\\nb");
        assert_eq!(one_line("abcdef", 3), "abc…");
        assert_eq!(one_line("abc", 3), "abc");
    }

    #[test]
    fn a_cell_never_outgrows_its_width() {
        assert_eq!(cell("abc", 3), "abc");
        assert_eq!(cell("abcdef", 3), "ab…");
        // An escape is shown whole or not at all.
        assert_eq!(cell("a\u{1b}b", 4), "a…");
        for width in 1..12 {
            for text in ["", "x", "demo-ask-2-with-a-long-name", "a\nb\u{1b}[2J"] {
                assert!(
                    cell(text, width).chars().count() <= width,
                    "{text:?} in {width}"
                );
            }
        }
    }

    #[test]
    fn escapes_are_shown_not_run() {
        let cases = [
            ("plain", "plain"),
            (
                "\u{1b}[2J\u{1b}]0;pwned\u{7}",
                "\\u{1b}[2J\\u{1b}]0;pwned\\u{7}",
            ),
            ("over\rwrite", "over\\u{d}write"),
            ("a\nb", "a\n  b"),
            ("tab\there", "tab\there"),
            ("\u{9b}31m", "\\u{9b}31m"),
            ("abc\u{202e}fed", "abc\\u{202e}fed"),
            ("del\u{7f}", "del\\u{7f}"),
        ];
        for (given, shown) in cases {
            assert_eq!(escape_controls(given, "  "), shown, "{given:?}");
        }
    }
}
