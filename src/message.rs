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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Author of the message.
    pub role: Role,
    /// A plain string or a list of content blocks.
    pub content: Content,
}

/// A message's content: `string | MessageContent[]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Content blocks.
    Blocks(Vec<ContentBlock>),
}

/// One content block (`MessageContent` in the reference).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// `{ type: "text", text }`
    Text {
        /// The text.
        text: String,
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
    pub input_tokens: u64,
    /// Completion tokens.
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
                    ContentBlock::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect(),
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
