//! # resumable-agent
//!
//! An AI agent's tool-calling loop whose whole run is a plain-JSON [`Checkpoint`]. A tool returns
//! [`InterruptError`] to ask the human a question; the run pauses and hands back the question and a
//! checkpoint; later — another process, a Cloudflare Worker instance, a reloaded browser tab —
//! [`Agent::resume`] continues exactly where it stopped.
//!
//! ```
//! use resumable_agent::{tool, Agent, Checkpoint, InterruptError, ModelResponse, ScriptedModel};
//! use serde_json::json;
//!
//! let model = ScriptedModel::new([
//!     ModelResponse::tool_call("c1", "ask_user", json!({"question": "Your deadline?"})),
//!     ModelResponse::text("Done: planned for the end of Q2."),
//! ]);
//! let ask = tool("ask_user", "Ask the human.", json!({"type": "object"}), |input, _| async move {
//!     Err(InterruptError::new(input["question"].as_str().unwrap_or_default()).into())
//! });
//! let agent = Agent::builder(model).instructions("Ask for what you miss.").tool(ask).build()?;
//!
//! let outcome = pollster::block_on(agent.prompt("Plan my project."))?;
//! let saved = outcome.checkpoint().to_json();            // write it anywhere
//! let restored = Checkpoint::from_json(&saved)?;          // ... in a new process
//! let done = pollster::block_on(agent.resume(restored, "end of Q2"))?.assert_complete()?;
//! assert_eq!(done.text, "Done: planned for the end of Q2.");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Architecture
//! A sans-IO state machine (`run`) owns every rule of the loop and derives its next step from the
//! checkpoint alone; a small async driver ([`Agent`]) does the I/O with a [`Model`] and [`Tool`]s.
//! No threads, no runtime: futures are `Send` natively and need not be on wasm32 ([`MaybeSend`]).
//!
//! ## Features
//! | feature | what it adds |
//! |---|---|
//! | `js` | the `#[wasm_bindgen]` API of the npm package (wasm32 only; off for Rust users) |
//! | `kv` | `KvSaver` over Cloudflare Workers KV, via the `worker` crate (wasm32 only) |
//! | `durable-object` | `DurableObjectSaver` and `serve_checkpoint_store` (a Durable Object class's handler), via the `worker` crate (wasm32 only) |
//! | `d1` | `D1Saver` over Cloudflare D1 (the npm package's `d1Saver` table), via the `worker` crate (wasm32 only) |
//! | `indexeddb` | `IndexedDbSaver` over the browser's IndexedDB, via `web-sys` (wasm32 only) |

#![cfg_attr(docsrs, feature(doc_cfg))]

mod agent;
mod approval;
mod checkpoint;
mod crypto;
mod error;
mod event;
mod guardrail;
mod interrupt;
pub mod json;
pub mod keys;
mod limits;
pub mod mcp;
mod message;
mod model;
mod options;
mod platform;
pub mod provider;
mod run;
mod saver;
mod schema;
mod session;
mod spec;
mod subagent;
pub mod telemetry;
pub mod testing;
mod tool;

#[cfg(all(target_arch = "wasm32", feature = "js"))]
mod wasm;

pub use agent::{Agent, AgentBuilder, AgentResponse, Decoded, Input, InterruptedResponse, Outcome};
pub use approval::{
    ApprovalMark, ApprovalPolicy, Budget, Drift, Fingerprint, FnPolicy, MAX_APPROVERS, OnDrift, OnExceeded,
    PolicyContext, PolicyDecision, Remember, approval_policy,
};
pub use checkpoint::{CHECKPOINT_VERSION, Checkpoint, CheckpointError, CheckpointSummary, Signature, ThreadInfo};
pub use error::AgentError;
pub use event::{CallResult, Event, EventSink, Nested};
pub use guardrail::{FnGuardrail, Guardrail, GuardrailInput, GuardrailKind, Verdict, guardrail};
pub use interrupt::{Approval, BUDGET_INTERRUPT, Decision, Interrupt, InterruptKind, OnExpire, Resume};
pub use keys::{CheckpointKeys, MIN_SECRET_BYTES};
pub use limits::{
    DEFAULT_MAX_CHECKPOINT_BYTES, DEFAULT_MAX_DEPTH, JSON_MEMORY_FACTOR, JSON_MEMORY_FLOOR, Limits, MAX_DEPTH_LIMIT,
    UntrustedJson, parse_cost, parse_untrusted, repair_lone_surrogates, value_depth,
};
pub use message::{Content, ContentBlock, Message, Reasoning, Role, ToolResult, ToolUse, Usage};
pub use model::{
    Delta, DeltaSink, DynModel, Model, ModelError, ModelInfo, ModelRequest, ModelResponse, ScriptedModel, StopReason,
    ToolDefinition,
};
pub use options::HOST_FUNCTION;
pub use platform::{BoxFuture, MaybeSend, MaybeSync};
pub use run::{
    Applied, Compaction, DEFAULT_MAX_ITERATIONS, DEFAULT_MAX_OUTPUT_RETRIES, DEFAULT_SUMMARY_INSTRUCTIONS,
    FINAL_ANSWER_TOOL, Need, Run, RunConfig, Step, Summarized, SummaryRequest, ToolOutcome,
};
#[cfg(all(target_arch = "wasm32", feature = "kv"))]
pub use saver::KvSaver;
#[cfg(target_arch = "wasm32")]
pub use saver::js_text_within;
pub use saver::kv_store::{KV_MAX_KEY_BYTES, KV_MAX_METADATA_BYTES, KV_MAX_VALUE_BYTES, KV_MIN_TTL_SECONDS};
pub use saver::{
    Condition, DynSaver, KvBackend, KvOptions, KvPage, KvStoreSaver, MemorySaver, SavedCheckpoint, Saver, SaverError,
    Timeout,
};
#[cfg(all(target_arch = "wasm32", feature = "d1"))]
pub use saver::{D1_DEFAULT_TABLE, D1_MAX_ROW_BYTES, D1Saver};
#[cfg(all(target_arch = "wasm32", feature = "durable-object"))]
pub use saver::{DURABLE_OBJECT_MAX_VALUE_BYTES, DurableObjectSaver, serve_checkpoint_store};
#[cfg(all(target_arch = "wasm32", feature = "indexeddb"))]
pub use saver::{Durability, IndexedDbOptions, IndexedDbSaver};
pub use session::{
    AutoSave, DEFAULT_MAX_HISTORY, EVENT_BLOCK, Follow, HISTORY_SEPARATOR, Replayed, Session, SessionOptions, Stored,
    Turn, list_sessions, put_stored, read_stored,
};
pub use spec::{AgentSpec, NeedsApproval, SubagentSpec, ToolSpec};
pub use subagent::{AgentTool, FailedSubagent, agent_tool};
pub use telemetry::Telemetry;
#[cfg(feature = "tracing")]
pub use telemetry::TracingTracer;
pub use tool::{
    CallPolicy, FnTool, InputRequest, InputRequired, InterruptError, NestedPause, PendingInput, Tool, ToolContext,
    ToolError, Unavailable, tool,
};

/// The README's Rust blocks, compiled and run as doctests (`scripts/check-docs.mjs` checks its other blocks).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// The development guide's Rust blocks, as doctests.
#[cfg(doctest)]
#[doc = include_str!("../docs/development.md")]
struct DevelopmentDoctests;
