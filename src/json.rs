//! JSON text of the library's values, all through one writer (so serde's serializers are compiled once).

use serde::Serialize;

/// A `Vec<u8>` whose small writes are pushes: serde_json writes a string as runs between escapes and a
/// 2-byte escape for each `"` or `\`, and a JSON-in-JSON tool result has one every few bytes. In wasm, a
/// generic slice extend per escape made serializing a checkpoint ~30% slower.
struct Out(Vec<u8>);

impl std::io::Write for Out {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    #[inline]
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match buf {
            [a, b] => {
                self.0.push(*a);
                self.0.push(*b);
            }
            [a] => self.0.push(*a),
            _ => self.0.extend_from_slice(buf),
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `value` as compact JSON text (what `serde_json::to_string` gives).
///
/// # Errors
/// What `value`'s `Serialize` reports (the library's own types never fail: plain data, string keys).
pub(crate) fn to_string<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let mut out = Out(Vec::with_capacity(128));
    serde_json::to_writer(&mut out, value)?;
    // serde_json writes UTF-8 only.
    Ok(String::from_utf8(out.0).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_same_text_as_serde_json() {
        let v = serde_json::json!({"a": "q\"uo\\te\n", "b": [1, 2.5, null, true], "c": {"d": "é😀"}, "e": ""});
        assert_eq!(super::to_string(&v).ok(), serde_json::to_string(&v).ok());
        let s = "x\"".repeat(1000);
        assert_eq!(super::to_string(&s).ok(), serde_json::to_string(&s).ok());
    }
}
