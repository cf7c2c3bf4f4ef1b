//! What reading a checkpoint does to it besides decoding: numbers as JS reads them, and the upgrade of the
//! formats before this one (the reference's, 1).

use super::{Checkpoint, CheckpointError};
use crate::interrupt::{Interrupt, InterruptKind};
use crate::message::{ContentBlock, Message, Role, ToolResult};

/// Every JSON value in a checkpoint with its numbers as doubles ([`normalize_numbers`](crate::limits::normalize_numbers)).
/// Returns how deep the deepest of them reaches in the checkpoint's text: a tool input sits 5 levels in
/// (`{ messages: [ { content: [ { input` ), an interrupt's input and data 3, the state and structured answer 1.
pub(crate) fn normalize_values(cp: &mut Checkpoint) -> usize {
    use crate::limits::normalize_numbers_depth as walk;
    let mut deepest = 0;
    for m in &mut cp.messages {
        if let crate::message::Content::Blocks(blocks) = &mut m.content {
            for b in blocks {
                if let ContentBlock::ToolUse(u) = b {
                    deepest = deepest.max(5 + walk(&mut u.input));
                }
            }
        }
    }
    for i in &mut cp.interrupts {
        deepest = deepest.max(3 + walk(&mut i.input));
        if let Some(d) = i.data.as_mut() {
            deepest = deepest.max(3 + walk(d));
        }
    }
    if let Some(s) = cp.state.as_mut() {
        deepest = deepest.max(1 + walk(s));
    }
    for f in &mut cp.failed_subagents {
        deepest = deepest.max(3 + walk(&mut f.checkpoint));
    }
    if let Some(s) = cp.structured.as_mut() {
        deepest = deepest.max(1 + walk(s));
    }
    deepest
}

/// Formats before 2 mark a pause with `pendingToolUseId` (+ `question`) alone: that is one question
/// interrupt, asked after the turn's calls started running (so the turn counts as reviewed).
pub(super) fn upgrade_pending_question(cp: &mut Checkpoint) -> Result<(), CheckpointError> {
    if !cp.interrupts.is_empty() || !cp.approved.is_empty() {
        return Err(CheckpointError::at(
            "version",
            "interrupts and approved need format version 2",
        ));
    }
    let n = cp.messages.len().saturating_sub(1);
    if cp.open_calls().is_some() {
        cp.reviewed = true;
    }
    let Some(id) = cp.pending_tool_use_id.clone() else {
        // Before format 2 a turn in progress was always a pause: no mid-turn checkpoints were written.
        if cp.open_calls().is_some() {
            return Err(CheckpointError::at(
                "pendingToolUseId",
                format!("missing, but messages[{n}] has tool calls without results"),
            ));
        }
        return Ok(());
    };
    let Some(call) = cp
        .open_calls()
        .and_then(|calls| calls.into_iter().find(|c| c.id == id).cloned())
    else {
        let problem = if cp.open_calls().is_some() {
            format!("{id:?} is not a tool call of the last message (messages[{n}])")
        } else {
            format!("{id:?} is set but the last message has no tool calls to answer")
        };
        return Err(CheckpointError::at("pendingToolUseId", problem));
    };
    if let Some(k) = cp.tool_results.iter().position(|r| r.tool_use_id == id) {
        return Err(CheckpointError::at(
            format!("toolResults[{k}].toolUseId"),
            format!("{id:?} is the pending call; its result is the answer"),
        ));
    }
    let question = cp.question.clone().unwrap_or_default();
    cp.set_interrupts(vec![Interrupt {
        question: Some(question),
        ..Interrupt::new(InterruptKind::Question, id, call.name, call.input)
    }]);
    Ok(())
}

/// The reference dropped the results of a turn's other calls when one interrupted and resumed with only
/// the pending call's result. Those calls may have run, so they must not run again: answer each with an
/// error result the model can read, which makes the history provider-valid again.
pub(super) fn repair_legacy(messages: &mut [Message]) {
    for i in 1..messages.len() {
        let (before, after) = messages.split_at_mut(i);
        let (Some(prev), Some(next)) = (before.last(), after.first_mut()) else {
            continue;
        };
        if prev.role != Role::Assistant || next.role != Role::User || next.tool_results().next().is_none() {
            continue;
        }
        let answered = next.tool_results().count();
        let mut blocks: Vec<ContentBlock> = Vec::new();
        for call in prev.tool_uses() {
            match next.tool_results().find(|r| r.tool_use_id == call.id) {
                Some(r) => blocks.push(ContentBlock::ToolResult(r.clone())),
                None => blocks.push(ContentBlock::ToolResult(lost_result(&call.id))),
            }
        }
        if blocks.len() == answered {
            continue; // nothing was missing
        }
        blocks.extend(
            next.blocks()
                .iter()
                .filter(|b| !matches!(b, ContentBlock::ToolResult(_)))
                .cloned(),
        );
        next.content = crate::message::Content::Blocks(blocks);
    }
}

/// The result recorded for a call whose outcome was not saved (only reference-format checkpoints lack it).
pub(crate) fn lost_result(id: &str) -> ToolResult {
    ToolResult {
        tool_use_id: id.to_owned(),
        content:
            "this tool call's result was not saved in the checkpoint; it is not repeated, to avoid running it twice"
                .to_owned(),
        is_error: true,
    }
}
