//! The slow explanation of the fast decode: when a checkpoint's text does not decode, its JSON is walked to
//! name the exact path and problem (`messages[2].content[0].type: unknown block type "foo"`).

use serde_json::Value;

use super::{CHECKPOINT_VERSION, CheckpointError};

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn expected(path: &str, what: &str, got: &Value) -> CheckpointError {
    CheckpointError::at(path, format!("expected {what}, got {}", kind(got)))
}

fn obj<'a>(v: &'a Value, path: &str) -> Result<&'a serde_json::Map<String, Value>, CheckpointError> {
    v.as_object().ok_or_else(|| expected(path, "an object", v))
}

fn required<'a>(o: &'a serde_json::Map<String, Value>, key: &str, path: &str) -> Result<&'a Value, CheckpointError> {
    o.get(key)
        .ok_or_else(|| CheckpointError::at(join(path, key), "missing"))
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn string(o: &serde_json::Map<String, Value>, key: &str, path: &str, optional: bool) -> Result<(), CheckpointError> {
    match o.get(key) {
        None | Some(Value::Null) if optional => Ok(()),
        None => Err(CheckpointError::at(join(path, key), "missing")),
        Some(Value::String(_)) => Ok(()),
        Some(v) => Err(expected(&join(path, key), "a string", v)),
    }
}

fn count(v: &Value, path: &str, max: u64) -> Result<(), CheckpointError> {
    // `8.0` is `8`, as the decoder reads it (crate::json::Whole).
    let whole = v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1.8e19)
            .map(|f| f as u64)
    });
    match whole {
        Some(n) if n <= max => Ok(()),
        Some(n) => Err(CheckpointError::at(path, format!("{n} is too large (at most {max})"))),
        None => Err(expected(path, "a non-negative integer", v)),
    }
}

/// What is often passed where a checkpoint belongs, named: a checkpoint stringified twice, a run's whole result.
fn mistaken_for_a_checkpoint(v: &Value) -> Result<(), CheckpointError> {
    if v.as_str().is_some_and(|inner| inner.trim_start().starts_with('{')) {
        return Err(CheckpointError::at(
            "checkpoint",
            "expected a checkpoint object, got a string holding JSON: the checkpoint was stringified twice (JSON.parse it once, or pass the string you stored as it is)",
        ));
    }
    let result = v
        .as_object()
        .is_some_and(|o| !o.contains_key("messages") && o.get("checkpoint").is_some_and(Value::is_object));
    if result {
        return Err(CheckpointError::at(
            "messages",
            "missing: this is a run's result, not its checkpoint (pass result.checkpoint)",
        ));
    }
    Ok(())
}

