//! The saver conformance suite, for savers written in Rust: the same cases as the npm package's
//! `resumable-agent/testing`.
//!
//! ```
//! use resumable_agent::{testing::saver_conformance, MemorySaver};
//! let results = pollster::block_on(saver_conformance(|_namespace| MemorySaver::new()));
//! assert!(results.iter().all(|r| r.ok), "{results:?}");
//! ```

use serde_json::{Value, json};

use crate::checkpoint::Checkpoint;
use crate::saver::SaverError;
use crate::saver::{Condition, Saver};

/// How one case went.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConformanceResult {
    /// The case.
    pub name: &'static str,
    /// True when it passed (or did not apply).
    pub ok: bool,
    /// Why it did not apply, when it did not.
    pub skipped: Option<&'static str>,
    /// What went wrong, when it failed.
    pub error: Option<String>,
}

type CaseResult = Result<Option<&'static str>, String>;

/// A small checkpoint: one user message `text` (+ `padding`), paused on `question` when given, at `step`.
///
/// # Errors
/// Never for the values the suite uses; a decode error otherwise.
pub fn sample_checkpoint(
    text: &str,
    question: Option<&str>,
    step: Option<u64>,
    padding: usize,
) -> Result<Checkpoint, String> {
    let mut cp = json!({
        "version": 2,
        "messages": [{"role": "user", "content": format!("{text}{}", "p".repeat(padding))}],
        "iterations": if question.is_some() { 1 } else { 0 },
        "usage": {"inputTokens": 3, "outputTokens": 1},
    });
    if let (Some(q), Some(o)) = (question, cp.as_object_mut()) {
        o.insert("pendingToolUseId".into(), "q1".into());
        o.insert("question".into(), q.into());
        o.insert("reviewed".into(), true.into());
        o.insert(
            "interrupts".into(),
            json!([{"kind": "question", "id": "q1", "toolName": "ask_user", "input": {"question": q}, "question": q}]),
        );
        if let Some(Value::Array(m)) = o.get_mut("messages") {
            m.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": "q1", "name": "ask_user", "input": {"question": q}}]}));
        }
    }
    if let (Some(step), Some(o)) = (step, cp.as_object_mut()) {
        o.insert("thread".into(), json!({"id": "t", "step": step}));
    }
    Checkpoint::from_value(cp).map_err(|e| e.to_string())
}

fn check(condition: bool, message: impl Into<String>) -> Result<(), String> {
    if condition { Ok(()) } else { Err(message.into()) }
}

fn err(what: &str, e: SaverError) -> String {
    format!("{what}: {e}")
}

fn first_text(cp: &Checkpoint) -> String {
    cp.messages
        .first()
        .map(crate::message::Message::text)
        .unwrap_or_default()
}

async fn keys<S: Saver>(s: &S, prefix: &str) -> Result<Vec<String>, String> {
    Ok(s.list(prefix)
        .await
        .map_err(|e| err("list", e))?
        .into_iter()
        .map(|e| e.key)
        .collect())
}

async fn expect_code<T>(
    r: impl std::future::Future<Output = Result<T, SaverError>>,
    code: &str,
    what: &str,
) -> Result<(), String> {
    match r.await {
        Ok(_) => Err(format!("{what}: expected {code}, nothing was refused")),
        Err(e) if e.code() == code => Ok(()),
        Err(e) => Err(format!("{what}: expected {code}, got {} ({e})", e.code())),
    }
}

const NAMES: [&str; 16] = [
    "round trip: what is put is what is got",
    "overwrite: a second put replaces the value whole",
    "missing keys: get is None, delete is no error, exists is false",
    "delete removes the value and its listing entry",
    "list: every key under the prefix, in key order, with its summary",
    "namespaces are isolated",
    "threads are isolated: a prefix lists one thread only",
    "keys with any characters round-trip",
    "compare-and-set: Absent and Step refuse a changed key with CONFLICT",
    "compare-and-set: of 20 interleaved conditional puts exactly one wins",
    "large values near the store's limit",
    "list reads summaries, not values",
    "session log: each step appends a record; every position reads back as it was",
    "session log: a crash between a record and the head that names it loses nothing",
    "session log: restore a position, then branch from it",
    "session log: of 10 interleaved replies exactly one runs (positions are claimed only if free)",
];

