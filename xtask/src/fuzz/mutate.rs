//! Structure-aware mutation of line-delimited JSON seeds.
//!
//! Each mutated input starts from one seed file, split into lines, and takes one to four
//! mutations: structural ones on a line parsed as a `serde_json::Value` (numeric extremes, type
//! swaps, deleted and duplicated fields, deep nesting, dictionary strings), line-level ones
//! (delete, duplicate, repeat, swap, splice a line from any other seed file) and byte-level ones
//! (flips, truncation). Values JSON cannot hold (`1e400`, a duplicated key, 10 000 nested arrays)
//! are written as raw text through a placeholder, so they reach the reader exactly as written.

use serde_json::{Map, Value};

/// Numbers that have broken readers: signs, fractions, the edges of `u32`/`i64`/`u64`/`f64`,
/// beyond them, and non-JSON spellings.
const NUMERIC_EXTREMES: &[&str] = &[
    "-1",
    "-0.0",
    "0",
    "0.5",
    "1.5",
    "-2.5",
    "4294967295",
    "4294967296",
    "9007199254740993",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "340282366920938463463374607431768211456",
    "1e19",
    "1e308",
    "1.7976931348623157e308",
    "1e400",
    "-1e400",
    "1e-400",
    "5e-324",
    "NaN",
    "Infinity",
];

/// Nesting depths around serde_json's recursion limit (128), and far past it.
const NESTING_DEPTHS: &[usize] = &[127, 128, 129, 10_000];

/// Inputs are cut back to this size so splicing and repetition cannot grow them without bound.
pub const MAX_INPUT_BYTES: usize = 1 << 20;

/// Repeating a line adds at most this many bytes, so one input stays fast to run.
const MAX_REPEAT_BYTES: usize = 256 << 10;

/// A small deterministic PRNG (splitmix64): the same seed gives the same inputs on every machine.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (0 when `bound` is 0).
    pub fn below(&mut self, bound: usize) -> usize {
        if bound == 0 {
            return 0;
        }
        (self.next_u64() % bound as u64) as usize
    }

    /// True with probability `1/n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        items.get(self.below(items.len()))
    }
}

/// The seeds of one target plus what mutations draw on.
#[derive(Debug, Clone)]
pub struct Mutator {
    seeds: Vec<Vec<u8>>,
    /// Lines of every seed file of every target, for splicing across captures.
    foreign_lines: Vec<Vec<u8>>,
    /// Short strings seen in the seeds (`type` values, tool names, ids), so a mutation can swap
    /// one known value for another and reach branches a random string never would.
    dictionary: Vec<String>,
}

impl Mutator {
    /// A mutator over `seeds`, splicing lines from `all_seeds` (which may include `seeds`).
    pub fn new(seeds: Vec<Vec<u8>>, all_seeds: &[Vec<u8>]) -> Self {
        let foreign_lines: Vec<Vec<u8>> = all_seeds
            .iter()
            .flat_map(|file| split_lines(file))
            .filter(|line| !line.trim_ascii().is_empty())
            .collect();
        let mut dictionary = Vec::new();
        for line in &foreign_lines {
            if let Ok(value) = serde_json::from_slice::<Value>(line) {
                collect_strings(&value, &mut dictionary);
            }
        }
        dictionary.sort();
        dictionary.dedup();
        Self {
            seeds,
            foreign_lines,
            dictionary,
        }
    }

    /// The unmutated seeds, tried first.
    pub fn seeds(&self) -> &[Vec<u8>] {
        &self.seeds
    }

    /// One mutated input.
    pub fn mutate(&self, rng: &mut SplitMix64) -> Vec<u8> {
        let Some(seed) = rng.pick(&self.seeds) else {
            return Vec::new();
        };
        let mut lines = split_lines(seed);
        let ends_with_newline = seed.ends_with(b"\n");
        if ends_with_newline {
            // `split_lines` yields a trailing empty piece; the join below puts the newline back.
            lines.pop();
        }
        let mut byte_ops = Vec::new();
        for _ in 0..=rng.below(4) {
            match rng.below(16) {
                0..=7 => self.mutate_structure(&mut lines, rng),
                8 => self.splice_line(&mut lines, rng),
                9 => self.splice_files(&mut lines, rng),
                10 => line_op(&mut lines, rng),
                11 => repeat_line(&mut lines, rng),
                12 | 13 => byte_ops.push(ByteOp::Flip),
                14 => byte_ops.push(ByteOp::Truncate),
                _ => self.mutate_structure(&mut lines, rng),
            }
        }
        let mut bytes = lines.join(&b'\n');
        if ends_with_newline && !rng.one_in(8) {
            bytes.push(b'\n');
        }
        for op in byte_ops {
            match op {
                ByteOp::Flip => flip_bytes(&mut bytes, rng),
                ByteOp::Truncate => {
                    let keep = rng.below(bytes.len().saturating_add(1));
                    bytes.truncate(keep);
                }
            }
        }
        bytes.truncate(MAX_INPUT_BYTES);
        bytes
    }

