//! Messages and content blocks, in exactly the reference's JSON shapes.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The human (and tool results, which providers carry in user messages).
    User,
    /// The model.
    Assistant,
    /// A system message kept in the history.
    System,
}

/// One message of the conversation: `{ role, content }`.
///
/// ```
/// use resumable_agent::{Message, Role};
/// let m: Message = serde_json::from_str(r#"{"role":"user","content":"hi"}"#)?;
/// assert_eq!(m.role, Role::User);
/// assert_eq!(m.text(), "hi");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Message {
    /// Author of the message.
    pub role: Role,
    /// A plain string or a list of content blocks.
    pub content: Content,
}

/// A message's content: `string | MessageContent[]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Content blocks.
    Blocks(Vec<ContentBlock>),
}

/// One content block (`MessageContent` in the reference).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// `{ type: "text", text, signature? }`
    Text {
        /// The text.
        text: String,
        /// A provider's signature over the reasoning behind this part (Gemini's `thoughtSignature`), sent back on
        /// the same part. A signed text is kept even when empty.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// `{ type: "image", url, mimeType? }`
    Image {
        /// Where the image is.
        url: String,
        /// Its media type, if known.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
    /// `{ type: "image_base64", data, mimeType }`
    ImageBase64 {
        /// Base64 bytes.
        data: String,
        /// Media type.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// `{ type: "tool_use", id, name, input }`: the model calls a tool.
    ToolUse(ToolUse),
    /// `{ type: "tool_result", toolUseId, content, isError? }`: a tool's answer.
    ToolResult(ToolResult),
    /// `{ type: "thinking", thinking, signature }`: a model's extended thinking (Anthropic), kept in the
    /// history and sent back as it was, as the API requires when thinking precedes tool use.
    Thinking {
        /// The thinking text.
        thinking: String,
        /// The provider's signature over it.
        signature: String,
    },
    /// `{ type: "redacted_thinking", data }`: thinking the provider encrypted; sent back as it was.
    RedactedThinking {
        /// The encrypted thinking.
        data: String,
    },
    /// `{ type: "reasoning", id, summary, encryptedContent? }`: a reasoning item of the OpenAI Responses API,
    /// kept in the history and sent back as it was before the calls it led to (with `store: false` the API keeps
    /// nothing, and needs it back).
    Reasoning(Reasoning),
}

/// A reasoning item of the OpenAI Responses API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reasoning {
    /// The item's id (`rs_…`).
    pub id: String,
    /// The summary's texts, in order (empty when no summary was asked for).
    pub summary: Vec<String>,
    /// The reasoning, encrypted by the provider (`include: ["reasoning.encrypted_content"]`).
    #[serde(rename = "encryptedContent", default, skip_serializing_if = "Option::is_none")]
    pub encrypted_content: Option<String>,
}

/// A tool call made by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolUse {
    /// Provider-assigned call id, answered by a [`ToolResult`] with the same `toolUseId`.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, any JSON value.
    pub input: Value,
    /// A provider's signature over the reasoning that led to this call (Gemini's `thoughtSignature`), sent back
    /// on the same call: the API refuses a call's result when its signature is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

impl ToolUse {
    /// A call without a signature.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        ToolUse {
            id: id.into(),
            name: name.into(),
            input,
            signature: None,
        }
    }
}

impl ContentBlock {
    /// A text block without a signature.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text {
            text: text.into(),
            signature: None,
        }
    }
}

/// The answer to one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The `id` of the [`ToolUse`] this answers.
    #[serde(rename = "toolUseId")]
    pub tool_use_id: String,
    /// What the model sees.
    pub content: String,
    /// True when the tool failed (unknown tool, thrown error, lost result).
    #[serde(rename = "isError", default, skip_serializing_if = "is_false")]
    pub is_error: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Token counts, added up across the whole run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt tokens.
    #[serde(deserialize_with = "crate::json::whole")]
    pub input_tokens: u64,
    /// Completion tokens.
    #[serde(deserialize_with = "crate::json::whole")]
    pub output_tokens: u64,
}

impl Usage {
    /// Adds `other` to `self`, saturating rather than overflowing.
    pub fn add(&mut self, other: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
    }
}