/// The agent of the session cases: `lookup`, then `ask` pauses on "When?", then "due <answer>"; the
/// counters count each tool's calls.
fn log_agent() -> (
    crate::agent::Agent,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let (lookups, asks) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let l = Arc::clone(&lookups);
    let lookup = crate::tool::tool("lookup", "Look up.", json!({"type": "object"}), move |_, _| {
        l.fetch_add(1, Ordering::SeqCst);
        async move { Ok(json!("found")) }
    });
    let q = Arc::clone(&asks);
    let ask = crate::tool::tool("ask", "Ask.", json!({"type": "object"}), move |_, _| {
        q.fetch_add(1, Ordering::SeqCst);
        async move { Err::<Value, _>(crate::InterruptError::new("When?").into()) }
    });
    let model = crate::model::ScriptedModel::new([
        crate::model::ModelResponse::tool_call("l1", "lookup", json!({})),
        crate::model::ModelResponse::tool_call("a1", "ask", json!({})),
    ])
    .then(|request| {
        let answer = request
            .messages
            .iter()
            .flat_map(|m| m.tool_results().map(|r| r.content.clone()).collect::<Vec<_>>())
            .last()
            .unwrap_or_default();
        crate::model::ModelResponse::text(format!("due {answer}"))
    });
    let agent = crate::agent::Agent::builder(model).tool(lookup).tool(ask).build();
    match agent {
        Ok(a) => (a, lookups, asks),
        // The agent is fixed: building it cannot fail.
        Err(_) => unreachable_agent(),
    }
}

#[allow(clippy::panic)] // never reached: the agent above is valid
fn unreachable_agent() -> ! {
    panic!("the conformance agent is valid")
}

fn agent_err(what: &str, e: crate::error::AgentError) -> String {
    format!("{what}: {e}")
}

/// Polls every future in turn until all are done (a single-threaded host interleaves them at each await).
async fn futures_join_all<F: std::future::Future>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let mut futures: Vec<std::pin::Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (f, o) in futures.iter_mut().zip(out.iter_mut()) {
            if o.is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => *o = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter().flatten().collect()
}

fn counted(c: &std::sync::atomic::AtomicUsize) -> usize {
    c.load(std::sync::atomic::Ordering::SeqCst)
}

async fn round_trip<S: Saver>(make: &impl Fn(&str) -> S) -> CaseResult {
    let s = make("rt");
    let cp = sample_checkpoint("hello", Some("When?"), None, 0)?;
    s.put("k1", &cp).await.map_err(|e| err("put", e))?;
    let got = s.get("k1").await.map_err(|e| err("get", e))?;
    check(got.as_ref() == Some(&cp), "get after put differs")?;
    Ok(None)
}

async fn overwrite<S: Saver>(make: &impl Fn(&str) -> S) -> CaseResult {
    let s = make("ow");
    s.put("k", &sample_checkpoint("one", Some("A?"), None, 0)?)
        .await
        .map_err(|e| err("put", e))?;
    let two = sample_checkpoint("two", None, None, 0)?;
    s.put("k", &two).await.map_err(|e| err("put", e))?;
    check(
        s.get("k").await.map_err(|e| err("get", e))?.as_ref() == Some(&two),
        "get after overwrite",
    )?;
    let listed = s.list("").await.map_err(|e| err("list", e))?;
    check(
        listed.len() == 1 && !listed.iter().any(|e| e.summary.interrupted),
        "the summary follows the value",
    )?;
    Ok(None)
}

async fn missing_keys<S: Saver>(make: &impl Fn(&str) -> S) -> CaseResult {
    let s = make("mk");
    check(
        s.get("nowhere").await.map_err(|e| err("get", e))?.is_none(),
        "get of a missing key",
    )?;
    s.delete("nowhere").await.map_err(|e| err("delete", e))?;
    check(
        !s.exists("nowhere").await.map_err(|e| err("exists", e))?,
        "exists of a missing key",
    )?;
    Ok(None)
}

async fn delete_removes<S: Saver>(make: &impl Fn(&str) -> S) -> CaseResult {
    let s = make("del");
    s.put("gone", &sample_checkpoint("x", None, None, 0)?)
        .await
        .map_err(|e| err("put", e))?;
    s.put("kept", &sample_checkpoint("y", None, None, 0)?)
        .await
        .map_err(|e| err("put", e))?;
    s.delete("gone").await.map_err(|e| err("delete", e))?;
    check(
        s.get("gone").await.map_err(|e| err("get", e))?.is_none(),
        "get after delete",
    )?;
    check(keys(&s, "").await? == ["kept"], "keys after delete")?;
    Ok(None)
}

