//! Structured output: the `final_answer` tool an agent with an output schema adds, and the answers a run
//! takes as its structured answer or feeds back for the model to correct.

use serde_json::Value;

use super::{Run, Step};
use crate::message::{Message, Role, ToolResult, ToolUse};
use crate::model::ToolDefinition;

/// The tool through which a model gives a structured answer, added to the tools of an agent with an output
/// schema (a tool of its own by that name is refused).
pub const FINAL_ANSWER_TOOL: &str = "final_answer";

/// Default bound on answers that do not match the output schema, each fed back to the model to correct.
pub const DEFAULT_MAX_OUTPUT_RETRIES: u32 = 2;

/// An agent's output schema and how often the model may miss it.
#[derive(Debug, Clone)]
pub(crate) struct OutputRule {
    /// The schema as given.
    pub(super) schema: Value,
    /// True when the schema is not an object schema: the final_answer input is then `{ value }`.
    pub(super) wrapped: bool,
    pub(super) max_retries: u32,
}

impl OutputRule {
    /// The answer `text` (JSON, maybe in a code fence; or the text itself where the schema takes a string)
    /// as a value that matches the schema.
    pub(super) fn parse_text(&self, text: &str, limits: &crate::limits::Limits) -> Result<Value, String> {
        let body = strip_fence(text.trim());
        let parsed = serde_json::from_str::<Value>(body);
        let value = match parsed {
            Ok(v) => v,
            Err(_)
                if self.wrapped
                    && crate::schema::check(&self.schema, &Value::String(text.to_owned()), "answer").is_ok() =>
            {
                return Ok(Value::String(text.to_owned()));
            }
            Err(e) if body.is_empty() => return Err(format!("the answer is empty ({e})")),
            Err(e) => return Err(format!("the answer is not JSON ({e})")),
        };
        self.check(value, limits)
    }

    /// `value` if it matches the schema and the depth limit.
    pub(super) fn check(&self, mut value: Value, limits: &crate::limits::Limits) -> Result<Value, String> {
        let depth = crate::limits::value_depth(&value);
        if depth > limits.max_depth {
            return Err(format!(
                "the answer nests {depth} deep; at most {} (limits.maxDepth)",
                limits.max_depth
            ));
        }
        crate::schema::check(&self.schema, &value, "answer")?;
        crate::limits::normalize_numbers(&mut value);
        Ok(value)
    }
}

/// The [`FINAL_ANSWER_TOOL`] for an output `schema`, and whether its input wraps the answer in `{ value }`
/// (for a schema that is not an object schema: tool inputs are objects).
pub(crate) fn final_answer_definition(schema: &Value) -> (ToolDefinition, bool) {
    let wrapped = schema.get("type").and_then(Value::as_str) != Some("object");
    let input_schema = if wrapped {
        serde_json::json!({"type": "object", "properties": {"value": schema}, "required": ["value"]})
    } else {
        schema.clone()
    };
    let definition = ToolDefinition {
        name: FINAL_ANSWER_TOOL.to_owned(),
        description: "Gives your final answer as structured data: call it once, when you are done, with the answer as its input, instead of answering in text.".to_owned(),
        input_schema,
    };
    (definition, wrapped)
}

/// The inside of a Markdown code fence (```json … ```), or `text` as it is.
pub(super) fn strip_fence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return text;
    };
    // Past the fence's info string ("json").
    body.split_once('\n').map_or(body, |(_, b)| b).trim()
}
impl Run<'_> {
    /// The text of the model's last turn.
    pub(super) fn answer_text(&self) -> String {
        self.state
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant)
            .map(Message::text)
            .unwrap_or_default()
    }

    /// The run answers a final_answer call itself: "Received." and the run's structured answer when the
    /// input matches the schema, else an error result the model can correct (within the bound).
    pub(super) fn final_answer(&mut self, call: ToolUse) -> Step {
        let checked = match (&self.config.output, call.input.as_object()) {
            (None, _) => Err("this agent has no output schema".to_owned()),
            (Some(_), None) => Err("the arguments are not a JSON object".to_owned()),
            (Some(rule), Some(input)) => {
                let value = if rule.wrapped {
                    input
                        .get("value")
                        .cloned()
                        .ok_or_else(|| "the input has no \"value\"".to_owned())
                } else {
                    Ok(call.input.clone())
                };
                value.and_then(|v| rule.check(v, &self.config.limits))
            }
        };
        match checked {
            Ok(value) => {
                self.state.structured = Some(value);
                let result = ToolResult {
                    tool_use_id: call.id.clone(),
                    content: "Received.".to_owned(),
                    is_error: false,
                };
                self.state.tool_results.push(result.clone());
                Step::Answered(call, result)
            }
            Err(problem) => self.missed_output(problem, Some(call)),
        }
    }

    /// An answer that missed the output schema: fed back to the model (as the call's error result, or a
    /// user message after a text answer) while the bound allows, else [`Step::InvalidOutput`].
    pub(super) fn missed_output(&mut self, problem: String, call: Option<ToolUse>) -> Step {
        self.state.output_attempts = self.state.output_attempts.saturating_add(1);
        let max = self.config.output.as_ref().map_or(0, |r| r.max_retries);
        let feedback = format!(
            "The answer does not match the required output schema: {problem}. Call {FINAL_ANSWER_TOOL} again with an input that matches its schema."
        );
        match call {
            Some(call) => {
                let result = ToolResult {
                    tool_use_id: call.id.clone(),
                    content: feedback,
                    is_error: true,
                };
                self.state.tool_results.push(result.clone());
                if self.state.output_attempts > max {
                    return Step::InvalidOutput(problem);
                }
                Step::Refused(call, result)
            }
            None if self.state.output_attempts > max => Step::InvalidOutput(problem),
            None => {
                self.push_user_text(feedback);
                self.model_or_limit()
            }
        }
    }
}
