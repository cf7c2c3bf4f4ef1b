//! How big and how deep what the library accepts may be: checkpoints before they are parsed, and every JSON
//! value the run takes in (tool inputs from the model, agent state, interrupt data). The same depth rule for
//! both, so whatever the library writes it can read back.

use serde_json::Value;

/// Default bound on a checkpoint's JSON text, in bytes (32 MiB: KV takes 25 MiB, a Durable Object 2 MB).
pub const DEFAULT_MAX_CHECKPOINT_BYTES: usize = 32 * 1024 * 1024;

/// Default bound on how deeply a JSON value inside a checkpoint (a tool input, the state, interrupt data)
/// nests.
pub const DEFAULT_MAX_DEPTH: usize = 64;

/// How deep a value's place in a checkpoint is at most (`messages[i].content[j].input` is 5 levels in).
pub(crate) const CHECKPOINT_FRAME_DEPTH: usize = 6;

/// The deepest a value may nest: serde_json refuses input nested over 128, and a checkpoint adds its frame.
pub const MAX_DEPTH_LIMIT: usize = 128 - CHECKPOINT_FRAME_DEPTH - 2;

/// Size and depth limits.
///
/// ```
/// use resumable_agent::Limits;
/// let strict = Limits::default().max_checkpoint_bytes(1 << 20).max_depth(16);
/// assert_eq!(strict.max_depth, 16);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// The largest checkpoint text `resume` and savers parse, in bytes.
    pub max_checkpoint_bytes: usize,
    /// How deeply a tool input, the agent's state or interrupt data may nest.
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_checkpoint_bytes: DEFAULT_MAX_CHECKPOINT_BYTES,
            max_depth: DEFAULT_MAX_DEPTH,
        }
    }
}

impl Limits {
    /// Sets the size bound.
    pub fn max_checkpoint_bytes(mut self, bytes: usize) -> Self {
        self.max_checkpoint_bytes = bytes;
        self
    }

    /// Sets the depth bound (at most [`MAX_DEPTH_LIMIT`]).
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = depth.min(MAX_DEPTH_LIMIT);
        self
    }

    /// The deepest a whole checkpoint may nest.
    pub(crate) fn checkpoint_depth(&self) -> usize {
        self.max_depth + CHECKPOINT_FRAME_DEPTH
    }
}

/// How deeply `v` nests (a scalar is 0, `[]` and `{}` are 1), without recursion.
pub fn value_depth(v: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(v, 0usize)];
    while let Some((v, d)) = stack.pop() {
        match v {
            Value::Array(items) => {
                deepest = deepest.max(d + 1);
                stack.extend(items.iter().map(|i| (i, d + 1)));
            }
            Value::Object(map) => {
                deepest = deepest.max(d + 1);
                stack.extend(map.values().map(|i| (i, d + 1)));
            }
            _ => {}
        }
    }
    deepest
}