async fn list_in_key_order<S: Saver>(make: &impl Fn(&str) -> S) -> CaseResult {
    let s = make("ls");
    for k in ["b", "a", "a/1", "a/2", "c"] {
        let q = (k == "a/2").then_some("Q?");
        s.put(k, &sample_checkpoint(k, q, None, 0)?)
            .await
            .map_err(|e| err("put", e))?;
    }
    check(keys(&s, "").await? == ["a", "a/1", "a/2", "b", "c"], "all keys, sorted")?;
    let under = s.list("a/").await.map_err(|e| err("list", e))?;
    let summary = under.iter().find(|e| e.key == "a/2").map(|e| &e.summary);
    check(under.len() == 2, "keys under a/")?;
    check(
        summary.is_some_and(|s| s.interrupted && s.question.as_deref() == Some("Q?") && s.message_count == 2),
        "summary of a/2",
    )?;
    Ok(None)
}

async fn namespaces_isolated<S: Saver>(make: &impl Fn(&str) -> S) -> CaseResult {
    let (a, b) = (make("iso-a"), make("iso-b"));
    a.put("shared", &sample_checkpoint("from a", None, None, 0)?)
        .await
        .map_err(|e| err("put", e))?;
    check(
        b.get("shared").await.map_err(|e| err("get", e))?.is_none(),
        "b sees a's key",
    )?;
    check(keys(&b, "").await?.is_empty(), "b lists a's key")?;
    Ok(None)
}

async fn threads_isolated<S: Saver>(make: &impl Fn(&str) -> S) -> CaseResult {
    let s = make("th");
    for k in ["t1", "t1#~0000000001", "t1#~0000000002", "t10", "t10#~0000000001", "t2"] {
        s.put(k, &sample_checkpoint(k, None, None, 0)?)
            .await
            .map_err(|e| err("put", e))?;
    }
    check(
        keys(&s, "t1#~").await? == ["t1#~0000000001", "t1#~0000000002"],
        "history of t1 only",
    )?;
    Ok(None)
}

async fn any_characters<S: Saver>(make: &impl Fn(&str) -> S) -> CaseResult {
    let s = make("chars");
    let names = ["ünï cödé", "a/b/../c", "%2F%", "emoji 🎉", "dots...", "UPPER lower"];
    for k in names {
        s.put(k, &sample_checkpoint(k, None, None, 0)?)
            .await
            .map_err(|e| err("put", e))?;
    }
    for k in names {
        let got = s.get(k).await.map_err(|e| err("get", e))?;
        check(
            got.map(|c| first_text(&c)).as_deref() == Some(k),
            format!("value under {k:?}"),
        )?;
    }
    Ok(None)
}

async fn compare_and_set<S: Saver>(make: &impl Fn(&str) -> S) -> CaseResult {
    let s = make("cas");
    if !s.compare_and_set() {
        return Ok(Some("the saver does not compare and set"));
    }
    s.put_if(
        "head",
        &sample_checkpoint("first", None, Some(1), 0)?,
        Condition::Absent,
    )
    .await
    .map_err(|e| err("put", e))?;
    expect_code(
        s.put_if(
            "head",
            &sample_checkpoint("again", None, Some(1), 0)?,
            Condition::Absent,
        ),
        "CONFLICT",
        "Absent on a stored key",
    )
    .await?;
    expect_code(
        s.put_if(
            "head",
            &sample_checkpoint("stale", None, Some(2), 0)?,
            Condition::Step(7),
        ),
        "CONFLICT",
        "the wrong step",
    )
    .await?;
    s.put_if(
        "head",
        &sample_checkpoint("second", None, Some(2), 0)?,
        Condition::Step(1),
    )
    .await
    .map_err(|e| err("put", e))?;
    let got = s.get("head").await.map_err(|e| err("get", e))?;
    check(
        got.map(|c| first_text(&c)).as_deref() == Some("second"),
        "the conditional put that matched",
    )?;
    Ok(None)
}

async fn one_of_twenty_wins<S: Saver>(make: &impl Fn(&str) -> S) -> CaseResult {
    let s = make("race");
    if !s.compare_and_set() {
        return Ok(Some("the saver does not compare and set"));
    }
    s.put("head", &sample_checkpoint("start", None, Some(1), 0)?)
        .await
        .map_err(|e| err("put", e))?;
    let mut won = 0;
    // Every writer read step 1; each writes in turn (a single-threaded host interleaves them so).
    for i in 0..20 {
        let cp = sample_checkpoint(&format!("writer {i}"), None, Some(2), 0)?;
        match s.put_if("head", &cp, Condition::Step(1)).await {
            Ok(()) => won += 1,
            Err(e) if e.code() == "CONFLICT" => {}
            Err(e) => return Err(err("put", e)),
        }
    }
    check(won == 1, format!("exactly one winner, got {won}"))?;
    Ok(None)
}

