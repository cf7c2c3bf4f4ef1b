//! Server-sent events, parsed incrementally from the bytes of a response body as they arrive (the
//! WHATWG format: `event:` and `data:` fields, a blank line ends an event, `:` starts a comment).

/// One event: its `event:` name (if any) and its `data:` lines joined with `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, if the server named the event.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
    /// The last `id:` the stream gave, as of this event (what a client resuming the stream sends as
    /// `Last-Event-ID`).
    pub id: Option<String>,
}

/// The longest event kept while waiting for its end, unless the parser is given another bound: a server that
/// never ends a line, or never ends an event with a blank line, cannot exhaust memory.
const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// Turns chunks of bytes (split anywhere, even inside a UTF-8 character) into events.
#[derive(Debug)]
pub struct SseParser {
    line: Vec<u8>,
    event: Option<String>,
    data: String,
    has_data: bool,
    id: Option<String>,
    limit: usize,
}

impl Default for SseParser {
    fn default() -> Self {
        SseParser::with_limit(MAX_EVENT_BYTES)
    }
}

impl SseParser {
    /// A parser that refuses an event (its `data:` lines and the line being read) longer than `limit` bytes.
    pub fn with_limit(limit: usize) -> Self {
        SseParser {
            line: Vec::new(),
            event: None,
            data: String::new(),
            has_data: false,
            id: None,
            limit,
        }
    }

    /// The longest event it keeps, in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Feeds `chunk`, appending every event it completes to `out`.
    ///
    /// # Errors
    /// A line longer than the bound.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), String> {
        for &b in chunk {
            if b == b'\n' {
                let mut line = std::mem::take(&mut self.line);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                self.line_done(&String::from_utf8_lossy(&line), out);
            } else {
                if self.line.len() + self.data.len() >= self.limit {
                    return Err(format!("a server-sent event is longer than {} bytes", self.limit));
                }
                self.line.push(b);
            }
        }
        Ok(())
    }

    /// The end of the body: a last event without its blank line still counts.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.line_done(&String::from_utf8_lossy(&line), out);
        }
        self.line_done("", out);
    }

    fn line_done(&mut self, line: &str, out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if self.has_data || self.event.is_some() {
                out.push(SseEvent {
                    event: self.event.take(),
                    data: std::mem::take(&mut self.data),
                    id: self.id.clone(),
                });
            }
            self.has_data = false;
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            // An id with a NUL is ignored (WHATWG).
            "id" if !value.contains('\0') => self.id = Some(value.to_owned()),
            _ => {} // retry, and unknown fields carry nothing a client needs
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut p = SseParser::default();
        let mut out = Vec::new();
        for c in chunks {
            p.push(c, &mut out).unwrap_or_default();
        }
        p.finish(&mut out);
        out
    }

    #[test]
    fn events_split_anywhere_arrive_whole() {
        let text = "event: message_start\ndata: {\"a\":1}\n\n: a comment\nevent: delta\r\ndata: caf\u{e9} \u{2615}\r\ndata: second line\r\n\r\ndata: [DONE]\n\n";
        let whole = parse(&[text.as_bytes()]);
        assert_eq!(
            whole,
            vec![
                SseEvent {
                    event: Some("message_start".into()),
                    data: "{\"a\":1}".into(),
                    id: None
                },
                SseEvent {
                    event: Some("delta".into()),
                    data: "caf\u{e9} \u{2615}\nsecond line".into(),
                    id: None
                },
                SseEvent {
                    event: None,
                    data: "[DONE]".into(),
                    id: None
                },
            ]
        );
        // Every split point, including inside the UTF-8 of é and ☕, gives the same events.
        let bytes = text.as_bytes();
        for i in 0..bytes.len() {
            assert_eq!(parse(&[&bytes[..i], &bytes[i..]]), whole, "split at {i}");
        }
        let one_by_one: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(parse(&one_by_one), whole);
    }

    #[test]
    fn each_event_carries_the_last_id_the_stream_gave() {
        let events = parse(&[b"id: e1\ndata: a\n\ndata: b\n\nid: e2\r\ndata: c\n\nid: bad\0id\ndata: d\n\n"]);
        let ids: Vec<Option<&str>> = events.iter().map(|e| e.id.as_deref()).collect();
        assert_eq!(ids, [Some("e1"), Some("e1"), Some("e2"), Some("e2")]);
    }

    #[test]
    fn a_last_event_without_its_blank_line_counts_and_endless_lines_are_refused() {
        assert_eq!(
            parse(&[b"data: x"]),
            vec![SseEvent {
                event: None,
                data: "x".into(),
                id: None
            }]
        );
        let mut p = SseParser::default();
        let long = vec![b'a'; MAX_EVENT_BYTES + 1];
        assert!(p.push(&long, &mut Vec::new()).is_err());
    }

    #[test]
    fn an_event_whose_data_lines_never_end_is_refused_at_the_limit() {
        // Every line short, but no blank line ever ends the event: the data would grow without bound.
        let mut p = SseParser::with_limit(1000);
        let mut out = Vec::new();
        let mut refused = None;
        for i in 0..200 {
            if let Err(e) = p.push(b"data: 0123456789\n", &mut out) {
                refused = Some((i, e));
                break;
            }
        }
        let (at, e) = refused.expect("refused");
        assert!(out.is_empty());
        assert!((80..100).contains(&at), "refused after {at} lines");
        assert_eq!(e, "a server-sent event is longer than 1000 bytes");
    }
}
