//! Approval rules for the whole agent, and token budgets that survive a resume.
//!
//! An [`ApprovalPolicy`] sees every tool call of the agent (before any call of a turn runs, like a tool's own
//! `needs_approval`) and answers [`PolicyDecision::Allow`], [`PolicyDecision::Ask`] (with an expiry and a
//! number of distinct approvers) or [`PolicyDecision::Deny`]. A tool's own rule and the policy are combined,
//! the stricter winning: a policy's `Allow` never skips a tool's `needs_approval`, and a `Deny` is never
//! lifted by a remembered approval.
//!
//! A [`Budget`] bounds the tokens of a whole run, counted from the usage the checkpoint carries: a model call
//! that would start at or past it ends the run in [`AgentError::BudgetExceeded`](crate::AgentError), with the
//! checkpoint; resuming it with a larger budget continues.

use std::future::Future;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::{ToolUse, Usage};
use crate::platform::{BoxFuture, MaybeSend, MaybeSync};

/// The most approvers one interrupt may wait for.
pub const MAX_APPROVERS: u32 = 16;

/// What an [`ApprovalPolicy`] says of one call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PolicyDecision {
    /// The policy does not ask (a tool's own `needs_approval` still may).
    Allow,
    /// The call waits for approval: by `approvers` distinct approvers (1 when `None`), expiring after
    /// `expires_in_ms` when given.
    Ask {
        /// When the request expires, from the moment it is made.
        expires_in_ms: Option<u64>,
        /// How many distinct approvers must approve (at least 1, at most [`MAX_APPROVERS`]).
        approvers: Option<u32>,
    },
    /// The call does not run: the model reads an error result (with `message` when given).
    Deny {
        /// Why, for the model.
        message: Option<String>,
    },
}

impl PolicyDecision {
    /// Ask one approver, without expiry.
    pub fn ask() -> Self {
        PolicyDecision::Ask {
            expires_in_ms: None,
            approvers: None,
        }
    }

    /// Ask `k` distinct approvers.
    pub fn ask_approvers(k: u32) -> Self {
        PolicyDecision::Ask {
            expires_in_ms: None,
            approvers: Some(k),
        }
    }

    /// Deny, telling the model why.
    pub fn deny(message: impl Into<String>) -> Self {
        PolicyDecision::Deny {
            message: Some(message.into()),
        }
    }

    /// Reads what a policy written in the host's language returned: `"allow"`, `"ask"`, `"deny"`,
    /// `{ ask: true, expiresInMs?, approvers? }` or `{ deny: true, message? }` (`null`/`undefined`: allow).
    ///
    /// # Errors
    /// What is wrong with it, naming the field.
    pub fn from_value(value: &Value) -> Result<Self, String> {
        const EXPECTED: &str =
            r#"'allow', 'ask', 'deny', { ask: true, expiresInMs?, approvers? } or { deny: true, message? }"#;
        match value {
            Value::Null => Ok(PolicyDecision::Allow),
            Value::String(s) => match s.as_str() {
                "allow" => Ok(PolicyDecision::Allow),
                "ask" => Ok(PolicyDecision::ask()),
                "deny" => Ok(PolicyDecision::Deny { message: None }),
                other => Err(format!("expected {EXPECTED}, got {other:?}")),
            },
            Value::Object(o) => {
                let flag = |k: &str| o.get(k).and_then(Value::as_bool) == Some(true);
                if let Some(k) = o
                    .keys()
                    .find(|k| !matches!(k.as_str(), "ask" | "deny" | "expiresInMs" | "approvers" | "message"))
                {
                    return Err(crate::options::unknown_option(
                        "the policy's answer",
                        k,
                        &["ask", "deny", "expiresInMs", "approvers", "message"],
                        &[],
                    ));
                }
                match (flag("ask"), flag("deny")) {
                    (true, false) => {
                        let expires_in_ms = match o.get("expiresInMs") {
                            None | Some(Value::Null) => None,
                            Some(v) => Some(crate::options::whole(v, 1).ok_or_else(|| {
                                format!(
                                    "expiresInMs: expected a positive integer, got {}",
                                    crate::options::describe(v)
                                )
                            })?),
                        };
                        let approvers = match o.get("approvers") {
                            None | Some(Value::Null) => None,
                            Some(v) => Some(
                                crate::options::whole(v, 1)
                                    .and_then(|n| u32::try_from(n).ok())
                                    .filter(|n| (1..=MAX_APPROVERS).contains(n))
                                    .ok_or_else(|| {
                                        format!(
                                            "approvers: expected an integer from 1 to {MAX_APPROVERS}, got {}",
                                            crate::options::describe(v)
                                        )
                                    })?,
                            ),
                        };
                        Ok(PolicyDecision::Ask {
                            expires_in_ms,
                            approvers,
                        })
                    }
                    (false, true) => match o.get("message") {
                        None | Some(Value::Null) => Ok(PolicyDecision::Deny { message: None }),
                        Some(Value::String(m)) => Ok(PolicyDecision::Deny {
                            message: Some(m.clone()),
                        }),
                        Some(v) => Err(format!(
                            "message: expected a string, got {}",
                            crate::options::describe(v)
                        )),
                    },
                    _ => Err(format!(
                        "expected {EXPECTED}, got an object with neither ask: true nor deny: true"
                    )),
                }
            }
            other => Err(format!("expected {EXPECTED}, got {}", crate::options::describe(other))),
        }
    }
}

