//! A validating, allocation-free scanner over one JSON line, for the hot line shapes where
//! building serde structures for every field would cost more than the decoding itself.
//!
//! It accepts exactly the JSON that `serde_json` accepts, or gives up: every `Err` means "decode
//! this line with the serde path instead", which then either succeeds or reports the error. So
//! the scanner may be stricter than serde (it gives up on surrogate escapes and on deep nesting)
//! but never more lenient.

use std::borrow::Cow;

/// The scanner gave up on the line; decode it with the serde path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GiveUp;

pub(crate) type Scan<T> = Result<T, GiveUp>;

/// `serde_json`'s own nesting limit; deeper input is left to it.
const MAX_DEPTH: u32 = 128;

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// High bits set at the bytes of `word` that are zero. The lowest set bit is exact; bits above
/// a zero byte may be spurious, so only the first match is trusted.
fn zero_bytes(word: u64) -> u64 {
    word.wrapping_sub(ONES) & !word & HIGHS
}

/// High bits at the quotes, backslashes and control characters of `word` (little-endian): the
/// only bytes that end or interrupt the plain run of a JSON string. The lowest mark is exact.
fn string_special_marks(word: u64) -> u64 {
    zero_bytes(word ^ (ONES * u64::from(b'"')))
        | zero_bytes(word ^ (ONES * u64::from(b'\\')))
        | (word.wrapping_sub(ONES * 0x20) & !word & HIGHS)
}

/// The index of the first quote, backslash or control character in `word`.
fn first_string_special(word: u64) -> Option<usize> {
    let marks = string_special_marks(word);
    (marks != 0).then(|| (marks.trailing_zeros() / 8) as usize)
}

/// The little-endian word of the first eight bytes of `chunk` (zero-padded when shorter).
fn word_at(chunk: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    let length = chunk.len().min(8);
    word[..length].copy_from_slice(&chunk[..length]);
    u64::from_le_bytes(word)
}