async fn large_values<S: Saver>(make: &impl Fn(&str) -> S) -> CaseResult {
    let s = make("big");
    let base = sample_checkpoint("x", None, None, 0)?.to_json().len();
    match s.max_value_bytes() {
        None => {
            let big = sample_checkpoint("x", None, None, 1024 * 1024)?;
            s.put("big", &big).await.map_err(|e| err("put", e))?;
            check(
                s.get("big").await.map_err(|e| err("get", e))?.as_ref() == Some(&big),
                "a 1 MiB value round-trips",
            )?;
        }
        Some(limit) => {
            let under = sample_checkpoint("x", None, None, limit.saturating_sub(base + 64))?;
            s.put("big", &under).await.map_err(|e| err("put", e))?;
            let over = sample_checkpoint("x", None, None, limit.saturating_sub(base).saturating_add(64))?;
            expect_code(s.put("big", &over), "TOO_LARGE", "just over the limit").await?;
            check(
                s.get("big").await.map_err(|e| err("get", e))?.as_ref() == Some(&under),
                "a refused put leaves the value",
            )?;
        }
    }
    Ok(None)
}

async fn log_appends<S: Saver>(make: &impl Fn(&str) -> S) -> CaseResult {
    let s = make("log");
    let (agent, lookups, asks) = log_agent();
    let session = agent.session(&s, "conv").keep_completed(true);
    let paused = session.prompt("Plan.").await.map_err(|e| agent_err("prompt", e))?;
    let latest = session.checkpoint(None).await.map_err(|e| agent_err("checkpoint", e))?;
    check(
        latest.as_ref() == Some(paused.checkpoint()),
        "the latest checkpoint, read back",
    )?;
    let before = session
        .history(usize::MAX, None)
        .await
        .map_err(|e| agent_err("history", e))?;
    check(before.len() >= 4, format!("a record per step, got {}", before.len()))?;
    let newest = before.first().and_then(|h| h.summary.step).unwrap_or_default();
    for (i, h) in before.iter().enumerate() {
        let step = h.summary.step.unwrap_or_default();
        check(step + i as u64 == newest, "consecutive positions, newest first")?;
        let cp = session
            .checkpoint(Some(step))
            .await
            .map_err(|e| agent_err("checkpoint(step)", e))?;
        check(
            cp.is_some_and(|c| c.messages.len() == h.summary.message_count),
            format!("position {step} reads back as listed"),
        )?;
    }
    let done = session.reply("Friday").await.map_err(|e| agent_err("reply", e))?;
    check(
        done.checkpoint()
            .messages
            .last()
            .map(crate::message::Message::text)
            .as_deref()
            == Some("due Friday"),
        "the answer",
    )?;
    let earlier = session
        .checkpoint(Some(newest))
        .await
        .map_err(|e| agent_err("checkpoint(earlier)", e))?;
    check(
        earlier.as_ref() == Some(paused.checkpoint()),
        "an earlier position is unchanged by the reply",
    )?;
    check(counted(&lookups) == 1 && counted(&asks) == 1, "each tool ran once")?;
    Ok(None)
}

async fn crash_loses_nothing<S: Saver>(make: &impl Fn(&str) -> S) -> CaseResult {
    let s = make("crash");
    let (agent, lookups, _) = log_agent();
    let paused = agent
        .session(&s, "conv")
        .prompt("Plan.")
        .await
        .map_err(|e| agent_err("prompt", e))?;
    // The records are written, the head is not (a crash before it).
    s.delete("conv").await.map_err(|e| err("delete the head", e))?;
    let back = agent
        .session(&s, "conv")
        .checkpoint(None)
        .await
        .map_err(|e| agent_err("checkpoint", e))?;
    check(
        back.as_ref() == Some(paused.checkpoint()),
        "found from the records alone",
    )?;
    let done = agent
        .session(&s, "conv")
        .reply("Monday")
        .await
        .map_err(|e| agent_err("reply", e))?;
    check(
        done.checkpoint()
            .messages
            .last()
            .map(crate::message::Message::text)
            .as_deref()
            == Some("due Monday"),
        "the reply continues it",
    )?;
    check(counted(&lookups) == 1, "no completed call ran again")?;
    Ok(None)
}