/// How deeply JSON `text` nests, read from its brackets (strings skipped).
pub fn text_depth(text: &str) -> usize {
    let bytes = text.as_bytes();
    let (mut depth, mut deepest, mut i) = (0usize, 0usize, 0usize);
    while let Some(&b) = bytes.get(i) {
        i += 1;
        match b {
            // A string: on to its closing quote, over escaped characters, in one tight search per stretch
            // (most of a checkpoint's bytes are inside strings).
            b'"' => loop {
                match bytes
                    .get(i..)
                    .and_then(|rest| rest.iter().position(|&c| c == b'"' || c == b'\\'))
                {
                    Some(p) if bytes.get(i + p) == Some(&b'\\') => i += p + 2,
                    Some(p) => {
                        i += p + 1;
                        break;
                    }
                    None => {
                        i = bytes.len();
                        break;
                    }
                }
            },
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// How many times its length in bytes a JSON text from a server may take in memory once parsed (plus
/// [`JSON_MEMORY_FLOOR`]). Text, and the tool listings and answers servers send, take 1–25× (64-bit; about
/// half that in wasm32); a page of tiny objects (`[{"a":1},…]`) takes 85× — a 2.6 MB answer would hold
/// 160 MB of memory, which a Worker isolate does not have.
pub const JSON_MEMORY_FACTOR: usize = 32;

/// What any JSON text may take in memory whatever its length (a small answer is never refused for its shape).
pub const JSON_MEMORY_FLOOR: usize = 1024 * 1024;

/// An upper estimate of the memory `serde_json::Value` takes for JSON `text`, read from its structure in one
/// pass without allocating per value: every non-empty object one B-tree node per 5 keys (at least one), every
/// array at least four slots and two per element, and the bytes of its strings.
pub fn parse_cost(text: &str) -> usize {
    let value = std::mem::size_of::<Value>();
    let node = 11 * (std::mem::size_of::<String>() + value) + 2 * std::mem::size_of::<usize>();
    let bytes = text.as_bytes();
    // Whether each open container is an array (serde_json refuses nesting past 128; deeper text is refused
    // by the parse itself, so the stack stops growing there).
    let mut open: Vec<bool> = Vec::with_capacity(16);
    let (mut objects, mut keys, mut arrays, mut elements, mut strings) = (0usize, 0usize, 0usize, 0usize, 0usize);
    let mut i = 0usize;
    while let Some(&b) = bytes.get(i) {
        i += 1;
        match b {
            b'"' => {
                let start = i;
                loop {
                    match bytes
                        .get(i..)
                        .and_then(|rest| rest.iter().position(|&c| c == b'"' || c == b'\\'))
                    {
                        Some(p) if bytes.get(i + p) == Some(&b'\\') => i += p + 2,
                        Some(p) => {
                            i += p + 1;
                            break;
                        }
                        None => {
                            i = bytes.len();
                            break;
                        }
                    }
                }
                strings += i.saturating_sub(start);
            }
            b'{' => {
                // An empty object allocates nothing.
                if bytes.get(i..).and_then(|r| r.iter().find(|c| !c.is_ascii_whitespace())) != Some(&b'}') {
                    objects += 1;
                }
                if open.len() < 256 {
                    open.push(false);
                }
            }
            b'[' => {
                arrays += 1;
                // A non-empty array has one element more than its commas.
                if bytes.get(i..).and_then(|r| r.iter().find(|c| !c.is_ascii_whitespace())) != Some(&b']') {
                    elements += 1;
                }
                if open.len() < 256 {
                    open.push(true);
                }
            }
            b']' | b'}' => {
                open.pop();
            }
            b',' if open.last() == Some(&true) => elements += 1,
            b':' => keys += 1,
            _ => {}
        }
    }
    (objects + keys / 5)
        .saturating_mul(node)
        .saturating_add(arrays.saturating_mul(4 * value))
        .saturating_add(elements.saturating_mul(2 * value))
        .saturating_add(strings)
}

/// Why [`parse_untrusted`] gave no value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UntrustedJson {
    /// The text would take more memory than [`JSON_MEMORY_FACTOR`] times its length: refused unread.
    #[error("{bytes} bytes of JSON that would take about {} MB once read (more than {JSON_MEMORY_FACTOR} times their length): refused unread", .cost / 1_000_000)]
    TooCostly {
        /// Its length.
        bytes: usize,
        /// Its estimated cost ([`parse_cost`]).
        cost: usize,
    },
    /// Not JSON: the parser's message.
    #[error("{0}")]
    Invalid(String),
}

/// JSON `text` from a server (a model's answer, an MCP message, an error body) as a value, refused before
/// parsing when it would take more memory than [`JSON_MEMORY_FACTOR`] times its length (see [`parse_cost`]).
/// Lone surrogate escapes are repaired first, as for every JSON value the library takes in.
///
/// ```
/// use resumable_agent::{parse_untrusted, UntrustedJson};
/// assert_eq!(parse_untrusted(r#"{"a":[1]}"#)?["a"][0], 1);
/// let tiny_objects = format!("[{}]", vec![r#"{"a":1}"#; 200_000].join(","));
/// assert!(matches!(parse_untrusted(&tiny_objects), Err(UntrustedJson::TooCostly { .. })));
/// # Ok::<(), UntrustedJson>(())
/// ```
///
/// # Errors
/// [`UntrustedJson`]: the text would take too much memory, or is not JSON.
pub fn parse_untrusted(text: &str) -> Result<Value, UntrustedJson> {
    let budget = text
        .len()
        .saturating_mul(JSON_MEMORY_FACTOR)
        .saturating_add(JSON_MEMORY_FLOOR);
    let cost = parse_cost(text);
    if cost > budget {
        return Err(UntrustedJson::TooCostly {
            bytes: text.len(),
            cost,
        });
    }
    let text = repair_lone_surrogates(text);
    serde_json::from_str(&text).map_err(|e| UntrustedJson::Invalid(e.to_string()))
}

/// True when the escape starting at `at` (a backslash) is `\ud…` or `\uD…`.
fn is_surrogate_escape(bytes: &[u8], at: usize) -> bool {
    bytes.get(at + 1) == Some(&b'u') && matches!(bytes.get(at + 2), Some(b'd' | b'D'))
}

/// Whether JSON `text` may hold a surrogate escape: a search for backslashes, each escape skipped whole
/// (so an escaped backslash followed by `ud` is not one). Much faster than two substring searches.
fn may_hold_surrogate_escape(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0usize;
    while let Some(p) = bytes.get(i..).and_then(|rest| rest.iter().position(|&c| c == b'\\')) {
        if is_surrogate_escape(bytes, i + p) {
            return true;
        }
        i += p + 2;
    }
    false
}

/// The largest integer every JSON reader agrees on (2^53): JS reads every number as a double.
const EXACT_INTEGERS: u64 = 1 << 53;

/// Makes every number in `v` a double, as JS reads it (checkpoints are I-JSON, RFC 7493): an integer beyond
/// ±2^53 becomes the nearest double. So a checkpoint means the same in JS and Rust, a signature covers
/// exactly what a tool receives, and decoding what the library wrote gives back the same bytes.
pub fn normalize_numbers(v: &mut Value) {
    normalize_numbers_depth(v);
}

/// [`normalize_numbers`], returning how deeply `v` nests ([`value_depth`]) from the same walk.
pub(crate) fn normalize_numbers_depth(v: &mut Value) -> usize {
    let mut stack = vec![(v, 0usize)];
    let mut deepest = 0;
    while let Some((v, d)) = stack.pop() {
        match v {
            Value::Number(n) if !n.is_f64() => {
                let magnitude = n.as_u64().or_else(|| n.as_i64().map(i64::unsigned_abs)).unwrap_or(0);
                if magnitude > EXACT_INTEGERS {
                    if let Some(double) = n.as_f64().and_then(serde_json::Number::from_f64) {
                        *n = double;
                    }
                }
            }
            Value::Array(items) => {
                deepest = deepest.max(d + 1);
                stack.extend(items.iter_mut().map(|i| (i, d + 1)));
            }
            Value::Object(map) => {
                deepest = deepest.max(d + 1);
                stack.extend(map.values_mut().map(|i| (i, d + 1)));
            }
            _ => {}
        }
    }
    deepest
}

/// JSON `text` with every `\uD800`–`\uDFFF` escape that is not half of a surrogate pair replaced by
/// `\uFFFD`: JS strings may hold lone surrogates (and `JSON.stringify` writes them as such escapes), Rust
/// strings may not. The replacement JS's own `TextEncoder` makes, applied the same way to every JSON value
/// from JS (model replies, tool results, checkpoints, decisions). Borrowed when there is nothing to replace.
pub fn repair_lone_surrogates(text: &str) -> std::borrow::Cow<'_, str> {
    // Nearly every text has no surrogate escape at all: one fast search.
    if !may_hold_surrogate_escape(text) {
        return std::borrow::Cow::Borrowed(text);
    }
    repair_surrogate_escapes(text)
}

/// [`repair_lone_surrogates`] without its fast check: every escape looked at.
fn repair_surrogate_escapes(text: &str) -> std::borrow::Cow<'_, str> {
    let bytes = text.as_bytes();
    let hex = |at: usize| -> Option<u16> {
        let digits = bytes.get(at..at + 4)?;
        u16::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
    };
    // The code unit of a `\uXXXX` escape starting at `at` (the backslash), if there is one.
    let escape = |at: usize| -> Option<u16> {
        (bytes.get(at) == Some(&b'\\') && bytes.get(at + 1) == Some(&b'u')).then_some(())?;
        hex(at + 2)
    };
    let mut out: Option<String> = None;
    let (mut i, mut copied, mut in_string) = (0usize, 0usize, false);
    while i < bytes.len() {
        match bytes.get(i) {
            Some(b'"') => in_string = !in_string,
            Some(b'\\') if in_string => {
                let lone = match escape(i) {
                    Some(0xD800..=0xDBFF) => {
                        if matches!(escape(i + 6), Some(0xDC00..=0xDFFF)) {
                            i += 12;
                            continue;
                        }
                        true
                    }
                    Some(0xDC00..=0xDFFF) => true,
                    _ => false,
                };
                if lone {
                    let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
                    o.push_str(text.get(copied..i).unwrap_or_default());
                    o.push_str("\\ufffd");
                    i += 6;
                    copied = i;
                    continue;
                }
                // Any other escape: skip the escaped character so `\"` does not end the string.
                i += 2;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    match out {
        None => std::borrow::Cow::Borrowed(text),
        Some(mut o) => {
            o.push_str(text.get(copied..).unwrap_or_default());
            std::borrow::Cow::Owned(o)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The plain reading `text_depth` must agree with: one byte at a time.
    fn text_depth_bytewise(text: &str) -> usize {
        let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
        for b in text.bytes() {
            if in_string {
                match (escaped, b) {
                    (true, _) => escaped = false,
                    (false, b'\\') => escaped = true,
                    (false, b'"') => in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => in_string = true,
                b'[' | b'{' => {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        deepest
    }

    #[test]
    fn text_depth_agrees_with_a_bytewise_reading_on_random_texts() {
        // 20,000 random texts over the bytes that matter (quotes, backslashes, brackets), truncations included.
        // Single bytes and whole escapes: surrogate halves, escaped backslashes before `ud`, a bare `\u`.
        let alphabet = [
            "\"",
            "\\",
            "[",
            "]",
            "{",
            "}",
            "a",
            "u",
            "d",
            " ",
            "\\ud83d",
            "\\ude00",
            "\\uD800",
            "\\\\ud800",
            "\\u",
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut repaired = 0usize;
        for _ in 0..20_000 {
            let len = (next() % 40) as usize;
            let text: String = (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            assert_eq!(text_depth(&text), text_depth_bytewise(&text), "{text:?}");
            // The fast checks never skip a repair the full pass would make.
            assert_eq!(
                repair_lone_surrogates(&text),
                repair_surrogate_escapes(&text),
                "{text:?}"
            );
            if !may_hold_surrogate_escape(&text) {
                assert_eq!(repair_surrogate_escapes(&text), text.as_str(), "{text:?}");
            }
            repaired += usize::from(repair_surrogate_escapes(&text) != text.as_str());
        }
        assert!(repaired > 10, "the random texts exercise repairs: {repaired}");
        assert_eq!(text_depth(r#"{"a":"[[\"]]","b":[{}]}"#), 3);
    }

    #[test]
    fn depth_of_values_and_text_agree() {
        for v in [
            json!(1),
            json!([]),
            json!({"a": [1, {"b": "[[["}]}),
            json!([[[[["x"]]]]]),
        ] {
            assert_eq!(value_depth(&v), text_depth(&v.to_string()), "{v}");
        }
        assert_eq!(text_depth(r#"{"s":"\"[{"}"#), 1);
        let deep = "[".repeat(10_000) + &"]".repeat(10_000);
        assert_eq!(text_depth(&deep), 10_000);
    }

    #[test]
    fn integers_beyond_two_to_the_53_become_doubles() {
        let mut v = serde_json::json!({"a": [12_345_678_901_234_567_890u64, -9_007_199_254_740_993i64], "b": 9_007_199_254_740_992u64, "c": 1.5});
        normalize_numbers(&mut v);
        assert_eq!(
            v.to_string(),
            r#"{"a":[1.2345678901234567e+19,-9007199254740992.0],"b":9007199254740992,"c":1.5}"#
        );
    }

    #[test]
    fn lone_surrogate_escapes_become_replacement_characters() {
        let cases = [
            (r#"["a\ud800b"]"#, r#"["a\ufffdb"]"#),
            (r#"["\udc00"]"#, r#"["\ufffd"]"#),
            (r#"["\ud83d\ude00"]"#, r#"["\ud83d\ude00"]"#),
            (r#"["\ud83d\u0041"]"#, r#"["\ufffd\u0041"]"#),
            (r#"["\\ud800"]"#, r#"["\\ud800"]"#),
            (r#"{"k\uDBFF":1}"#, r#"{"k\ufffd":1}"#),
            (r#"["\ud800"#, r#"["\ufffd"#),
        ];
        for (given, want) in cases {
            assert_eq!(repair_lone_surrogates(given), want, "{given}");
        }
        assert!(matches!(
            repair_lone_surrogates(r#"["ok \n"]"#),
            std::borrow::Cow::Borrowed(_)
        ));
        let v: Value = serde_json::from_str(&repair_lone_surrogates(r#"["a\ud800b"]"#)).unwrap_or_default();
        assert_eq!(v, serde_json::json!(["a\u{fffd}b"]));
    }
}
