//! Output caps: a tool result longer than the cap keeps its head and ends with a note saying
//! how much was cut, in bytes and in lines, so the model knows the text is incomplete.

/// The head of a byte stream, up to a cap, and a count of what was cut after it.
#[derive(Debug, Clone)]
pub struct CappedText {
    cap: usize,
    kept: Vec<u8>,
    cut_bytes: u64,
    cut_newlines: u64,
    cut_ends_with_newline: bool,
}

impl CappedText {
    /// An empty buffer keeping at most `cap` bytes.
    pub fn new(cap: usize) -> Self {
        Self {
            cap,
            kept: Vec::new(),
            cut_bytes: 0,
            cut_newlines: 0,
            cut_ends_with_newline: false,
        }
    }

    /// Appends `chunk`: what fits under the cap is kept, the rest only counted.
    pub fn push(&mut self, chunk: &[u8]) {
        let room = self.cap.saturating_sub(self.kept.len()).min(chunk.len());
        let (keep, cut) = chunk.split_at(room);
        self.kept.extend_from_slice(keep);
        self.count_cut(cut);
    }

    fn count_cut(&mut self, cut: &[u8]) {
        if let Some(last) = cut.last() {
            self.cut_bytes = self.cut_bytes.saturating_add(cut.len() as u64);
            let newlines = cut.iter().filter(|byte| **byte == b'\n').count() as u64;
            self.cut_newlines = self.cut_newlines.saturating_add(newlines);
            self.cut_ends_with_newline = *last == b'\n';
        }
    }

    /// True when something was cut.
    pub fn was_cut(&self) -> bool {
        self.cut_bytes > 0
    }

    /// The kept text (invalid UTF-8 replaced), followed by the cut note when something was cut.
    pub fn finish(mut self) -> String {
        if self.was_cut() {
            // A character split by the cap goes to the cut part whole, not as a replacement
            // character.
            if let Err(error) = std::str::from_utf8(&self.kept) {
                if error.error_len().is_none() {
                    let partial = self.kept.split_off(error.valid_up_to());
                    self.cut_bytes = self.cut_bytes.saturating_add(partial.len() as u64);
                }
            }
        }
        let mut text = String::from_utf8_lossy(&self.kept).into_owned();
        if self.was_cut() {
            // A cut that ends without a newline still holds a (last, unfinished) line.
            let lines = self
                .cut_newlines
                .saturating_add(u64::from(!self.cut_ends_with_newline));
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!(
                "[output cut: {} more bytes ({lines} {}) not shown; the cap is {} bytes]",
                self.cut_bytes,
                if lines == 1 { "line" } else { "lines" },
                self.cap
            ));
        }
        text
    }
}

/// `text` cut to `cap` bytes, with the cut note when it was longer.
pub fn cap_text(text: &str, cap: usize) -> String {
    let mut capped = CappedText::new(cap);
    capped.push(text.as_bytes());
    capped.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_notes_count_bytes_and_lines() {
        // (text, cap, expected)
        let cases: &[(&str, usize, &str)] = &[
            ("short", 10, "short"),
            ("exactly10!", 10, "exactly10!"),
            (
                "one\ntwo\nthree\n",
                4,
                "one\n[output cut: 10 more bytes (2 lines) not shown; the cap is 4 bytes]",
            ),
            (
                "abcdef",
                3,
                "abc\n[output cut: 3 more bytes (1 line) not shown; the cap is 3 bytes]",
            ),
            // "é" is two bytes: the cap falls inside it, so it is cut whole.
            (
                "aé",
                2,
                "a\n[output cut: 2 more bytes (1 line) not shown; the cap is 2 bytes]",
            ),
        ];
        for (text, cap, expected) in cases {
            assert_eq!(cap_text(text, *cap), *expected, "{text:?} cap {cap}");
        }
    }

    #[test]
    fn pushes_in_pieces_count_like_one_push() {
        let mut pieces = CappedText::new(5);
        for piece in ["ab", "cd\ne", "f\ng", "h"] {
            pieces.push(piece.as_bytes());
        }
        assert_eq!(pieces.finish(), cap_text("abcd\nef\ngh", 5));
    }
}