/// Walks a checkpoint value and names the first structural problem. `Ok` means none was found.
pub(super) fn explain(v: &Value) -> Result<(), CheckpointError> {
    mistaken_for_a_checkpoint(v)?;
    let root = obj(v, "checkpoint")?;
    if let Some(version) = root.get("version").filter(|v| !v.is_null()) {
        count(version, "version", u64::MAX)?;
        let found = version.as_u64().unwrap_or(0);
        if found > u64::from(CHECKPOINT_VERSION) {
            return Err(CheckpointError::UnsupportedVersion {
                found,
                supported: CHECKPOINT_VERSION,
            });
        }
    }
    let messages = required(root, "messages", "")?;
    let messages = messages
        .as_array()
        .ok_or_else(|| expected("messages", "an array", messages))?;
    for (i, m) in messages.iter().enumerate() {
        explain_message(m, &format!("messages[{i}]"))?;
    }
    count(required(root, "iterations", "")?, "iterations", u64::from(u32::MAX))?;
    let usage = obj(required(root, "usage", "")?, "usage")?;
    for key in ["inputTokens", "outputTokens"] {
        count(required(usage, key, "usage")?, &join("usage", key), u64::MAX)?;
    }
    for key in ["pendingToolUseId", "question", "runId"] {
        string(root, key, "", true)?;
    }
    for key in ["createdAt", "updatedAt"] {
        if let Some(t) = root.get(key).filter(|t| !t.is_null()) {
            count(t, key, u64::MAX)?;
        }
    }
    if let Some(results) = root.get("toolResults").filter(|r| !r.is_null()) {
        let results = results
            .as_array()
            .ok_or_else(|| expected("toolResults", "an array", results))?;
        for (k, r) in results.iter().enumerate() {
            explain_tool_result(obj(r, &format!("toolResults[{k}]"))?, &format!("toolResults[{k}]"))?;
        }
    }
    if let Some(list) = array_field(root, "interrupts")? {
        for (k, i) in list.iter().enumerate() {
            explain_interrupt(i, &format!("interrupts[{k}]"))?;
        }
    }
    if let Some(list) = array_field(root, "approved")? {
        for (k, id) in list.iter().enumerate() {
            if !id.is_string() {
                return Err(expected(&format!("approved[{k}]"), "a string (a tool call id)", id));
            }
        }
    }
    if let Some(list) = array_field(root, "remembered")? {
        for (k, name) in list.iter().enumerate() {
            if !name.is_string() {
                return Err(expected(&format!("remembered[{k}]"), "a string (a tool name)", name));
            }
        }
    }
    if let Some(b) = root.get("budget").filter(|b| !b.is_null()) {
        crate::approval::Budget::from_value(b).map_err(|p| CheckpointError::at("budget", p))?;
    }
    if let Some(f) = root.get("fingerprint").filter(|f| !f.is_null()) {
        crate::approval::Fingerprint::from_value(f).map_err(|p| CheckpointError::at("fingerprint", p))?;
    }
    match root.get("reviewed") {
        None | Some(Value::Null) | Some(Value::Bool(_)) => {}
        Some(v) => return Err(expected("reviewed", "a boolean", v)),
    }
    if let Some(t) = root.get("thread").filter(|t| !t.is_null()) {
        let o = obj(t, "thread")?;
        string(o, "id", "thread", false)?;
        count(required(o, "step", "thread")?, "thread.step", u64::MAX)?;
        if let Some(p) = o.get("parentStep").filter(|p| !p.is_null()) {
            count(p, "thread.parentStep", u64::MAX)?;
        }
        string(o, "label", "thread", true)?;
    }
    if let Some(s) = root.get("summarized").filter(|s| !s.is_null()) {
        let o = obj(s, "summarized")?;
        string(o, "text", "summarized", false)?;
        count(required(o, "messages", "summarized")?, "summarized.messages", u64::MAX)?;
        string(o, "hash", "summarized", false)?;
    }
    match root.get("traceparent") {
        None | Some(Value::Null | Value::String(_)) => {}
        Some(v) => return Err(expected("traceparent", "a string (a W3C traceparent)", v)),
    }
    if let Some(sig) = root.get("signature").filter(|s| !s.is_null()) {
        let o = obj(sig, "signature")?;
        string(o, "kid", "signature", false)?;
        string(o, "mac", "signature", false)?;
    }
    Ok(())
}

/// An optional array field of the checkpoint.
fn array_field<'a>(
    o: &'a serde_json::Map<String, Value>,
    key: &str,
) -> Result<Option<&'a Vec<Value>>, CheckpointError> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(a)) => Ok(Some(a)),
        Some(v) => Err(expected(key, "an array", v)),
    }
}

fn explain_interrupt(v: &Value, path: &str) -> Result<(), CheckpointError> {
    let o = obj(v, path)?;
    match required(o, "kind", path)? {
        Value::String(k) if matches!(k.as_str(), "approval" | "question" | "elicitation" | "budget") => {}
        other => {
            return Err(CheckpointError::at(
                join(path, "kind"),
                format!("expected \"approval\", \"question\", \"elicitation\" or \"budget\", got {other}"),
            ));
        }
    }
    string(o, "id", path, false)?;
    string(o, "toolName", path, false)?;
    required(o, "input", path)?;
    string(o, "question", path, true)?;
    match o.get("options") {
        None | Some(Value::Null) => {}
        Some(Value::Array(options)) => {
            if let Some((k, x)) = options.iter().enumerate().find(|(_, x)| !x.is_string()) {
                return Err(expected(&format!("{path}.options[{k}]"), "a string", x));
            }
        }
        Some(v) => return Err(expected(&join(path, "options"), "an array of strings", v)),
    }
    if let Some(t) = o.get("expiresAt").filter(|t| !t.is_null()) {
        count(t, &join(path, "expiresAt"), u64::MAX)?;
    }
    if let Some(k) = o.get("approvers").filter(|k| !k.is_null()) {
        count(k, &join(path, "approvers"), u64::from(u32::MAX))?;
    }
    if let Some(list) = o.get("approvals").filter(|a| !a.is_null()) {
        let list = list
            .as_array()
            .ok_or_else(|| expected(&join(path, "approvals"), "an array of { by, at }", list))?;
        for (k, a) in list.iter().enumerate() {
            let at = format!("{path}.approvals[{k}]");
            let mark = obj(a, &at)?;
            string(mark, "by", &at, false)?;
            count(required(mark, "at", &at)?, &join(&at, "at"), u64::MAX)?;
        }
    }
    Ok(())
}