/// What a policy is shown besides the call.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct PolicyContext<'a> {
    /// The run's id.
    pub run_id: &'a str,
    /// The agent's state, if it has one.
    pub state: Option<&'a Value>,
    /// Model calls made so far (across resumes).
    pub iterations: u32,
    /// Tokens used so far (across resumes).
    pub usage: Usage,
}

/// An approval rule over every tool call of an agent. A policy that fails (`Err`) does not let the call run:
/// the model reads an error result naming the failure, as when a tool's own approval check fails.
pub trait ApprovalPolicy: MaybeSend + MaybeSync {
    /// What to do with `call`.
    fn decide<'a>(&'a self, call: &'a ToolUse, ctx: PolicyContext<'a>)
    -> BoxFuture<'a, Result<PolicyDecision, String>>;

    /// What identifies this policy in the agent's fingerprint (which signed checkpoints are bound to): its name,
    /// or the host's source text. A policy changed while a run waits makes a different agent.
    fn rule(&self) -> Value;
}

/// An [`ApprovalPolicy`] from a closure; see [`approval_policy`].
pub struct FnPolicy<F> {
    name: String,
    f: F,
}

/// A policy named `name` (what the agent's fingerprint knows it by) that decides with `f`.
///
/// ```
/// use resumable_agent::{approval_policy, tool, Agent, ModelResponse, PolicyDecision, ScriptedModel};
/// use serde_json::json;
/// let payments = approval_policy("payments-need-two", |call, _ctx| {
///     let decision = if call.name == "pay" { PolicyDecision::ask_approvers(2) } else { PolicyDecision::Allow };
///     async move { Ok(decision) }
/// });
/// let pay = tool("pay", "Pays.", json!({"type": "object"}), |_input, _ctx| async { Ok(json!("paid")) });
/// let agent = Agent::builder(ScriptedModel::new([ModelResponse::tool_call("c1", "pay", json!({}))]))
///     .tool(pay)
///     .approval_policy(payments)
///     .build()?;
/// let out = pollster::block_on(agent.prompt("pay the invoice"))?;
/// assert_eq!(out.checkpoint().interrupts[0].approvers, Some(2));
/// # Ok::<(), resumable_agent::AgentError>(())
/// ```
pub fn approval_policy<F, Fut>(name: impl Into<String>, f: F) -> FnPolicy<F>
where
    F: Fn(&ToolUse, PolicyContext<'_>) -> Fut + MaybeSend + MaybeSync,
    Fut: Future<Output = Result<PolicyDecision, String>> + MaybeSend + 'static,
{
    FnPolicy { name: name.into(), f }
}

impl<F, Fut> ApprovalPolicy for FnPolicy<F>
where
    F: Fn(&ToolUse, PolicyContext<'_>) -> Fut + MaybeSend + MaybeSync,
    Fut: Future<Output = Result<PolicyDecision, String>> + MaybeSend + 'static,
{
    fn decide<'a>(
        &'a self,
        call: &'a ToolUse,
        ctx: PolicyContext<'a>,
    ) -> BoxFuture<'a, Result<PolicyDecision, String>> {
        Box::pin((self.f)(call, ctx))
    }

    fn rule(&self) -> Value {
        serde_json::json!({ "policy": self.name })
    }
}