impl Message {
    /// A user message with plain text content.
    pub fn user(text: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: Content::Text(text.into()),
        }
    }

    /// An assistant message made of blocks.
    pub fn assistant(blocks: Vec<ContentBlock>) -> Self {
        Message {
            role: Role::Assistant,
            content: Content::Blocks(blocks),
        }
    }

    /// The content blocks (empty for string content).
    pub fn blocks(&self) -> &[ContentBlock] {
        match &self.content {
            Content::Blocks(b) => b,
            Content::Text(_) => &[],
        }
    }

    /// The text of the message: a string content, or its text blocks joined without separator.
    pub fn text(&self) -> String {
        match &self.content {
            Content::Text(t) => t.clone(),
            Content::Blocks(blocks) => blocks
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text { text, .. } => Some(text.as_str()),
                    _ => None,
                })
                .collect(),
        }
    }

    /// True for an assistant message that says nothing: no text (or only empty text) and no tool call (e.g.
    /// only thinking). Such an answer ends a run with `""`; it is never sent back to a model.
    pub fn is_empty_answer(&self) -> bool {
        self.role == Role::Assistant
            && match &self.content {
                Content::Text(t) => t.is_empty(),
                Content::Blocks(blocks) => !blocks.iter().any(|b| match b {
                    ContentBlock::Text { text, .. } => !text.is_empty(),
                    ContentBlock::ToolUse(_) => true,
                    _ => false,
                }),
            }
    }

    /// The tool calls in this message, in order.
    pub fn tool_uses(&self) -> impl Iterator<Item = &ToolUse> {
        self.blocks().iter().filter_map(|b| match b {
            ContentBlock::ToolUse(u) => Some(u),
            _ => None,
        })
    }

    /// The tool results in this message, in order.
    pub fn tool_results(&self) -> impl Iterator<Item = &ToolResult> {
        self.blocks().iter().filter_map(|b| match b {
            ContentBlock::ToolResult(r) => Some(r),
            _ => None,
        })
    }
}

/// Why a block cannot stand where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BlockProblem {
    ToolUseOutsideAssistant,
    ToolResultOutsideUser,
    /// A tool_result after another kind of block: providers want a turn's results first.
    ResultAfterOther,
    /// Thinking belongs to the model's turns.
    ThinkingOutsideAssistant,
    EmptyId,
    DuplicateId(String),
}

/// The first block of a `role` message breaking what every provider enforces: `tool_use` only from the
/// assistant, each with a non-empty id unique in its message; `tool_result` only from the user.
pub(crate) fn block_problem(role: Role, blocks: &[ContentBlock]) -> Option<(usize, BlockProblem)> {
    let mut ids = std::collections::HashSet::new();
    let mut other = false;
    blocks.iter().enumerate().find_map(|(j, b)| {
        let problem = match b {
            ContentBlock::ToolUse(_) if role != Role::Assistant => BlockProblem::ToolUseOutsideAssistant,
            ContentBlock::ToolUse(u) if u.id.is_empty() => BlockProblem::EmptyId,
            ContentBlock::ToolUse(u) if !ids.insert(u.id.as_str()) => BlockProblem::DuplicateId(u.id.clone()),
            ContentBlock::ToolResult(_) if role != Role::User => BlockProblem::ToolResultOutsideUser,
            ContentBlock::ToolResult(_) if other => BlockProblem::ResultAfterOther,
            ContentBlock::ToolResult(_) => return None,
            ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } | ContentBlock::Reasoning(_)
                if role != Role::Assistant =>
            {
                BlockProblem::ThinkingOutsideAssistant
            }
            _ => {
                other = true;
                return None;
            }
        };
        Some((j, problem))
    })
}