    fn mutate_structure(&self, lines: &mut [Vec<u8>], rng: &mut SplitMix64) {
        let Some(index) = nonblank_line(lines, rng) else {
            return;
        };
        let Ok(mut value) = serde_json::from_slice::<Value>(&lines[index]) else {
            // Already broken by an earlier mutation: break it a little more instead.
            flip_bytes(&mut lines[index], rng);
            return;
        };
        let mut raws = Vec::new();
        let node = random_node(&mut value, rng);
        self.mutate_node(node, &mut raws, rng);
        lines[index] = render(&value, &raws).into_bytes();
    }

    fn mutate_node(&self, node: &mut Value, raws: &mut Vec<String>, rng: &mut SplitMix64) {
        match rng.below(10) {
            0 | 1 => {
                let text = rng.pick(NUMERIC_EXTREMES).copied().unwrap_or("-1");
                *node = raw(raws, text.to_owned());
            }
            2 | 3 => *node = type_swap(node, rng),
            4 => match node {
                Value::Object(object) if !object.is_empty() => {
                    let key = object.keys().nth(rng.below(object.len())).cloned();
                    if let Some(key) = key {
                        object.remove(&key);
                    }
                }
                Value::Array(array) if !array.is_empty() => {
                    array.remove(rng.below(array.len()));
                }
                _ => *node = Value::Null,
            },
            5 => duplicate_field(node, raws, rng),
            6 => {
                let depth = rng.pick(NESTING_DEPTHS).copied().unwrap_or(10_000);
                let (open, close) = if rng.one_in(2) {
                    ("[", "]")
                } else {
                    ("{\"a\":", "}")
                };
                *node = raw(
                    raws,
                    format!("{}1{}", open.repeat(depth), close.repeat(depth)),
                );
            }
            7 => {
                if let Some(word) = rng.pick(&self.dictionary) {
                    *node = Value::String(word.clone());
                }
            }
            8 => *node = Value::String(odd_string(rng)),
            _ => {
                if let Value::Number(number) = node {
                    let base = number.as_u64().unwrap_or(1);
                    let shifted = match rng.below(4) {
                        0 => base.saturating_add(1),
                        1 => base.saturating_mul(1_000_000),
                        2 => base.saturating_sub(1),
                        _ => u64::MAX - base,
                    };
                    *node = Value::from(shifted);
                } else {
                    *node = type_swap(node, rng);
                }
            }
        }
    }

    fn splice_line(&self, lines: &mut Vec<Vec<u8>>, rng: &mut SplitMix64) {
        if let Some(line) = rng.pick(&self.foreign_lines) {
            let at = rng.below(lines.len().saturating_add(1));
            lines.insert(at, line.clone());
        }
    }

    fn splice_files(&self, lines: &mut Vec<Vec<u8>>, rng: &mut SplitMix64) {
        let Some(other) = rng.pick(&self.seeds) else {
            return;
        };
        let other = split_lines(other);
        let keep = rng.below(lines.len().saturating_add(1));
        let from = rng.below(other.len().saturating_add(1));
        lines.truncate(keep);
        lines.extend(other.into_iter().skip(from));
    }
}

enum ByteOp {
    Flip,
    Truncate,
}

/// Splits on `\n` (the piece after a trailing newline is an empty last line).
pub fn split_lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    bytes.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect()
}

fn nonblank_line(lines: &[Vec<u8>], rng: &mut SplitMix64) -> Option<usize> {
    let candidates: Vec<usize> = (0..lines.len())
        .filter(|i| !lines[*i].trim_ascii().is_empty())
        .collect();
    rng.pick(&candidates).copied()
}

fn collect_strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(text) if text.len() <= 64 => out.push(text.clone()),
        Value::Array(items) => items.iter().for_each(|item| collect_strings(item, out)),
        Value::Object(object) => {
            for (key, item) in object {
                out.push(key.clone());
                collect_strings(item, out);
            }
        }
        _ => {}
    }
}

/// A random node of `value`: a walk from the root that stops at each container with
/// probability 1/3, so shallow and deep fields are both reached.
fn random_node<'a>(value: &'a mut Value, rng: &mut SplitMix64) -> &'a mut Value {
    let len = match &*value {
        Value::Array(items) => items.len(),
        Value::Object(object) => object.len(),
        _ => 0,
    };
    if len == 0 || rng.one_in(3) {
        return value;
    }
    let index = rng.below(len);
    let key = match &*value {
        Value::Object(object) => object.keys().nth(index).cloned(),
        _ => None,
    };
    match (value, key) {
        (Value::Array(items), _) => random_node(&mut items[index], rng),
        // The key was just read from this object, so indexing by it finds it.
        (Value::Object(object), Some(key)) => random_node(&mut object[key.as_str()], rng),
        (other, _) => other,
    }
}