/// The policy of an agent spec whose rule is the host's function (the npm package's `approval`), until the host
/// binds it: it fails closed — no call runs on a rule nobody can evaluate.
pub(crate) struct HostPolicy {
    source: String,
}

impl HostPolicy {
    pub(crate) fn new(source: String) -> Self {
        HostPolicy { source }
    }
}

/// The fingerprint's form of a host function's source text.
pub(crate) fn host_rule(source: &str) -> Value {
    serde_json::json!({ "policy": "host", "source": source })
}

impl ApprovalPolicy for HostPolicy {
    fn decide<'a>(&'a self, _: &'a ToolUse, _: PolicyContext<'a>) -> BoxFuture<'a, Result<PolicyDecision, String>> {
        Box::pin(std::future::ready(Err(
            "the agent's approval policy is the host's function, which was not bound (natively: AgentBuilder::approval_policy)".to_owned(),
        )))
    }

    fn rule(&self) -> Value {
        host_rule(&self.source)
    }
}

/// One approval of an interrupt that waits for several approvers: who, and when (ms since the epoch).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ApprovalMark {
    /// The approver, as the application named them (`by` of the decision).
    pub by: String,
    /// When they approved.
    pub at: u64,
}

/// Read through a JSON value (whose reader the .wasm has anyway) rather than a derived reader per input format.
impl<'de> Deserialize<'de> for ApprovalMark {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let by = v.get("by").and_then(Value::as_str);
        // A whole number however it is spelled (`1e3`, `1000.0`), as every count of the checkpoint.
        let at = v.get("at").and_then(|a| crate::options::whole(a, 0));
        match (by, at) {
            (Some(by), Some(at)) => Ok(ApprovalMark::new(by, at)),
            _ => Err(serde::de::Error::custom(
                "expected { by: string, at: ms since the epoch }",
            )),
        }
    }
}

impl ApprovalMark {
    /// `by` approved at `at`.
    pub fn new(by: impl Into<String>, at: u64) -> Self {
        ApprovalMark { by: by.into(), at }
    }
}

/// Written and read as `{ totalTokens?, inputTokens?, outputTokens? }` through a JSON value (a decision's `budget`,
/// the raise a checkpoint keeps).
impl Serialize for Budget {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Budget {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Budget::from_value(&Value::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// What a remembered approval covers: `remember: "tool"` approves later calls of the same tool in this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Remember {
    /// Later calls of the same tool, in this run.
    Tool,
}

/// What a run does once its budget is spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OnExceeded {
    /// The run ends in [`AgentError::BudgetExceeded`](crate::AgentError) (with the checkpoint).
    #[default]
    Error,
    /// The run pauses with a `budget` interrupt: a decision that raises the budget lets it go on (the raise is kept
    /// in the checkpoint); a denial ends it in [`AgentError::BudgetExceeded`](crate::AgentError).
    Ask,
}

/// A bound on the tokens of a whole run, across resumes; any limit may be left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Budget {
    /// Input plus output tokens.
    pub total_tokens: Option<u64>,
    /// Input tokens.
    pub input_tokens: Option<u64>,
    /// Output tokens.
    pub output_tokens: Option<u64>,
    /// What happens once it is spent.
    pub on_exceeded: OnExceeded,
}