// Hand-written decoding: serde's derived untagged / internally tagged enums buffer every value into an
// intermediate tree first, which costs time on every resume and a lot of code in the .wasm.

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Content;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Content, E> {
                Ok(Content::Text(v.to_owned()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Content, E> {
                Ok(Content::Text(v))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(1));
                while let Some(b) = seq.next_element::<ContentBlock>()? {
                    blocks.push(b);
                }
                Ok(Content::Blocks(blocks))
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// A block's `type`, read without copying it.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum BlockKind {
    Text,
    Image,
    ImageBase64,
    ToolUse,
    ToolResult,
    Thinking,
    RedactedThinking,
    Reasoning,
}

thread_local! {
    /// Set while messages are read when one reads back other than its text says: a key it does not keep, a
    /// default it fills in or leaves out ([`read_as_written`]).
    static ALTERED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `read` (which decodes messages) and says whether every message it read is exactly what its JSON text
/// says — no key dropped, no default filled in or left out — so a host that parsed the same text with its
/// own parser holds the same messages. Other changes (a repaired text, an upgraded format) are the caller's
/// to report with [`altered`].
pub(crate) fn read_as_written<T>(read: impl FnOnce() -> T) -> (T, bool) {
    ALTERED.set(false);
    let out = read();
    (out, !ALTERED.replace(false))
}

/// Notes that what is being read differs from its text ([`read_as_written`]).
pub(crate) fn altered() {
    ALTERED.set(true);
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(field_identifier, rename_all = "lowercase")]
        enum Field {
            Role,
            Content,
            #[serde(other)]
            Other,
        }
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Message;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a message { role, content }")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Message, A::Error> {
                use serde::de::Error;
                let (mut role, mut content) = (None, None);
                while let Some(key) = map.next_key::<Field>()? {
                    match key {
                        Field::Role if role.is_some() => return Err(A::Error::duplicate_field("role")),
                        Field::Content if content.is_some() => return Err(A::Error::duplicate_field("content")),
                        Field::Role => role = Some(map.next_value()?),
                        Field::Content => content = Some(map.next_value()?),
                        Field::Other => {
                            altered();
                            map.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(Message {
                    role: role.ok_or_else(|| A::Error::missing_field("role"))?,
                    content: content.ok_or_else(|| A::Error::missing_field("content"))?,
                })
            }
        }
        deserializer.deserialize_struct("Message", &["role", "content"], V)
    }
}

/// A block's keys (`Other`: one no block has).
#[derive(Deserialize, Clone, Copy)]
#[serde(field_identifier)]
enum BlockField {
    #[serde(rename = "type")]
    Type,
    #[serde(rename = "text")]
    Text,
    #[serde(rename = "url")]
    Url,
    #[serde(rename = "mimeType")]
    MimeType,
    #[serde(rename = "data")]
    Data,
    #[serde(rename = "id")]
    Id,
    #[serde(rename = "name")]
    Name,
    #[serde(rename = "input")]
    Input,
    #[serde(rename = "toolUseId")]
    ToolUseId,
    #[serde(rename = "content")]
    Content,
    #[serde(rename = "isError")]
    IsError,
    #[serde(rename = "thinking")]
    Thinking,
    #[serde(rename = "signature")]
    Signature,
    #[serde(rename = "summary")]
    Summary,
    #[serde(rename = "encryptedContent")]
    EncryptedContent,
    #[serde(other)]
    Other,
}

const BLOCK_FIELDS: [&str; 15] = [
    "type",
    "text",
    "url",
    "mimeType",
    "data",
    "id",
    "name",
    "input",
    "toolUseId",
    "content",
    "isError",
    "thinking",
    "signature",
    "summary",
    "encryptedContent",
];

/// Every field any block may have, as read (`seen`: a bit per [`BlockField`] present); which ones are
/// required depends on `type`.
#[derive(Default)]
struct AnyBlock {
    kind: Option<BlockKind>,
    text: Option<String>,
    url: Option<String>,
    mime_type: Option<String>,
    data: Option<String>,
    id: Option<String>,
    name: Option<String>,
    // `null` is an input too (absent is not): what a model wrote is read back as it was.
    input: Option<Value>,
    tool_use_id: Option<String>,
    content: Option<String>,
    is_error: Option<bool>,
    thinking: Option<String>,
    signature: Option<String>,
    summary: Option<Vec<String>>,
    encrypted_content: Option<String>,
    seen: u32,
}

impl AnyBlock {
    /// The keys a block of `kind` keeps, as [`BlockField`] bits.
    fn kept(kind: &BlockKind) -> u32 {
        use BlockField as F;
        let bits = |fields: &[BlockField]| fields.iter().fold(1 << F::Type as u32, |m, f| m | 1 << *f as u32);
        match kind {
            BlockKind::Text => bits(&[F::Text, F::Signature]),
            BlockKind::Image => bits(&[F::Url, F::MimeType]),
            BlockKind::ImageBase64 => bits(&[F::Data, F::MimeType]),
            BlockKind::ToolUse => bits(&[F::Id, F::Name, F::Input, F::Signature]),
            BlockKind::ToolResult => bits(&[F::ToolUseId, F::Content, F::IsError]),
            BlockKind::Thinking => bits(&[F::Thinking, F::Signature]),
            BlockKind::RedactedThinking => bits(&[F::Data]),
            BlockKind::Reasoning => bits(&[F::Id, F::Summary, F::EncryptedContent]),
        }
    }
}

impl<'de> Deserialize<'de> for AnyBlock {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = AnyBlock;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a content block { type, ... }")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<AnyBlock, A::Error> {
                use serde::de::Error;
                let mut b = AnyBlock::default();
                while let Some(key) = map.next_key::<BlockField>()? {
                    let bit = 1u32 << key as u32;
                    if key as usize != BlockField::Other as usize && b.seen & bit != 0 {
                        let name = BLOCK_FIELDS.get(key as usize).copied().unwrap_or("field");
                        return Err(A::Error::duplicate_field(name));
                    }
                    b.seen |= bit;
                    match key {
                        BlockField::Type => b.kind = Some(map.next_value()?),
                        BlockField::Text => b.text = map.next_value()?,
                        BlockField::Url => b.url = map.next_value()?,
                        BlockField::MimeType => {
                            b.mime_type = map.next_value()?;
                            if b.mime_type.is_none() {
                                altered(); // `null`, written back as no key
                            }
                        }
                        BlockField::Data => b.data = map.next_value()?,
                        BlockField::Id => b.id = map.next_value()?,
                        BlockField::Name => b.name = map.next_value()?,
                        BlockField::Input => b.input = Some(map.next_value()?),
                        BlockField::ToolUseId => b.tool_use_id = map.next_value()?,
                        BlockField::Content => b.content = map.next_value()?,
                        BlockField::IsError => b.is_error = map.next_value()?,
                        BlockField::Thinking => b.thinking = map.next_value()?,
                        BlockField::Signature => {
                            b.signature = map.next_value()?;
                            if b.signature.is_none() {
                                altered(); // `null`, written back as no key
                            }
                        }
                        BlockField::Summary => b.summary = map.next_value()?,
                        BlockField::EncryptedContent => {
                            b.encrypted_content = map.next_value()?;
                            if b.encrypted_content.is_none() {
                                altered(); // `null`, written back as no key
                            }
                        }
                        BlockField::Other => {
                            altered();
                            map.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(b)
            }
        }
        deserializer.deserialize_struct("ContentBlock", &BLOCK_FIELDS, V)
    }
}

/// An optional JSON value where `null` is a value (`Some(Null)`) and only an absent field is `None`.
pub(crate) fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let b = AnyBlock::deserialize(deserializer)?;
        let kind = b.kind.ok_or_else(|| D::Error::missing_field("type"))?;
        // Keys another kind of block has, `isError: false` and a thinking block without `signature` are
        // written back otherwise than they were read.
        let thinking_unsigned = matches!(kind, BlockKind::Thinking) && b.signature.is_none();
        if b.seen & !AnyBlock::kept(&kind) != 0 || b.is_error == Some(false) || thinking_unsigned {
            altered();
        }
        let need = |v: Option<String>, field: &'static str| v.ok_or_else(|| D::Error::missing_field(field));
        Ok(match kind {
            BlockKind::Text => ContentBlock::Text {
                text: need(b.text, "text")?,
                signature: b.signature,
            },
            BlockKind::Image => ContentBlock::Image {
                url: need(b.url, "url")?,
                mime_type: b.mime_type,
            },
            BlockKind::ImageBase64 => ContentBlock::ImageBase64 {
                data: need(b.data, "data")?,
                mime_type: need(b.mime_type, "mimeType")?,
            },
            BlockKind::ToolUse => ContentBlock::ToolUse(ToolUse {
                id: need(b.id, "id")?,
                name: need(b.name, "name")?,
                input: b.input.ok_or_else(|| D::Error::missing_field("input"))?,
                signature: b.signature,
            }),
            BlockKind::ToolResult => ContentBlock::ToolResult(ToolResult {
                tool_use_id: need(b.tool_use_id, "toolUseId")?,
                content: need(b.content, "content")?,
                is_error: b.is_error.unwrap_or(false),
            }),
            BlockKind::Thinking => ContentBlock::Thinking {
                thinking: need(b.thinking, "thinking")?,
                signature: b.signature.unwrap_or_default(),
            },
            BlockKind::RedactedThinking => ContentBlock::RedactedThinking {
                data: need(b.data, "data")?,
            },
            BlockKind::Reasoning => ContentBlock::Reasoning(Reasoning {
                id: need(b.id, "id")?,
                summary: b.summary.ok_or_else(|| D::Error::missing_field("summary"))?,
                encrypted_content: b.encrypted_content,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> ContentBlock {
        ContentBlock::ToolUse(ToolUse {
            id: id.into(),
            name: "t".into(),
            input: Value::Null,
            signature: None,
        })
    }

    fn result() -> ContentBlock {
        ContentBlock::ToolResult(ToolResult {
            tool_use_id: "a".into(),
            content: String::new(),
            is_error: false,
        })
    }

    #[test]
    fn block_rules_are_the_providers_rules() {
        let text = ContentBlock::text("x");
        assert_eq!(
            block_problem(Role::Assistant, &[text.clone(), call("a"), call("b")]),
            None
        );
        assert_eq!(block_problem(Role::User, &[result(), text.clone()]), None);
        assert_eq!(
            block_problem(Role::User, &[call("a")]),
            Some((0, BlockProblem::ToolUseOutsideAssistant))
        );
        assert_eq!(
            block_problem(Role::Assistant, &[text, result()]),
            Some((1, BlockProblem::ToolResultOutsideUser))
        );
        assert_eq!(
            block_problem(Role::Assistant, &[call("")]),
            Some((0, BlockProblem::EmptyId))
        );
        assert_eq!(
            block_problem(Role::Assistant, &[call("a"), call("b"), call("a")]),
            Some((2, BlockProblem::DuplicateId("a".into())))
        );
        assert_eq!(
            block_problem(Role::User, &[ContentBlock::text("x"), result()]),
            Some((1, BlockProblem::ResultAfterOther))
        );
    }
}
