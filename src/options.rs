//! Reading an options object as every host gives one (a JS object written as JSON): each key taken once, what
//! is left refused with the nearest known key as a hint (`config.system: unknown option; did you mean
//! "instructions"?`), each value checked where it is — never a silent default. The agent's config, tools,
//! providers, savers and sessions are read through it.

use serde_json::{Map, Value};

/// How a host writes "a function was given here" in a spec's JSON (the npm package: a JS function, which
/// JSON cannot hold). Only the host that wrote it knows the function; the spec only sees that there is one.
pub const HOST_FUNCTION: &str = "\u{0}function";

/// The largest whole number an option takes (below 2^53, so it reads the same in JS).
const MAX_OPTION: u64 = 9_000_000_000_000_000;

/// A JSON value as an error message describes what was given: `string "x"`, `number 0`, `an object`.
pub(crate) fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) if s.starts_with(HOST_FUNCTION) => "a function".into(),
        Value::String(s) => {
            let shown: String = s.chars().take(40).collect();
            let more = if shown.len() < s.len() { "…" } else { "" };
            format!("string {shown:?}{more}")
        }
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// The known key nearest to `key`: a hint given for it, the same key in another case, or a spelling at most
/// two edits (or a third of its length) away.
pub(crate) fn nearest<'k>(key: &str, known: &[&'k str], hints: &[(&str, &'k str)]) -> Option<&'k str> {
    if let Some((_, to)) = hints.iter().find(|(from, _)| from.eq_ignore_ascii_case(key)) {
        return Some(to);
    }
    if let Some(k) = known.iter().find(|k| k.eq_ignore_ascii_case(key)) {
        return Some(k);
    }
    let bound = (key.chars().count() / 3).max(2);
    known
        .iter()
        .map(|k| (edits(&key.to_ascii_lowercase(), &k.to_ascii_lowercase()), *k))
        .filter(|(d, _)| *d <= bound)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Edit distance with adjacent transpositions (optimal string alignment).
fn edits(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    let at = |i: usize, j: usize| i * width + j;
    for i in 0..=a.len() {
        if let Some(c) = d.get_mut(at(i, 0)) {
            *c = i;
        }
    }
    for j in 0..=b.len() {
        if let Some(c) = d.get_mut(at(0, j)) {
            *c = j;
        }
    }
    let get = |d: &[usize], i, j| d.get(at(i, j)).copied().unwrap_or(usize::MAX / 2);
    for (i, ca) in a.iter().enumerate() {
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            let mut best = (get(&d, i, j + 1) + 1)
                .min(get(&d, i + 1, j) + 1)
                .min(get(&d, i, j) + cost);
            if i > 0 && j > 0 && a.get(i - 1) == Some(cb) && b.get(j - 1) == Some(ca) {
                best = best.min(get(&d, i - 1, j - 1) + 1);
            }
            if let Some(c) = d.get_mut(at(i + 1, j + 1)) {
                *c = best;
            }
        }
    }
    get(&d, a.len(), b.len())
}

/// An options object being read: each key is taken once, and what is left at the end is refused.
///
/// Absent and `null` are the same (not given), as JS callers write them.
pub(crate) struct Options {
    path: String,
    map: Map<String, Value>,
}

/// The message for a key an options object does not have.
pub(crate) fn unknown_option(path: &str, key: &str, known: &[&str], hints: &[(&str, &str)]) -> String {
    let hint = nearest(key, known, hints).map_or_else(String::new, |k| format!("; did you mean {k:?}?"));
    format!("{path}.{key}: unknown option{hint} (known: {})", known.join(", "))
}

impl Options {
    /// Reads `value` as the options object at `path`, refusing keys outside `known` (with the nearest as a
    /// hint; `hints` maps common mistakes, such as another library's name for an option, to ours).
    pub(crate) fn new(value: Value, path: &str, known: &[&str], hints: &[(&str, &str)]) -> Result<Self, String> {
        let Value::Object(map) = value else {
            return Err(format!(
                "{path}: expected {{ {} }}, got {}",
                known.join(", "),
                describe(&value)
            ));
        };
        if let Some(key) = map.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(unknown_option(path, key, known, hints));
        }
        Ok(Options {
            path: path.to_owned(),
            map,
        })
    }

    /// Optional options: `None` (absent or null) is an empty object.
    pub(crate) fn optional(
        value: Option<Value>,
        path: &str,
        known: &[&str],
        hints: &[(&str, &str)],
    ) -> Result<Self, String> {
        Self::new(value.unwrap_or_else(|| Value::Object(Map::new())), path, known, hints)
    }

    /// The path of `key`.
    pub(crate) fn at(&self, key: &str) -> String {
        format!("{}.{key}", self.path)
    }

    /// The value of `key`, when given (not absent, not null).
    pub(crate) fn take(&mut self, key: &str) -> Option<Value> {
        self.map.remove(key).filter(|v| !v.is_null())
    }

    /// The value of `key` when present, `null` included (for an option where `null` is a value).
    pub(crate) fn take_present(&mut self, key: &str) -> Option<Value> {
        self.map.remove(key)
    }

    pub(crate) fn string(&mut self, key: &str) -> Result<Option<String>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) if !s.starts_with(HOST_FUNCTION) => Ok(Some(s)),
            Some(v) => Err(format!("{}: expected a string, got {}", self.at(key), describe(&v))),
        }
    }

    pub(crate) fn boolean(&mut self, key: &str) -> Result<Option<bool>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(v) => Err(format!("{}: expected a boolean, got {}", self.at(key), describe(&v))),
        }
    }

    /// A whole number of at least `min` (0 or 1); `1.0` counts as `1`, as JS reads it.
    pub(crate) fn integer(&mut self, key: &str, min: u64) -> Result<Option<u64>, String> {
        let Some(v) = self.take(key) else {
            return Ok(None);
        };
        whole(&v, min).map(Some).ok_or_else(|| {
            let kind = if min == 0 {
                "a non-negative integer"
            } else {
                "a positive integer"
            };
            format!("{}: expected {kind}, got {}", self.at(key), describe(&v))
        })
    }

    /// [`Options::integer`] as a `u32` (larger numbers are refused).
    pub(crate) fn small(&mut self, key: &str, min: u64) -> Result<Option<u32>, String> {
        let at = self.at(key);
        self.integer(key, min)?
            .map(|n| u32::try_from(n).map_err(|_| format!("{at}: {n} is too large (at most {})", u32::MAX)))
            .transpose()
    }
}

/// `v` as a whole number of at least `min` and at most [`MAX_OPTION`], however it is spelled (`1e3`, `1000.0`).
pub(crate) fn whole(v: &Value, min: u64) -> Option<u64> {
    if let Some(n) = v.as_u64() {
        return (min..=MAX_OPTION).contains(&n).then_some(n);
    }
    let f = v.as_f64()?;
    #[allow(clippy::cast_precision_loss)] // both bounds are exact doubles
    let ok = f.fract() == 0.0 && f >= min as f64 && f <= MAX_OPTION as f64;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // checked just above
    ok.then_some(f as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_transpositions_once() {
        assert_eq!(edits("agnet", "agent"), 1);
        assert_eq!(edits("", "abc"), 3);
        assert_eq!(edits("kitten", "sitting"), 3);
    }
}
