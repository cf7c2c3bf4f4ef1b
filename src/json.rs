//! JSON text of the library's values, all through one writer (so serde's serializers are compiled once): what
//! the library writes a checkpoint with, for any of its values (`Message`s, `Event`s, …).

use serde::Serialize;

/// A `Vec<u8>` whose small writes are pushes: serde_json writes a string as runs between escapes and a
/// 2-byte escape for each `"` or `\`, and a JSON-in-JSON tool result has one every few bytes. In wasm, a
/// generic slice extend per escape made serializing a checkpoint ~30% slower.
/// It also counts without keeping (`count_only`), so measuring a value's size uses the same serializers.
struct Out {
    buf: Vec<u8>,
    count_only: bool,
    counted: usize,
}

impl std::io::Write for Out {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    #[inline]
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        if self.count_only {
            self.counted = self.counted.saturating_add(buf.len());
            return Ok(());
        }
        match buf {
            [a, b] => {
                self.buf.push(*a);
                self.buf.push(*b);
            }
            [a] => self.buf.push(*a),
            _ => self.buf.extend_from_slice(buf),
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `value` as compact JSON text (what `serde_json::to_string` gives), written as fast as the library writes
/// checkpoints.
///
/// ```
/// let text = resumable_agent::json::to_string(&resumable_agent::Message::user("hi"))?;
/// assert_eq!(text, r#"{"role":"user","content":"hi"}"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
///
/// # Errors
/// What `value`'s `Serialize` reports (the library's own types never fail: plain data, string keys).
pub fn to_string<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let mut out = Out {
        buf: Vec::with_capacity(128),
        count_only: false,
        counted: 0,
    };
    serde_json::to_writer(&mut out, value)?;
    // serde_json writes UTF-8 only.
    Ok(String::from_utf8(out.buf).unwrap_or_default())
}

/// The length of `value`'s JSON text, counted without building it.
pub(crate) fn len<T: Serialize + ?Sized>(value: &T) -> usize {
    let mut out = Out {
        buf: Vec::new(),
        count_only: true,
        counted: 0,
    };
    // The library's values are plain data with string keys: serializing cannot fail.
    let _ = serde_json::to_writer(&mut out, value);
    out.counted
}

/// A whole number however JSON spells it (`8`, `8.0`, `8e0`): what a store that re-spells numbers (one
/// that reads them as doubles) may write for one. Refused when negative, fractional or out of `T`'s range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Whole<T>(pub(crate) T);

impl<'de, T: TryFrom<u64>> serde::Deserialize<'de> for Whole<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<T: TryFrom<u64>> serde::de::Visitor<'_> for V<T> {
            type Value = Whole<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a non-negative integer")
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Whole<T>, E> {
                T::try_from(n)
                    .map(Whole)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Unsigned(n), &self))
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Whole<T>, E> {
                u64::try_from(n)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(n), &self))
                    .and_then(|n| self.visit_u64(n))
            }
            fn visit_f64<E: serde::de::Error>(self, f: f64) -> Result<Whole<T>, E> {
                #[allow(clippy::cast_precision_loss)] // 2^64 is an exact double
                let in_range = f.fract() == 0.0 && (0.0..u64::MAX as f64).contains(&f);
                if !in_range {
                    return Err(E::invalid_value(serde::de::Unexpected::Float(f), &self));
                }
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // checked just above
                self.visit_u64(f as u64)
            }
        }
        deserializer.deserialize_any(V(std::marker::PhantomData))
    }
}

/// `deserialize_with` for a whole number field ([`Whole`]).
pub(crate) fn whole<'de, D: serde::Deserializer<'de>, T: TryFrom<u64>>(d: D) -> Result<T, D::Error> {
    <Whole<T> as serde::Deserialize>::deserialize(d).map(|w| w.0)
}

/// `deserialize_with` for an optional whole number field ([`Whole`]).
pub(crate) fn whole_opt<'de, D: serde::Deserializer<'de>, T: TryFrom<u64>>(d: D) -> Result<Option<T>, D::Error> {
    <Option<Whole<T>> as serde::Deserialize>::deserialize(d).map(|w| w.map(|w| w.0))
}

#[cfg(test)]
mod tests {
    #[test]
    fn whole_numbers_are_read_however_they_are_spelled() {
        let read = |t: &str| serde_json::from_str::<super::Whole<u32>>(t).map(|w| w.0).ok();
        assert_eq!(
            (read("8"), read("8.0"), read("8e0"), read("0.0")),
            (Some(8), Some(8), Some(8), Some(0))
        );
        assert_eq!(
            (read("8.5"), read("-1"), read("1e10"), read("\"8\"")),
            (None, None, None, None)
        );
    }

    #[test]
    fn the_same_text_as_serde_json() {
        let v = serde_json::json!({"a": "q\"uo\\te\n", "b": [1, 2.5, null, true], "c": {"d": "é😀"}, "e": ""});
        assert_eq!(super::to_string(&v).ok(), serde_json::to_string(&v).ok());
        let s = "x\"".repeat(1000);
        assert_eq!(super::to_string(&s).ok(), serde_json::to_string(&s).ok());
        assert_eq!(super::len(&v), serde_json::to_string(&v).map_or(0, |t| t.len()));
    }
}