impl Budget {
    /// At most `n` tokens, input and output together.
    pub fn total_tokens(n: u64) -> Self {
        Budget {
            total_tokens: Some(n),
            ..Budget::default()
        }
    }

    /// Also at most `n` input tokens.
    pub fn input_tokens(mut self, n: u64) -> Self {
        self.input_tokens = Some(n);
        self
    }

    /// Also at most `n` output tokens.
    pub fn output_tokens(mut self, n: u64) -> Self {
        self.output_tokens = Some(n);
        self
    }

    /// Pause for a decision that raises it, instead of ending the run, once it is spent.
    pub fn ask(mut self) -> Self {
        self.on_exceeded = OnExceeded::Ask;
        self
    }

    /// The limit `usage` has reached (`totalTokens`, `inputTokens` or `outputTokens`), if any: a call is refused
    /// when usage already equals or exceeds the budget.
    pub fn spent(&self, usage: Usage) -> Option<&'static str> {
        let total = usage.input_tokens.saturating_add(usage.output_tokens);
        let reached = |limit: Option<u64>, used: u64| limit.is_some_and(|l| used >= l);
        if reached(self.total_tokens, total) {
            Some("totalTokens")
        } else if reached(self.input_tokens, usage.input_tokens) {
            Some("inputTokens")
        } else if reached(self.output_tokens, usage.output_tokens) {
            Some("outputTokens")
        } else {
            None
        }
    }

    /// `{ totalTokens?, inputTokens?, outputTokens? }`, as the npm package's option and error say it (a JSON value:
    /// no serializer of its own in the .wasm).
    pub fn to_value(&self) -> Value {
        let mut o = serde_json::Map::new();
        for (k, v) in [
            ("totalTokens", self.total_tokens),
            ("inputTokens", self.input_tokens),
            ("outputTokens", self.output_tokens),
        ] {
            if let Some(n) = v {
                o.insert(k.into(), n.into());
            }
        }
        Value::Object(o)
    }

    /// Reads `{ totalTokens?, inputTokens?, outputTokens? }` (whole numbers), naming what is wrong.
    ///
    /// # Errors
    /// An unknown key, or a limit that is not a whole number.
    pub fn from_value(v: &Value) -> Result<Self, String> {
        Self::read(v, "budget", &[])
    }

    /// [`Budget::from_value`] at `path`, where `also` are other keys the caller reads (the agent's `onExceeded`): the
    /// one reader of a budget's limits, for the agent's option, a decision's raise and the checkpoint's.
    pub(crate) fn read(v: &Value, path: &str, also: &[&str]) -> Result<Self, String> {
        const LIMITS: [&str; 3] = ["totalTokens", "inputTokens", "outputTokens"];
        let o = v
            .as_object()
            .ok_or_else(|| format!("{path}: expected {{ totalTokens?, inputTokens?, outputTokens? }}"))?;
        if let Some(k) = o
            .keys()
            .find(|k| !LIMITS.contains(&k.as_str()) && !also.contains(&k.as_str()))
        {
            let known: Vec<&str> = LIMITS.iter().chain(also).copied().collect();
            let hints = [
                ("total", "totalTokens"),
                ("maxTokens", "totalTokens"),
                ("tokens", "totalTokens"),
            ];
            return Err(crate::options::unknown_option(path, k, &known, &hints));
        }
        let limit = |k: &str| match o.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(n) => crate::options::whole(n, 0).map(Some).ok_or_else(|| {
                format!(
                    "{path}.{k}: expected a whole number of tokens, got {}",
                    crate::options::describe(n)
                )
            }),
        };
        Ok(Budget {
            total_tokens: limit("totalTokens")?,
            input_tokens: limit("inputTokens")?,
            output_tokens: limit("outputTokens")?,
            on_exceeded: OnExceeded::Error,
        })
    }

    /// This budget with each limit `raise` gives in its place.
    #[must_use]
    pub fn raised(self, raise: &Budget) -> Self {
        Budget {
            total_tokens: raise.total_tokens.or(self.total_tokens),
            input_tokens: raise.input_tokens.or(self.input_tokens),
            output_tokens: raise.output_tokens.or(self.output_tokens),
            on_exceeded: self.on_exceeded,
        }
    }

    /// True when no limit is set.
    pub fn is_empty(&self) -> bool {
        self.total_tokens.is_none() && self.input_tokens.is_none() && self.output_tokens.is_none()
    }
}