fn explain_message(m: &Value, path: &str) -> Result<(), CheckpointError> {
    let o = obj(m, path)?;
    let role_path = join(path, "role");
    match required(o, "role", path)? {
        Value::String(r) if matches!(r.as_str(), "user" | "assistant" | "system") => {}
        Value::String(r) => {
            return Err(CheckpointError::at(
                role_path,
                format!("expected \"user\", \"assistant\" or \"system\", got {r:?}"),
            ));
        }
        other => return Err(expected(&role_path, "a string", other)),
    }
    match required(o, "content", path)? {
        Value::String(_) => Ok(()),
        Value::Array(blocks) => explain_blocks(blocks, &join(path, "content")),
        other => Err(expected(
            &join(path, "content"),
            "a string or an array of content blocks",
            other,
        )),
    }
}

/// Names the first malformed block of `blocks` (also used for model responses).
pub(crate) fn explain_blocks(blocks: &[Value], path: &str) -> Result<(), CheckpointError> {
    for (j, b) in blocks.iter().enumerate() {
        let bp = format!("{path}[{j}]");
        let o = obj(b, &bp)?;
        let ty = required(o, "type", &bp)?;
        let ty = ty
            .as_str()
            .ok_or_else(|| expected(&join(&bp, "type"), "a string", ty))?;
        match ty {
            "text" => {
                string(o, "text", &bp, false)?;
                string(o, "signature", &bp, true)?;
            }
            "image" => {
                string(o, "url", &bp, false)?;
                string(o, "mimeType", &bp, true)?;
            }
            "image_base64" => {
                string(o, "data", &bp, false)?;
                string(o, "mimeType", &bp, false)?;
            }
            "tool_use" => {
                string(o, "id", &bp, false)?;
                string(o, "name", &bp, false)?;
                required(o, "input", &bp)?;
                string(o, "signature", &bp, true)?;
            }
            "tool_result" => explain_tool_result(o, &bp)?,
            "thinking" => {
                string(o, "thinking", &bp, false)?;
                string(o, "signature", &bp, true)?;
            }
            "redacted_thinking" => string(o, "data", &bp, false)?,
            "reasoning" => {
                string(o, "id", &bp, false)?;
                string(o, "encryptedContent", &bp, true)?;
                let summary = required(o, "summary", &bp)?;
                let at = join(&bp, "summary");
                let parts = summary
                    .as_array()
                    .ok_or_else(|| expected(&at, "an array of strings", summary))?;
                if let Some((k, part)) = parts.iter().enumerate().find(|(_, p)| !p.is_string()) {
                    return Err(expected(&format!("{at}[{k}]"), "a string", part));
                }
            }
            other => {
                return Err(CheckpointError::at(
                    join(&bp, "type"),
                    format!(
                        "unknown block type {other:?} (expected text, image, image_base64, tool_use, tool_result, thinking, redacted_thinking or reasoning)"
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn explain_tool_result(o: &serde_json::Map<String, Value>, path: &str) -> Result<(), CheckpointError> {
    string(o, "toolUseId", path, false)?;
    string(o, "content", path, false)?;
    match o.get("isError") {
        None | Some(Value::Null) | Some(Value::Bool(_)) => Ok(()),
        Some(v) => Err(expected(&join(path, "isError"), "a boolean", v)),
    }
}