async fn restore_and_branch<S: Saver>(make: &impl Fn(&str) -> S) -> CaseResult {
    let s = make("branch");
    let (agent, _, _) = log_agent();
    let session = agent.session(&s, "conv").keep_completed(true);
    let paused = session.prompt("Plan.").await.map_err(|e| agent_err("prompt", e))?;
    let at = paused.checkpoint().thread.as_ref().map(|t| t.step).unwrap_or_default();
    session.label(at, "asked").await.map_err(|e| agent_err("label", e))?;
    session.reply("May").await.map_err(|e| agent_err("reply", e))?;
    let restored = session.restore("asked").await.map_err(|e| agent_err("restore", e))?;
    check(
        restored.thread.as_ref().and_then(|t| t.parent_step) == Some(at),
        "the new head continues from the label",
    )?;
    let june = session
        .reply("June")
        .await
        .map_err(|e| agent_err("reply on the branch", e))?;
    check(
        june.checkpoint()
            .messages
            .last()
            .map(crate::message::Message::text)
            .as_deref()
            == Some("due June"),
        "a second answer, on the branch",
    )?;
    let history = session
        .history(usize::MAX, None)
        .await
        .map_err(|e| agent_err("history", e))?;
    check(
        history
            .iter()
            .any(|h| h.summary.label.as_deref() == Some("asked") && h.summary.step == Some(at)),
        "the label stays",
    )?;
    check(
        history
            .iter()
            .any(|h| h.summary.parent_step == Some(at) && h.summary.step > Some(at + 1)),
        "a position whose parent is the labelled one",
    )?;
    Ok(None)
}

async fn one_reply_runs<S: Saver>(make: &impl Fn(&str) -> S) -> CaseResult {
    let s = make("claim");
    if !s.compare_and_set() {
        return Ok(Some("the saver does not compare and set"));
    }
    let (agent, lookups, asks) = log_agent();
    agent
        .session(&s, "conv")
        .prompt("Plan.")
        .await
        .map_err(|e| agent_err("prompt", e))?;
    let sessions: Vec<_> = (0..10).map(|_| agent.session(&s, "conv")).collect();
    let replies = futures_join_all(
        sessions
            .iter()
            .enumerate()
            .map(|(i, session)| session.reply(format!("day {i}"))),
    )
    .await;
    let won = replies.iter().filter(|r| r.is_ok()).count();
    check(won == 1, format!("exactly one reply runs, got {won}"))?;
    for r in &replies {
        if let Err(e) = r {
            check(
                matches!(
                    e,
                    crate::error::AgentError::SessionBusy { .. }
                        | crate::error::AgentError::SessionNotFound { .. }
                        | crate::error::AgentError::Decision { .. }
                ),
                format!("the others are refused before running: {e}"),
            )?;
        }
    }
    check(counted(&lookups) == 1 && counted(&asks) == 1, "no tool ran twice")?;
    Ok(None)
}

async fn case<S: Saver>(n: usize, make: &impl Fn(&str) -> S) -> CaseResult {
    match n {
        0 => round_trip(make).await,
        1 => overwrite(make).await,
        2 => missing_keys(make).await,
        3 => delete_removes(make).await,
        4 => list_in_key_order(make).await,
        5 => namespaces_isolated(make).await,
        6 => threads_isolated(make).await,
        7 => any_characters(make).await,
        8 => compare_and_set(make).await,
        9 => one_of_twenty_wins(make).await,
        10 => large_values(make).await,
        12 => log_appends(make).await,
        13 => crash_loses_nothing(make).await,
        14 => restore_and_branch(make).await,
        15 => one_reply_runs(make).await,
        _ => Ok(Some("needs raw access to the store")),
    }
}

/// Runs every case against savers from `make(namespace)` (savers of different namespaces must not see each
/// other's keys).
pub async fn saver_conformance<S: Saver>(make: impl Fn(&str) -> S) -> Vec<ConformanceResult> {
    let mut out = Vec::with_capacity(NAMES.len());
    for (n, name) in NAMES.iter().enumerate() {
        let result = case(n, &make).await;
        out.push(match result {
            Ok(skipped) => ConformanceResult {
                name,
                ok: true,
                skipped,
                error: None,
            },
            Err(e) => ConformanceResult {
                name,
                ok: false,
                skipped: None,
                error: Some(e),
            },
        });
    }
    out
}