/// The stricter of two policies' answers (a subagent's own and one over it): a denial (the first), else asking (the
/// earlier expiry, the more approvers), else allowing.
pub(crate) fn stricter_policy(a: PolicyDecision, b: PolicyDecision) -> PolicyDecision {
    match (a, b) {
        (d @ PolicyDecision::Deny { .. }, _) | (_, d @ PolicyDecision::Deny { .. }) => d,
        (
            PolicyDecision::Ask {
                expires_in_ms: x,
                approvers: m,
            },
            PolicyDecision::Ask {
                expires_in_ms: y,
                approvers: n,
            },
        ) => PolicyDecision::Ask {
            expires_in_ms: match (x, y) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (x, y) => x.or(y),
            },
            approvers: match (m, n) {
                (Some(m), Some(n)) => Some(m.max(n)),
                (m, n) => m.or(n),
            },
        },
        (a @ PolicyDecision::Ask { .. }, _) | (_, a @ PolicyDecision::Ask { .. }) => a,
        _ => PolicyDecision::Allow,
    }
}

/// The stricter of a tool's own approval rule and the policy's: `(needed, expires in, approvers)`.
pub(crate) fn stricter(own: crate::interrupt::Approval, policy: &PolicyDecision) -> (bool, Option<u64>, u32) {
    let (own_needed, own_expiry) = match own {
        crate::interrupt::Approval::Needed { expires_in_ms } => (true, expires_in_ms),
        _ => (false, None),
    };
    let (policy_needed, policy_expiry, approvers) = match policy {
        PolicyDecision::Ask {
            expires_in_ms,
            approvers,
        } => (true, *expires_in_ms, approvers.unwrap_or(1).max(1)),
        _ => (false, None, 1),
    };
    let expiry = match (own_expiry, policy_expiry) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    (own_needed || policy_needed, expiry, approvers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_policy_answer_reads_as_written_or_names_what_is_wrong() {
        assert_eq!(PolicyDecision::from_value(&json!("allow")), Ok(PolicyDecision::Allow));
        assert_eq!(PolicyDecision::from_value(&Value::Null), Ok(PolicyDecision::Allow));
        assert_eq!(PolicyDecision::from_value(&json!("ask")), Ok(PolicyDecision::ask()));
        assert_eq!(
            PolicyDecision::from_value(&json!({"ask": true, "approvers": 2, "expiresInMs": 60000})),
            Ok(PolicyDecision::Ask {
                expires_in_ms: Some(60_000),
                approvers: Some(2)
            })
        );
        assert_eq!(
            PolicyDecision::from_value(&json!({"deny": true, "message": "no"})),
            Ok(PolicyDecision::deny("no"))
        );
        let bad = |v: Value| PolicyDecision::from_value(&v).unwrap_err();
        assert!(bad(json!("maybe")).contains("got \"maybe\""));
        assert!(bad(json!({"ask": true, "approvers": 0})).starts_with("approvers: expected an integer from 1 to 16"));
        assert!(bad(json!({"ask": true, "approvers": 17})).contains("got number 17"));
        assert!(bad(json!({"ask": true, "expiresInMs": -1})).starts_with("expiresInMs"));
        assert!(bad(json!({"ask": true, "approver": 2})).contains("did you mean \"approvers\""));
        assert!(bad(json!({"ask": true, "deny": true})).contains("neither"));
        assert!(bad(json!(true)).contains("got boolean true"));
    }

    #[test]
    fn the_stricter_rule_wins() {
        use crate::interrupt::Approval;
        assert_eq!(stricter(Approval::NotNeeded, &PolicyDecision::Allow), (false, None, 1));
        assert_eq!(
            stricter(Approval::needed_within(10), &PolicyDecision::Allow),
            (true, Some(10), 1)
        );
        assert_eq!(
            stricter(
                Approval::needed_within(10),
                &PolicyDecision::Ask {
                    expires_in_ms: Some(5),
                    approvers: Some(3)
                }
            ),
            (true, Some(5), 3)
        );
        assert_eq!(
            stricter(Approval::needed(), &PolicyDecision::ask_approvers(2)),
            (true, None, 2)
        );
    }

    #[test]
    fn drift_tells_a_tool_named_like_a_label_from_the_label() {
        let fp = |instructions: &str, approval: Option<&str>| {
            let mut f = Fingerprint {
                instructions: Some(instructions.into()),
                approval: approval.map(str::to_owned),
                ..Fingerprint::default()
            };
            f.tools.insert("approval".into(), "h1".into());
            f.tools.insert("instructions".into(), "h2".into());
            f.tools.insert("pay".into(), "h3".into());
            f
        };
        // Other instructions: reported, but no tool is touched (not even one named "instructions").
        let d = fp("new", None).drift_from(&fp("old", None)).unwrap_or_default();
        assert_eq!(d.changed, ["instructions"]);
        assert!(!d.touches("instructions") && !d.touches("pay"));
        // Another policy touches every tool.
        let d = fp("old", Some("p2"))
            .drift_from(&fp("old", Some("p1")))
            .unwrap_or_default();
        assert_eq!(d.changed, ["approval"]);
        assert!(d.touches("pay"));
        assert_eq!(fp("x", None).drift_from(&fp("x", None)), None);
    }

    #[test]
    fn a_budget_is_spent_at_its_limit() {
        let usage = |i, o| Usage {
            input_tokens: i,
            output_tokens: o,
        };
        let b = Budget::total_tokens(100).output_tokens(30);
        assert_eq!(b.spent(usage(50, 20)), None);
        assert_eq!(b.spent(usage(70, 30)), Some("totalTokens"));
        assert_eq!(b.spent(usage(10, 30)), Some("outputTokens"));
        assert_eq!(Budget::default().spent(usage(u64::MAX, u64::MAX)), None);
        assert!(Budget::default().is_empty());
    }
}

/// What decides a run's approvals, part by part — the instructions, each tool (its input schema and approval rule),
/// the agent's approval policy — as short hashes. Kept in the checkpoint, so that a resume tells what changed
/// since the run paused (a deploy while runs wait) and applies the agent's [`OnDrift`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Fingerprint {
    /// The instructions' hash (absent: none).
    pub instructions: Option<String>,
    /// Each tool's hash (a JSON string), by name.
    pub tools: serde_json::Map<String, Value>,
    /// The approval policy's hash (absent: none).
    pub approval: Option<String>,
}