/// The index of the first `byte` in `haystack`, eight bytes at a time.
pub(crate) fn find_byte(haystack: &[u8], byte: u8) -> Option<usize> {
    let pattern = ONES * u64::from(byte);
    let mut offset = 0;
    // Sixteen bytes per step while nothing matches, then the matching half is searched.
    while let Some(chunk) = haystack.get(offset..offset + 16) {
        let (low, high) = chunk.split_at(8);
        if zero_bytes(word_at(low) ^ pattern) | zero_bytes(word_at(high) ^ pattern) != 0 {
            break;
        }
        offset += 16;
    }
    while let Some(chunk) = haystack.get(offset..offset + 8) {
        let marks = zero_bytes(word_at(chunk) ^ pattern);
        if marks != 0 {
            return Some(offset + (marks.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    haystack
        .get(offset..)?
        .iter()
        .position(|candidate| *candidate == byte)
        .map(|index| offset + index)
}

/// A JSON string as found in the line: the text between its quotes, still escaped if `escaped`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawStr<'a> {
    /// The text between the quotes.
    inner: &'a str,
    escaped: bool,
}

impl<'a> RawStr<'a> {
    /// The string's value, borrowed when it has no escapes.
    pub(crate) fn value(&self) -> Scan<Cow<'a, str>> {
        if self.escaped {
            unescape(self.inner).map(Cow::Owned)
        } else {
            Ok(Cow::Borrowed(self.inner))
        }
    }

    /// Whether the string's value is `expected`, which must need no escaping.
    pub(crate) fn is(&self, expected: &str) -> bool {
        !self.escaped && self.inner == expected
    }
}

/// Decodes the escapes of a string the scanner has validated (surrogate escapes excluded).
fn unescape(inner: &str) -> Scan<String> {
    let mut decoded = String::with_capacity(inner.len());
    let mut rest = inner;
    while let Some(backslash) = rest.find('\\') {
        decoded.push_str(&rest[..backslash]);
        let (character, consumed) = decode_escape(rest.get(backslash..).ok_or(GiveUp)?)?;
        decoded.push(character);
        rest = rest.get(backslash + consumed..).ok_or(GiveUp)?;
    }
    decoded.push_str(rest);
    Ok(decoded)
}

/// The character an escape sequence at the start of `escape` stands for, and its length.
fn decode_escape(escape: &str) -> Scan<(char, usize)> {
    let character = match escape.as_bytes().get(1) {
        Some(b'"') => '"',
        Some(b'\\') => '\\',
        Some(b'/') => '/',
        Some(b'b') => '\u{8}',
        Some(b'f') => '\u{c}',
        Some(b'n') => '\n',
        Some(b'r') => '\r',
        Some(b't') => '\t',
        Some(b'u') => {
            let hex = escape.get(2..6).ok_or(GiveUp)?;
            let code = u32::from_str_radix(hex, 16).map_err(|_| GiveUp)?;
            return Ok((char::from_u32(code).ok_or(GiveUp)?, 6));
        }
        _ => return Err(GiveUp),
    };
    Ok((character, 2))
}

/// A cursor over one line of JSON text.
pub(crate) struct Scanner<'a> {
    text: &'a str,
    pos: usize,
    depth: u32,
}

impl<'a> Scanner<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Scanner {
            text,
            pos: 0,
            depth: 0,
        }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.pos).copied()
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Scan<()> {
        self.skip_whitespace();
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(GiveUp)
        }
    }

    /// After the top-level value: only whitespace may follow.
    pub(crate) fn finish(&mut self) -> Scan<()> {
        self.skip_whitespace();
        if self.pos == self.bytes().len() {
            Ok(())
        } else {
            Err(GiveUp)
        }
    }

    /// Whether the next value is `null`, consuming it if so.
    pub(crate) fn null(&mut self) -> Scan<bool> {
        self.skip_whitespace();
        if self.bytes()[self.pos..].starts_with(b"null") {
            self.pos += 4;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// Whether the next value is a string (without consuming anything).
    pub(crate) fn at_string(&mut self) -> bool {
        self.skip_whitespace();
        self.peek() == Some(b'"')
    }

    /// Reads a string value.
    pub(crate) fn string(&mut self) -> Scan<RawStr<'a>> {
        self.eat(b'"')?;
        let start = self.pos;
        let bytes = self.bytes();
        let mut escaped = false;
        loop {
            self.skip_plain_run();
            match bytes.get(self.pos).copied() {
                Some(b'"') => {
                    let end = self.pos;
                    self.pos += 1;
                    return Ok(RawStr {
                        inner: self.text.get(start..end).ok_or(GiveUp)?,
                        escaped,
                    });
                }
                Some(b'\\') => {
                    escaped = true;
                    self.escape()?;
                }
                Some(byte) if byte < 0x20 => return Err(GiveUp),
                Some(_) => self.pos += 1,
                None => return Err(GiveUp),
            }
        }
    }

    /// Moves the cursor to the next quote, backslash or control character (or near the end),
    /// sixteen then eight bytes at a time: inside strings these are the only bytes that matter.
    fn skip_plain_run(&mut self) {
        let bytes = self.bytes();
        while let Some(chunk) = bytes.get(self.pos..self.pos + 16) {
            let (low, high) = chunk.split_at(8);
            if string_special_marks(word_at(low)) | string_special_marks(word_at(high)) != 0 {
                break;
            }
            self.pos += 16;
        }
        while let Some(chunk) = bytes.get(self.pos..self.pos + 8) {
            match first_string_special(word_at(chunk)) {
                Some(index) => {
                    self.pos += index;
                    return;
                }
                None => self.pos += 8,
            }
        }
    }

    /// Reads a string value and decodes it in the same pass: borrowed when it has no escapes.
    pub(crate) fn string_value(&mut self) -> Scan<Cow<'a, str>> {
        self.eat(b'"')?;
        let bytes = self.bytes();
        let mut run_start = self.pos;
        let mut decoded: Option<String> = None;
        loop {
            self.skip_plain_run();
            match bytes.get(self.pos).copied() {
                Some(b'"') => {
                    let run = self.text.get(run_start..self.pos).ok_or(GiveUp)?;
                    self.pos += 1;
                    return Ok(match decoded {
                        None => Cow::Borrowed(run),
                        Some(mut text) => {
                            text.push_str(run);
                            Cow::Owned(text)
                        }
                    });
                }
                Some(b'\\') => {
                    let run = self.text.get(run_start..self.pos).ok_or(GiveUp)?;
                    let escape_start = self.pos;
                    self.escape()?;
                    let escape = self.text.get(escape_start..self.pos).ok_or(GiveUp)?;
                    let text = decoded.get_or_insert_with(|| String::with_capacity(64));
                    text.push_str(run);
                    text.push(decode_escape(escape)?.0);
                    run_start = self.pos;
                }
                Some(byte) if byte < 0x20 => return Err(GiveUp),
                Some(_) => self.pos += 1,
                None => return Err(GiveUp),
            }
        }
    }

    /// Reads an unsigned integer, or `null`.
    pub(crate) fn optional_u64(&mut self) -> Scan<Option<u64>> {
        if self.null()? {
            return Ok(None);
        }
        let start = self.pos;
        let digits = self.digits();
        if digits == 0 || (digits > 1 && self.bytes()[start] == b'0') {
            return Err(GiveUp);
        }
        // A fraction or exponent is valid JSON but not an integer; serde decides what it means.
        if let Some(b'.' | b'e' | b'E') = self.peek() {
            return Err(GiveUp);
        }
        self.text
            .get(start..self.pos)
            .and_then(|number| number.parse().ok())
            .map(Some)
            .ok_or(GiveUp)
    }

    /// Checks one escape sequence at the cursor (which is on the backslash).
    fn escape(&mut self) -> Scan<()> {
        let bytes = self.bytes();
        match bytes.get(self.pos + 1).copied() {
            Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                self.pos += 2;
                Ok(())
            }
            Some(b'u') => {
                let hex = bytes.get(self.pos + 2..self.pos + 6).ok_or(GiveUp)?;
                if !hex.iter().all(u8::is_ascii_hexdigit) {
                    return Err(GiveUp);
                }
                // Surrogates must pair up; serde_json is the judge of that.
                if matches!(hex[0], b'd' | b'D')
                    && matches!(hex[1], b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F')
                {
                    return Err(GiveUp);
                }
                self.pos += 6;
                Ok(())
            }
            _ => Err(GiveUp),
        }
    }

    /// Skips any value, checking it is valid JSON, and returns its text.
    pub(crate) fn raw_value(&mut self) -> Scan<&'a str> {
        self.skip_whitespace();
        let start = self.pos;
        self.skip_value()?;
        self.text.get(start..self.pos).ok_or(GiveUp)
    }

    /// Skips any value, checking it is valid JSON.
    pub(crate) fn skip_value(&mut self) -> Scan<()> {
        self.skip_whitespace();
        match self.peek().ok_or(GiveUp)? {
            b'"' => self.string().map(|_| ()),
            b'{' => self.object(|_, scanner| scanner.skip_value()),
            b'[' => self.array(|scanner| scanner.skip_value()),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(GiveUp),
        }
    }

    fn literal(&mut self, word: &[u8]) -> Scan<()> {
        if self.bytes()[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(GiveUp)
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - start
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    fn number(&mut self) -> Scan<()> {
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(GiveUp),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(GiveUp);
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(GiveUp);
            }
        }
        Ok(())
    }

    /// Reads an object, calling `field` with each key; `field` must consume the value.
    pub(crate) fn object(
        &mut self,
        mut field: impl FnMut(RawStr<'a>, &mut Self) -> Scan<()>,
    ) -> Scan<()> {
        self.eat(b'{')?;
        self.enter()?;
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(());
        }
        loop {
            let key = self.string()?;
            self.eat(b':')?;
            field(key, self)?;
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                _ => return Err(GiveUp),
            }
        }
    }

    /// Reads an array, calling `item` for each element; `item` must consume it.
    pub(crate) fn array(&mut self, mut item: impl FnMut(&mut Self) -> Scan<()>) -> Scan<()> {
        self.eat(b'[')?;
        self.enter()?;
        self.skip_whitespace();
        if self.peek() == Some(b']') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(());
        }
        loop {
            item(self)?;
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                _ => return Err(GiveUp),
            }
        }
    }

    fn enter(&mut self) -> Scan<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            Err(GiveUp)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(text: &str) -> bool {
        let mut scanner = Scanner::new(text);
        scanner.skip_value().and_then(|()| scanner.finish()).is_ok()
    }

    #[test]
    fn accepts_what_serde_accepts() {
        for text in [
            r#"{"a":[1,-2.5e+3,0,true,false,null,"x\"\\\/\b\f\n\r\t\u00e9"],"b":{}}"#,
            " [ ] ",
            r#""a long string without any escapes at all, longer than eight bytes""#,
            "-0.0",
        ] {
            assert!(valid(text), "{text}");
            assert!(
                serde_json::from_str::<serde_json::Value>(text).is_ok(),
                "{text}"
            );
        }
    }

    #[test]
    fn gives_up_on_what_serde_rejects() {
        for text in [
            "{",
            "[1,]",
            "{\"a\":1,}",
            "01",
            "1.",
            "1e",
            "-",
            "tru",
            "\"a\nb\"",
            "\"\\x\"",
            "\"\\u12\"",
            "{\"a\" 1}",
            "[1] x",
            "{1:2}",
            "\"abc",
        ] {
            assert!(!valid(text), "{text}");
            assert!(
                serde_json::from_str::<serde_json::Value>(text).is_err(),
                "{text}"
            );
        }
    }

    #[test]
    fn finds_bytes_and_string_specials_at_every_position() {
        for length in 0..20 {
            for at in 0..length {
                let mut haystack = vec![b'a'; length];
                haystack[at] = b'\n';
                assert_eq!(find_byte(&haystack, b'\n'), Some(at));
            }
            assert_eq!(find_byte(&vec![b'a'; length], b'\n'), None);
        }
        for special in [b'"', b'\\', 0x00, 0x1f] {
            for at in 0..8 {
                let mut word = [b'z'; 8];
                word[at] = special;
                assert_eq!(first_string_special(u64::from_le_bytes(word)), Some(at));
            }
        }
        assert_eq!(
            first_string_special(u64::from_le_bytes([
                0xff, b' ', b'~', 0x80, b'a', b'!', b'#', b'}'
            ])),
            None
        );
    }

    #[test]
    fn unescaping_matches_serde() {
        for inner in [r#"a\"b\\c\/d\be\ff\ng\rh\ti"#, r#"\u00e9\u0041x"#, "plain"] {
            let quoted = format!("\"{inner}\"");
            assert_eq!(
                unescape(inner).unwrap(),
                serde_json::from_str::<String>(&quoted).unwrap()
            );
        }
    }

    #[test]
    fn fused_string_values_match_serde() {
        for text in [
            r#""plain and long enough to need a few words""#,
            r#""a\"b\\c\n\u00e9 and more text after the escapes""#,
            r#""\t""#,
            r#""""#,
        ] {
            let mut scanner = Scanner::new(text);
            assert_eq!(
                scanner.string_value().unwrap(),
                serde_json::from_str::<String>(text).unwrap(),
                "{text}"
            );
        }
        let mut scanner = Scanner::new("[12, null, 0, 01]");
        scanner.eat(b'[').unwrap();
        assert_eq!(scanner.optional_u64(), Ok(Some(12)));
        scanner.eat(b',').unwrap();
        assert_eq!(scanner.optional_u64(), Ok(None));
        scanner.eat(b',').unwrap();
        assert_eq!(scanner.optional_u64(), Ok(Some(0)));
        scanner.eat(b',').unwrap();
        assert_eq!(scanner.optional_u64(), Err(GiveUp));
    }

    #[test]
    fn strings_borrow_unless_escaped() {
        let mut scanner = Scanner::new(r#""plain text here""#);
        assert!(matches!(
            scanner.string().unwrap().value(),
            Ok(Cow::Borrowed("plain text here"))
        ));
        let mut scanner = Scanner::new(r#""tab\there""#);
        assert_eq!(scanner.string().unwrap().value().unwrap(), "tab\there");
    }

    #[test]
    fn deep_nesting_gives_up_instead_of_overflowing() {
        let text = "[".repeat(100_000);
        assert!(!valid(&text));
    }
}
