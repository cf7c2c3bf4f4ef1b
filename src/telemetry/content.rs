//! Message content as the GenAI conventions record it (`recordContent`): `[{ role, parts: [{ type, … }] }]` as
//! JSON, within [`MAX_CONTENT_BYTES`](super::MAX_CONTENT_BYTES).

use super::MAX_CONTENT_BYTES;
use crate::message::{Content, ContentBlock, Message, Role};
use crate::model::{ModelResponse, StopReason};

/// The most bytes of one text kept in a part.
const MAX_PART_BYTES: usize = MAX_CONTENT_BYTES / 4;

/// `text` cut to `max` bytes (at a character), saying how much was cut.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…[{} more bytes]", &text[..end], text.len() - end)
}

/// A recorded text attribute within the bound.
pub(super) fn bounded(text: String) -> String {
    if text.len() <= MAX_CONTENT_BYTES {
        text
    } else {
        cut(&text, MAX_CONTENT_BYTES)
    }
}

/// `text` as a JSON string.
fn quoted(out: &mut String, text: &str) {
    out.push_str(&serde_json::to_string(text).unwrap_or_default());
}

/// `{"type":…,"content":…}` with `text` cut to a part's bound.
fn text_part(out: &mut String, kind: &str, text: &str) {
    out.push_str("{\"type\":\"");
    out.push_str(kind);
    out.push_str("\",\"content\":");
    quoted(out, &cut(text, MAX_PART_BYTES));
    out.push('}');
}

/// A block as a part (false: it has none).
fn part(out: &mut String, block: &ContentBlock) -> bool {
    match block {
        ContentBlock::Text { text, .. } => text_part(out, "text", text),
        ContentBlock::Thinking { thinking: text, .. } => text_part(out, "reasoning", text),
        ContentBlock::Reasoning(r) => text_part(out, "reasoning", &r.summary.join("\n")),
        ContentBlock::ToolUse(u) => {
            out.push_str("{\"type\":\"tool_call\",\"id\":");
            quoted(out, &u.id);
            out.push_str(",\"name\":");
            quoted(out, &u.name);
            out.push_str(",\"arguments\":");
            let args = crate::keys::canonical_json(&u.input);
            if args.len() <= MAX_PART_BYTES {
                out.push_str(&args)
            } else {
                quoted(out, &cut(&args, MAX_PART_BYTES))
            }
            out.push('}');
        }
        ContentBlock::ToolResult(r) => {
            out.push_str("{\"type\":\"tool_call_response\",\"id\":");
            quoted(out, &r.tool_use_id);
            out.push_str(",\"response\":");
            quoted(out, &cut(&r.content, MAX_PART_BYTES));
            out.push('}');
        }
        ContentBlock::Image { url, .. } => {
            out.push_str("{\"type\":\"uri\",\"modality\":\"image\",\"uri\":");
            quoted(out, &cut(url, 2048));
            out.push('}');
        }
        ContentBlock::ImageBase64 { mime_type, .. } => {
            out.push_str("{\"type\":\"blob\",\"modality\":\"image\",\"mime_type\":");
            quoted(out, mime_type);
            out.push('}');
        }
        _ => return false,
    }
    true
}

/// The parts of `blocks`, comma-separated.
fn parts(out: &mut String, blocks: &[ContentBlock]) {
    let mut first = true;
    for b in blocks {
        let at = out.len();
        if !first {
            out.push(',');
        }
        if part(out, b) {
            first = false;
        } else {
            out.truncate(at);
        }
    }
}

fn message(m: &Message) -> String {
    let blocks = m.blocks();
    let tool = !blocks.is_empty() && blocks.iter().all(|b| matches!(b, ContentBlock::ToolResult(_)));
    let role = match m.role {
        _ if tool => "tool",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::System => "system",
    };
    let mut out = format!("{{\"role\":\"{role}\",\"parts\":[");
    match &m.content {
        Content::Text(t) => text_part(&mut out, "text", t),
        Content::Blocks(b) => parts(&mut out, b),
    }
    out.push_str("]}");
    out
}

/// The conversation sent: the newest messages that fit.
pub(super) fn input_messages(messages: &[Message]) -> String {
    let mut kept: Vec<String> = Vec::new();
    let mut bytes = 2;
    for m in messages.iter().rev() {
        let text = message(m);
        if bytes + text.len() + 1 > MAX_CONTENT_BYTES {
            break;
        }
        bytes += text.len() + 1;
        kept.push(text);
    }
    kept.reverse();
    format!("[{}]", kept.join(","))
}

/// The instructions.
pub(super) fn system_instructions(system: &str) -> String {
    let mut out = String::from("[{\"type\":\"text\",\"content\":");
    quoted(&mut out, &cut(system, MAX_CONTENT_BYTES - 64));
    out.push_str("}]");
    out
}

/// The answer, with why it ended.
pub(super) fn output_messages(response: &ModelResponse, reason: &str) -> String {
    let mut out = String::from("[{\"role\":\"assistant\",\"parts\":[");
    parts(&mut out, &response.content);
    out.push_str("],\"finish_reason\":");
    quoted(&mut out, reason);
    out.push_str("}]");
    bounded(out)
}

/// Why the model stopped, in the conventions' words (`stop`, `tool_call`, `length`, …); what the model did
/// when the provider did not say.
pub(super) fn finish_reason(response: &ModelResponse) -> String {
    match &response.stop_reason {
        Some(StopReason::EndTurn) => "stop".into(),
        Some(StopReason::ToolUse) => "tool_call".into(),
        Some(StopReason::MaxTokens) => "length".into(),
        Some(other) => String::from(other.clone()),
        None if response.content.iter().any(|b| matches!(b, ContentBlock::ToolUse(_))) => "tool_call".into(),
        None => "stop".into(),
    }
}