/// Written and read as a JSON value (whose writer and reader the .wasm has anyway): `{ instructions?, tools: { name:
/// hash }, approval? }`.
impl Serialize for Fingerprint {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut o = serde_json::Map::new();
        if let Some(i) = &self.instructions {
            o.insert("instructions".into(), i.as_str().into());
        }
        o.insert("tools".into(), Value::Object(self.tools.clone()));
        if let Some(a) = &self.approval {
            o.insert("approval".into(), a.as_str().into());
        }
        Value::Object(o).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Fingerprint {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Fingerprint::from_value(&v).map_err(serde::de::Error::custom)
    }
}

/// How a part of an agent is hashed for its [`Fingerprint`]: 32 bits of the canonical JSON's FNV-1a, in hex.
pub(crate) fn part_hash(what: &Value) -> String {
    let full = crate::keys::fingerprint(what);
    full.get(3..11).unwrap_or(&full).to_owned()
}

impl Fingerprint {
    /// Reads `{ instructions?, tools: { name: hash }, approval? }`, naming what is wrong.
    ///
    /// # Errors
    /// What is not a string where a hash belongs.
    pub fn from_value(v: &Value) -> Result<Self, String> {
        let o = v
            .as_object()
            .ok_or("expected an object { instructions?, tools, approval? }")?;
        let hash = |k: &str| match o.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("{k}: expected a string (a hash)")),
        };
        let tools = match o.get("tools") {
            None | Some(Value::Null) => serde_json::Map::new(),
            Some(Value::Object(t)) => {
                if let Some((name, _)) = t.iter().find(|(_, h)| !h.is_string()) {
                    return Err(format!("tools.{name}: expected a string (a hash)"));
                }
                t.clone()
            }
            Some(_) => return Err("tools: expected an object { [tool]: hash }".into()),
        };
        Ok(Fingerprint {
            instructions: hash("instructions")?,
            tools,
            approval: hash("approval")?,
        })
    }

    /// What changed from `earlier` to this one, if anything: tools added and removed, and changed tools (with
    /// `instructions` and `approval` for the instructions and the approval policy).
    pub fn drift_from(&self, earlier: &Fingerprint) -> Option<Drift> {
        let mut drift = Drift::default();
        for (name, h) in &self.tools {
            match earlier.tools.get(name) {
                None => drift.added.push(name.clone()),
                Some(old) if old != h => drift.changed.push(name.clone()),
                Some(_) => {}
            }
        }
        drift.removed = earlier
            .tools
            .keys()
            .filter(|n| !self.tools.contains_key(*n))
            .cloned()
            .collect();
        drift.tools_changed = drift.changed.len();
        if self.instructions != earlier.instructions {
            drift.changed.push("instructions".into());
        }
        drift.policy_changed = self.approval != earlier.approval;
        if drift.policy_changed {
            drift.changed.push("approval".into());
        }
        (!drift.is_empty()).then_some(drift)
    }
}

