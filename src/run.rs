//! The sans-IO run: a state machine over the checkpoint that says what it needs next.
//!
//! The checkpoint *is* the state; the next step is derived from it, so a run restored from JSON
//! continues exactly like the one that wrote it.

use std::collections::HashSet;

use crate::checkpoint::{Checkpoint, lost_result};
use crate::error::{CheckpointError, ModelError};
use crate::message::{BlockProblem, Content, ContentBlock, Message, Role, ToolResult, ToolUse, block_problem};
use crate::model::ModelResponse;

/// What the driver must do next.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    /// Send the conversation to the model and feed the answer to [`Run::model_replied`].
    CallModel,
    /// Run this tool call and feed the outcome to [`Run::tool_finished`].
    CallTool(ToolUse),
    /// Paused: a tool asked the human this question.
    Interrupted(String),
    /// Finished with this text.
    Done(String),
    /// The next step would be a model call, but the run has used `maxIterations` of them.
    OutOfIterations,
}

/// How one tool call ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ToolOutcome {
    /// Text for the model.
    Output(String),
    /// An error the model reads.
    Error(String),
    /// Pause and ask this question.
    Interrupt(String),
}

#[derive(Debug, Clone)]
pub(crate) struct Run {
    state: Checkpoint,
    max_iterations: u32,
}

impl Run {
    /// A new run whose first message is `message`.
    pub(crate) fn start(message: &str, max_iterations: u32, run_id: String, now: u64) -> Self {
        let mut state = Checkpoint::new(run_id, now);
        state.messages.push(Message::user(message));
        Run { state, max_iterations }
    }

    /// Restores a run and applies the human's answer (rules 3 and 4 of the loop).
    pub(crate) fn resume(
        mut state: Checkpoint,
        answer: &str,
        max_iterations: u32,
        run_id: impl FnOnce() -> String,
    ) -> Result<Self, CheckpointError> {
        state.validate()?;
        if state.run_id.is_none() {
            state.run_id = Some(run_id());
        }
        if let Some(pending) = state.pending_tool_use_id.take() {
            state.question = None;
            let lost: Vec<ToolResult> = state
                .open_calls()
                .unwrap_or_default()
                .into_iter()
                .take_while(|c| c.id != pending)
                .filter(|c| !state.tool_results.iter().any(|r| r.tool_use_id == c.id))
                .map(|c| lost_result(&c.id))
                .collect();
            state.tool_results.extend(lost);
            state.tool_results.push(ToolResult {
                tool_use_id: pending,
                content: answer.to_owned(),
                is_error: false,
            });
        } else if !answer.is_empty() {
            state.messages.push(Message::user(answer));
        } else if state.messages.is_empty() {
            return Err(CheckpointError::at(
                "messages",
                "empty, and the answer is empty: there is nothing to resume",
            ));
        }
        Ok(Run { state, max_iterations })
    }

    pub(crate) fn checkpoint(&self) -> &Checkpoint {
        &self.state
    }

    pub(crate) fn into_checkpoint(self) -> Checkpoint {
        self.state
    }

    pub(crate) fn run_id(&self) -> &str {
        self.state.run_id.as_deref().unwrap_or_default()
    }

    pub(crate) fn touch(&mut self, now: u64) {
        self.state.updated_at = Some(now);
    }

    /// The next step, closing a finished tool turn on the way.
    pub(crate) fn next(&mut self) -> Step {
        if let Some(question) = self.pending_question() {
            return Step::Interrupted(question);
        }
        if let Some(calls) = self.state.open_calls() {
            let answered: HashSet<&str> = self.state.tool_results.iter().map(|r| r.tool_use_id.as_str()).collect();
            if let Some(call) = calls.into_iter().find(|c| !answered.contains(c.id.as_str())) {
                return Step::CallTool(call.clone());
            }
            self.close_turn();
        }
        match self.state.messages.last() {
            Some(last) if last.role == Role::Assistant => Step::Done(last.text()),
            _ if self.state.iterations >= self.max_iterations => Step::OutOfIterations,
            _ => Step::CallModel,
        }
    }

    fn pending_question(&self) -> Option<String> {
        self.state.pending_tool_use_id.as_ref()?;
        Some(self.state.question.clone().unwrap_or_default())
    }

    /// All calls of the open turn have results: answer them in one user message, in call order.
    fn close_turn(&mut self) {
        let mut results = std::mem::take(&mut self.state.tool_results);
        let order: Vec<String> = self
            .state
            .open_calls()
            .unwrap_or_default()
            .iter()
            .map(|c| c.id.clone())
            .collect();
        let blocks = order
            .iter()
            .filter_map(|id| {
                let k = results.iter().position(|r| &r.tool_use_id == id)?;
                Some(ContentBlock::ToolResult(results.swap_remove(k)))
            })
            .collect();
        self.state.messages.push(Message {
            role: Role::User,
            content: Content::Blocks(blocks),
        });
    }

    /// Records the model's turn. A response that would make the next request invalid is refused whole.
    pub(crate) fn model_replied(&mut self, response: ModelResponse) -> Result<(), ModelError> {
        if let Some((j, problem)) = block_problem(Role::Assistant, &response.content) {
            let problem = match problem {
                BlockProblem::ToolResultOutsideUser => {
                    "tool_result blocks belong in user messages, not in a model response".to_owned()
                }
                BlockProblem::EmptyId => "tool_use with an empty id".to_owned(),
                BlockProblem::DuplicateId(id) => format!("tool_use id {id:?} appears twice in one response"),
                BlockProblem::ToolUseOutsideAssistant => "tool_use outside an assistant turn".to_owned(),
            };
            return Err(ModelError::InvalidResponse {
                path: format!("content[{j}]"),
                problem,
            });
        }
        self.state.iterations = self.state.iterations.saturating_add(1);
        if let Some(usage) = response.usage {
            self.state.usage.add(usage);
        }
        self.state.messages.push(Message::assistant(response.content));
        Ok(())
    }

    /// Records how the call `id` (the one [`Step::CallTool`] named) ended.
    pub(crate) fn tool_finished(&mut self, id: String, outcome: ToolOutcome) {
        let (content, is_error) = match outcome {
            ToolOutcome::Output(text) => (text, false),
            ToolOutcome::Error(message) => (message, true),
            ToolOutcome::Interrupt(question) => {
                self.state.pending_tool_use_id = Some(id);
                self.state.question = Some(question);
                return;
            }
        };
        self.state.tool_results.push(ToolResult {
            tool_use_id: id,
            content,
            is_error,
        });
    }
}