/// `node` as another JSON type (number, string, null, bool, array, object).
fn type_swap(node: &Value, rng: &mut SplitMix64) -> Value {
    match rng.below(7) {
        0 => match node {
            Value::String(text) => text
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map_or(Value::from(text.len()), Value::Number),
            _ => Value::from(7),
        },
        1 => Value::String(match node {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        }),
        2 => Value::Null,
        3 => Value::Bool(rng.one_in(2)),
        4 => Value::Array(vec![node.clone()]),
        5 => {
            let mut object = Map::new();
            object.insert("value".into(), node.clone());
            Value::Object(object)
        }
        _ => match node {
            Value::Array(_) => Value::Object(Map::new()),
            Value::Object(_) => Value::Array(Vec::new()),
            _ => Value::String(String::new()),
        },
    }
}

/// Writes `node` (an object) with one of its keys twice, the first copy holding another value:
/// serde_json keeps the last, other readers may not.
fn duplicate_field(node: &mut Value, raws: &mut Vec<String>, rng: &mut SplitMix64) {
    let Value::Object(object) = node else {
        *node = type_swap(node, rng);
        return;
    };
    let Some(key) = object.keys().nth(rng.below(object.len())).cloned() else {
        return;
    };
    let first = object.get(&key).map(|value| type_swap(value, rng));
    let body = Value::Object(object.clone()).to_string();
    let key_text = Value::String(key).to_string();
    let first_text = first.unwrap_or(Value::Null).to_string();
    let rest = body.strip_prefix('{').unwrap_or(&body);
    let separator = if rest == "}" { "" } else { "," };
    *node = raw(raws, format!("{{{key_text}:{first_text}{separator}{rest}"));
}

fn odd_string(rng: &mut SplitMix64) -> String {
    match rng.below(6) {
        0 => String::new(),
        1 => "x".repeat(100_000),
        2 => "é\u{0}\u{FEFF}\u{10FFFF}\u{202E}".to_owned(),
        3 => "\n\r\t\"\\".to_owned(),
        4 => "18446744073709551616".to_owned(),
        _ => "-1".to_owned(),
    }
}

/// A placeholder for raw JSON text, replaced by [`render`].
fn raw(raws: &mut Vec<String>, text: String) -> Value {
    raws.push(text);
    Value::String(format!("\u{1}raw{}\u{1}", raws.len() - 1))
}

/// `value` as JSON text with every placeholder swapped for its raw text.
fn render(value: &Value, raws: &[String]) -> String {
    let mut text = value.to_string();
    for (index, raw_text) in raws.iter().enumerate() {
        let placeholder = format!("\"\\u0001raw{index}\\u0001\"");
        text = text.replacen(&placeholder, raw_text, 1);
    }
    text
}

fn line_op(lines: &mut Vec<Vec<u8>>, rng: &mut SplitMix64) {
    if lines.is_empty() {
        return;
    }
    let index = rng.below(lines.len());
    match rng.below(3) {
        0 => {
            lines.remove(index);
        }
        1 => {
            let copy = lines[index].clone();
            lines.insert(index, copy);
        }
        _ => {
            let other = rng.below(lines.len());
            lines.swap(index, other);
        }
    }
}

/// One line repeated many times, to drive counters and sums toward their limits.
fn repeat_line(lines: &mut Vec<Vec<u8>>, rng: &mut SplitMix64) {
    let Some(index) = nonblank_line(lines, rng) else {
        return;
    };
    let line = lines[index].clone();
    let copies = [2, 10, 100, 1_000][rng.below(4)].min(MAX_REPEAT_BYTES / line.len().max(1));
    let at = index + 1;
    lines.splice(at..at, std::iter::repeat_n(line, copies));
}

fn flip_bytes(bytes: &mut [u8], rng: &mut SplitMix64) {
    if bytes.is_empty() {
        return;
    }
    for _ in 0..=rng.below(4) {
        let at = rng.below(bytes.len());
        bytes[at] = match rng.below(4) {
            0 => bytes[at] ^ (1 << rng.below(8)),
            1 => *rng.pick(b"\"{}[]:,\\\n0-9e.").unwrap_or(&b'"'),
            2 => 0xFF,
            _ => rng.next_u64() as u8,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_text_reaches_the_output_verbatim() {
        let mut raws = Vec::new();
        let mut value = serde_json::json!({"n": 1, "s": "x"});
        value["n"] = raw(&mut raws, "1e400".into());
        assert_eq!(render(&value, &raws), r#"{"n":1e400,"s":"x"}"#);
    }

    #[test]
    fn duplicate_field_writes_the_key_twice() {
        let mut rng = SplitMix64::new(3);
        let mut raws = Vec::new();
        let mut value = serde_json::json!({"k": 1});
        duplicate_field(&mut value, &mut raws, &mut rng);
        let text = render(&value, &raws);
        assert_eq!(text.matches("\"k\"").count(), 2, "{text}");
    }

    #[test]
    fn the_same_seed_gives_the_same_inputs() {
        let seeds = vec![br#"{"type":"a","n":[1,2,{"x":"y"}]}
{"type":"b"}
"#
        .to_vec()];
        let mutator = Mutator::new(seeds.clone(), &seeds);
        let run = |seed| {
            let mut rng = SplitMix64::new(seed);
            (0..50)
                .map(|_| mutator.mutate(&mut rng))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
    }
}