/// What changed in an agent since a run paused.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[non_exhaustive]
pub struct Drift {
    /// Tools the agent has now and did not have.
    pub added: Vec<String>,
    /// Tools it had and has no longer.
    pub removed: Vec<String>,
    /// Tools whose input schema or approval rule changed; `instructions` and `approval` (the policy) when they did.
    pub changed: Vec<String>,
    /// How many of `changed` are tools (the labels come after them: a tool may be named `approval`).
    #[serde(skip)]
    tools_changed: usize,
    /// True when the approval policy changed.
    #[serde(skip)]
    policy_changed: bool,
}

impl Drift {
    /// True when nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }

    /// True when the approvals of calls to `tool` may be decided differently now: the tool changed or went, or the
    /// agent's approval policy changed.
    pub fn touches(&self, tool: &str) -> bool {
        let changed = self.changed.get(..self.tools_changed).unwrap_or_default();
        self.policy_changed || changed.iter().chain(&self.removed).any(|t| t == tool)
    }
}

/// What a resume does when the agent changed since the run paused in the middle of a turn (a run that waits for
/// nothing goes on with the agent as it is, reporting the drift).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OnDrift {
    /// Refuse: [`AgentError::ConfigDrift`](crate::AgentError) with the unchanged checkpoint.
    #[default]
    Error,
    /// Pending approvals of changed tools (all of them when the policy changed) are asked again under the new rules;
    /// decisions sent for their old interrupts are set aside, and approved calls of them that did not run yet are
    /// checked again.
    Reapprove,
    /// Go on as if nothing changed.
    Continue,
}
