//! A session's log over a [`Saver`]: loading it (head → the records past it → the chain back to a whole
//! checkpoint), writing one record per saved step, the head at the end of a call, and deleting a session.
//!
//! Exactly one of several concurrent calls continues a session: each call's first write is the record after
//! the last one it loaded, written only if that key is still free ([`Condition::Absent`]) — on a saver that
//! compares and sets, of fifty replies to one question exactly one gets it. A session is deleted by writing
//! an end record first and then removing its keys oldest first; a call whose first write landed on a key
//! that deletion had already freed finds its parent gone and backs out. So an answer runs once even while
//! its session is being deleted.

use serde::Serialize;
use serde_json::Value;

use super::log::{self, Base, Diff, EVENT_BLOCK, Head, Labels, LogInfo, Stored};
pub(crate) use super::log::{label_of, relabel};
use crate::checkpoint::CheckpointError;
use crate::checkpoint::{Checkpoint, CheckpointSummary, ThreadInfo};
use crate::error::AgentError;
use crate::event::{Event, EventSink};
use crate::keys::Codec;
use crate::run::Saved;
use crate::saver::SaverError;
use crate::saver::{Condition, DynSaver, SavedCheckpoint};

/// Separates a session id from a record's position in keys (`<id>#~<seq>`); session ids may not contain it.
pub const HISTORY_SEPARATOR: &str = "#~";

/// A record's key.
pub(crate) fn record_key(id: &str, seq: u64) -> String {
    format!("{id}{HISTORY_SEPARATOR}{seq:010}")
}

/// The position in a record's key.
fn position_of(id: &str, key: &str) -> Option<u64> {
    key.strip_prefix(id)?.strip_prefix(HISTORY_SEPARATOR)?.parse().ok()
}

/// A whole checkpoint is written instead of a diff once the records a load reads since the last whole one
/// are over twice the checkpoint (compaction dropped what they hold) and over this many bytes.
const SNAPSHOT_MIN_BYTES: usize = 1 << 20;
/// … or once this many diffs follow it (a load reads them all).
const SNAPSHOT_MAX_RECORDS: usize = 2000;
/// Records read per round trip while probing past the head, at most.
const PROBE_MAX: u64 = 64;
/// Margin added to a store's write interval (clocks of different machines differ a little).
pub(crate) const INTERVAL_MARGIN_MS: u64 = 200;

/// Room for a whole record's log member (and a seal) beside the checkpoint, against a store's value limit.
const WHOLE_RECORD_FRAME: usize = 4096;

pub(crate) fn saver_error(source: SaverError, checkpoint: Option<&Checkpoint>) -> AgentError {
    AgentError::Saver {
        source,
        checkpoint: checkpoint.map(|c| Box::new(c.clone())),
    }
}

fn corrupt(key: &str, source: CheckpointError) -> AgentError {
    match source {
        // Tampering or a foreign checkpoint is the caller's business, not a broken store.
        CheckpointError::Signature { problem } => AgentError::Checkpoint(CheckpointError::Signature {
            problem: format!("saved under {key:?}: {problem}"),
        }),
        CheckpointError::Binding { problem } => AgentError::Checkpoint(CheckpointError::Binding {
            problem: format!("saved under {key:?}: {problem}"),
        }),
        source => saver_error(
            SaverError::Corrupt {
                key: key.to_owned(),
                source,
            },
            None,
        ),
    }
}

/// What a session's events are bound to when sealed: the record's place.
fn bound(id: &str, seq: u64) -> Vec<u8> {
    format!("\0session\0{id}\0{seq}").into_bytes()
}

/// A session in a saver: its id, how its values are read and written, and how its steps are stored.
pub(crate) struct Log<'a> {
    pub(crate) saver: &'a dyn DynSaver,
    pub(crate) id: &'a str,
    pub(crate) codec: Codec<'a>,
}

/// What a load found under the session's id (the head).
#[derive(Debug, Clone, Default)]
pub(crate) struct HeadSeen {
    /// Something is stored under the id.
    pub(crate) present: bool,
    /// The position it names.
    pub(crate) seq: u64,
    /// When it was written (0: unknown).
    pub(crate) at: u64,
    pub(crate) labels: Labels,
    /// A whole checkpoint stored under the id (an earlier release's head, or a saver of checkpoints), and its
    /// log member (the latter).
    whole: Option<Box<Checkpoint>>,
    whole_log: Option<LogInfo>,
}

/// The chain of records a state was rebuilt from, for the next write.
#[derive(Debug, Clone, Default)]
pub(crate) struct Chain {
    /// The MAC of the last record (what the next one is chained to).
    pub(crate) mac: Option<String>,
    /// Diffs since the last whole checkpoint, and the bytes a load reads.
    pub(crate) len: usize,
    pub(crate) bytes: usize,
}

/// A loaded session.
#[derive(Debug, Clone, Default)]
pub(crate) struct Loaded {
    pub(crate) head: HeadSeen,
    /// The last record (0: none).
    pub(crate) tip: u64,
    /// The run at the last record; `None` when nothing is stored.
    pub(crate) state: Option<Checkpoint>,
    /// The last record ends the session (it is being deleted), written at `ended_at`.
    pub(crate) ended: bool,
    pub(crate) ended_at: u64,
    pub(crate) chain: Chain,
    /// The size of the state's JSON.
    pub(crate) bytes: usize,
}

/// A record's chain: the whole checkpoint it starts from (with its log, size and position) and the diffs
/// after it, newest first.
struct Walk {
    base: (Checkpoint, Option<LogInfo>, usize, u64),
    diffs: Vec<(u64, LogInfo, log::Body, usize)>,
}

/// Records read so far, by position.
type Fetched = std::collections::BTreeMap<u64, Read>;

/// One read of a stored value: what it is and its size.
struct Read {
    stored: Stored,
    bytes: usize,
}

impl Log<'_> {
    fn key(&self, seq: u64) -> String {
        record_key(self.id, seq)
    }

    /// Parses a stored text read from `key` (position `seq`, or the head when `None`): opened when sealed; for
    /// an agent that signs, authenticated before it is read (a diff record when its chain is followed).
    async fn read_text(&self, key: &str, seq: Option<u64>, text: String) -> Result<Read, AgentError> {
        let bytes = text.len();
        let b = seq.map(|s| bound(self.id, s)).unwrap_or_else(|| bound(self.id, 0));
        let text = self.codec.open_text(text, &b).await.map_err(|e| corrupt(key, e))?;
        let stored = match self.codec.keys {
            None => log::parse(&text, &self.codec.limits),
            Some(keys) => self.read_signed(keys, &text).await,
        }
        .map_err(|e| corrupt(key, e))?;
        if let Stored::Full(cp, _) = &stored {
            // A checkpoint saved by another session (copied between ids) is refused, signed or not.
            if let Some(t) = cp.thread.as_ref().filter(|t| t.id != self.id) {
                return Err(corrupt(
                    key,
                    CheckpointError::Binding {
                        problem: format!("it belongs to session {:?}, not {:?}", t.id, self.id),
                    },
                ));
            }
        }
        let place = |n: u64| match &stored {
            Stored::Diff(l, _) => l.seq == n,
            Stored::Full(cp, l) => l.as_ref().map_or(cp.thread.as_ref().map(|t| t.step), |l| Some(l.seq)) == Some(n),
            Stored::Head(_) => false,
        };
        if let Some(n) = seq.filter(|n| !place(*n)) {
            return Err(corrupt(
                key,
                self.misplaced("log.seq", format!("expected position {n}")),
            ));
        }
        Ok(Read { stored, bytes })
    }

    /// A record whose log does not fit its place. An agent that signs authenticates the place with the record
    /// (its MAC covers the session id, the position and the parent): such a record was changed or moved.
    fn misplaced(&self, path: &str, problem: String) -> CheckpointError {
        match self.codec.keys {
            Some(_) => CheckpointError::Signature {
                problem: format!("{path}: {problem} (the record was changed or moved)"),
            },
            None => CheckpointError::at(path, problem),
        }
    }

    /// A stored value of a session an agent with `keys` writes, parsed once and read only after its MAC is
    /// checked over the JSON as stored: any change that still parses is `SIGNATURE`, a member the format does
    /// not know included. A diff record's MAC chains it to its parent: it is checked when the chain is followed.
    async fn read_signed(&self, keys: &crate::keys::CheckpointKeys, text: &str) -> Result<Stored, CheckpointError> {
        let limits = &self.codec.limits;
        if text.len() > limits.max_checkpoint_bytes {
            return Err(CheckpointError::TooLarge {
                bytes: text.len(),
                max: limits.max_checkpoint_bytes,
            });
        }
        let agent = self.codec.agent;
        match log::parsed(crate::checkpoint::parse_value(text, limits)?)? {
            log::Parsed::Head(head, value) => {
                keys.verify_value(head.sig.as_ref(), agent, &[self.id, "head"], &value, "session head")
                    .await?;
                Ok(Stored::Head(head))
            }
            log::Parsed::Diff(info, value) => Ok(Stored::Diff(info, log::Body::Signed(value, text.to_owned()))),
            // Read from their text once authenticated: no second decoder for every checkpoint type.
            log::Parsed::Full(info, value) => {
                let (seq, parent) = (info.seq.to_string(), info.parent().to_string());
                let what = [self.id, seq.as_str(), parent.as_str(), ""];
                keys.verify_value(info.sig.as_ref(), agent, &what, &value, "session record")
                    .await?;
                let (cp, _) = Checkpoint::read_record(text, limits)?;
                Ok(Stored::Full(cp, Some(info)))
            }
            log::Parsed::Checkpoint(mut value) => {
                keys.verify_parsed(&mut value, agent).await?;
                Ok(Stored::Full(Checkpoint::read_record(text, limits)?.0, None))
            }
        }
    }

    /// The records at `seqs` (in order; `None` where nothing is stored).
    async fn read_many(&self, seqs: &[u64]) -> Result<Vec<Option<Read>>, AgentError> {
        let keys: Vec<String> = seqs.iter().map(|s| self.key(*s)).collect();
        let texts = self.saver.get_many_dyn(&keys).await.map_err(|e| saver_error(e, None))?;
        let mut out = Vec::with_capacity(seqs.len());
        for ((seq, key), text) in seqs.iter().zip(&keys).zip(texts) {
            out.push(match text {
                Some(t) => Some(self.read_text(key, Some(*seq), t).await?),
                None => None,
            });
        }
        Ok(out)
    }

    /// The head under the session's id.
    pub(crate) async fn read_head(&self) -> Result<HeadSeen, AgentError> {
        let Some(text) = self
            .saver
            .get_text_dyn(self.id)
            .await
            .map_err(|e| saver_error(e, None))?
        else {
            return Ok(HeadSeen::default());
        };
        // Read as every value is (authenticated then, with keys).
        match self.read_text(self.id, None, text).await?.stored {
            Stored::Head(h) => Ok(HeadSeen {
                present: true,
                seq: h.seq,
                at: h.at,
                labels: h.labels,
                whole: None,
                whole_log: None,
            }),
            Stored::Full(cp, log) => {
                let seq = cp.thread.as_ref().map_or(0, |t| t.step);
                let labels = log.as_ref().and_then(|l| l.labels.clone()).unwrap_or_default();
                Ok(HeadSeen {
                    present: true,
                    seq,
                    at: log.as_ref().and_then(|l| l.at).unwrap_or(0),
                    labels,
                    whole: Some(Box::new(cp)),
                    whole_log: log,
                })
            }
            Stored::Diff(..) => Err(corrupt(
                self.id,
                CheckpointError::at("session head", "a step record stored under the session id"),
            )),
        }
    }

    /// The stored text of a whole record of `cp` at position `seq` (`info` its log member, signed here when
    /// the agent signs; sealed when it seals): what a record, a snapshot head and a rewritten labelled
    /// record are.
    async fn whole_text(
        &self,
        cp: &Checkpoint,
        info: &mut LogInfo,
        seal_at: u64,
        key: &str,
    ) -> Result<String, AgentError> {
        let fail = |e| saver_error(corrupt_source(key, e), Some(cp));
        if let Some(keys) = self.codec.keys {
            let (s, p) = (info.seq.to_string(), info.parent().to_string());
            info.sig = Some(
                keys.sign_value(self.codec.agent, &[self.id, &s, &p, ""], &full_value(cp, info))
                    .await
                    .map_err(fail)?,
            );
        }
        self.codec
            .seal_text(full_text(cp, info), &bound(self.id, seal_at))
            .await
            .map_err(fail)
    }

    /// Loads the session: its head, the records past it, and the run rebuilt at the last one.
    ///
    /// # Errors
    /// [`AgentError::Saver`] (a corrupt record names its key); [`AgentError::Checkpoint`] for a record whose
    /// signature fails or that belongs to another session or agent.
    pub(crate) async fn load(&self) -> Result<Loaded, AgentError> {
        match self.load_once().await {
            // A record of the chain went while it was read: the session is being deleted (its keys go oldest
            // first). Read again: the end record, or nothing, is there now.
            Err(e) if is_missing_link(&e) => self.load_once().await,
            other => other,
        }
    }

    async fn load_once(&self) -> Result<Loaded, AgentError> {
        let head = self.read_head().await?;
        let mut fetched = Fetched::default();
        let tip = self.probe(head.seq, &mut fetched).await?;
        if tip == 0 {
            // Nothing past position 0: a checkpoint stored under the id (a session of the first releases) or
            // nothing at all.
            return Ok(match head.whole.clone() {
                Some(cp) if head.seq == 0 => self.finish(head, 0, *cp, None, Chain::default())?,
                _ => Loaded {
                    head,
                    ..Loaded::default()
                },
            });
        }
        if let Some(at) = ended_at(&fetched, tip) {
            return Ok(ended(head, tip, at));
        }
        if let Some((state, info, chain)) = self.rebuild(tip, &head, &mut fetched).await? {
            return self.finish(head, tip, state, info, chain);
        }
        // The head names a record that is gone: the session is being (or was) deleted — its keys go oldest
        // first and the head last — or a store lost it. What is left starts at the lowest record stored.
        let Some(low) = self.records().await?.first().and_then(|e| position_of(self.id, &e.key)) else {
            return Ok(Loaded {
                head,
                ..Loaded::default()
            });
        };
        let mut fetched = Fetched::default();
        let tip = self.probe(low - 1, &mut fetched).await?;
        if let Some(at) = ended_at(&fetched, tip) {
            return Ok(ended(head, tip, at));
        }
        match self.rebuild(tip, &HeadSeen::default(), &mut fetched).await? {
            Some((state, info, chain)) if tip >= low => self.finish(head, tip, state, info, chain),
            _ => Ok(Loaded {
                head,
                ..Loaded::default()
            }),
        }
    }

    /// The last record at or after `from` (0: none), reading ahead in growing batches.
    async fn probe(&self, from: u64, fetched: &mut Fetched) -> Result<u64, AgentError> {
        let mut tip = from;
        let mut batch = 4;
        loop {
            let seqs: Vec<u64> = (tip + 1..=tip + batch).collect();
            let mut all = true;
            for (seq, read) in seqs.iter().zip(self.read_many(&seqs).await?) {
                match read {
                    Some(r) if all => {
                        fetched.entry(*seq).or_insert(r);
                        tip = *seq;
                    }
                    _ => all = false,
                }
            }
            if !all {
                return Ok(tip);
            }
            batch = (batch * 2).min(PROBE_MAX);
        }
    }

    /// The chain of record `tip` back to a whole checkpoint; `None` when record `tip` itself is missing.
    async fn walk(&self, tip: u64, head: &HeadSeen, fetched: &mut Fetched) -> Result<Option<Walk>, AgentError> {
        if tip == 0 {
            return Ok(None);
        }
        let mut diffs: Vec<(u64, LogInfo, log::Body, usize)> = Vec::new();
        let mut at = tip;
        loop {
            if !fetched.contains_key(&at) {
                if head.seq == at {
                    if let Some(cp) = &head.whole {
                        // A head that is a whole checkpoint (an earlier release's, or a saver's of checkpoints)
                        // is the state at its step.
                        let base = ((**cp).clone(), head.whole_log.clone(), 0, at);
                        return Ok(Some(Walk { base, diffs }));
                    }
                }
                let seqs: Vec<u64> = (at.saturating_sub(31).max(1)..=at).collect();
                for (seq, read) in seqs.iter().zip(self.read_many(&seqs).await?) {
                    if let Some(r) = read {
                        fetched.entry(*seq).or_insert(r);
                    }
                }
            }
            let Some(read) = fetched.remove(&at) else {
                if at == tip {
                    return Ok(None);
                }
                return Err(corrupt(
                    &self.key(at),
                    CheckpointError::at("log", format!("record {at}, on the chain of record {tip}, is missing")),
                ));
            };
            match read.stored {
                Stored::Full(cp, log) => {
                    return Ok(Some(Walk {
                        base: (cp, log, read.bytes, at),
                        diffs,
                    }));
                }
                Stored::Diff(info, d) => {
                    let parent = info.parent();
                    if parent == 0 || parent >= at {
                        let problem = format!("{parent} does not precede {at}");
                        return Err(corrupt(&self.key(at), self.misplaced("log.parent", problem)));
                    }
                    diffs.push((at, info, d, read.bytes));
                    at = parent;
                }
                Stored::Head(_) => {
                    return Err(corrupt(
                        &self.key(at),
                        CheckpointError::at("log", "a session head stored as a record"),
                    ));
                }
            }
        }
    }

    /// Follows a walk forward, verifying each link and applying it; `each` sees every record's state.
    async fn follow(
        &self,
        walk: Walk,
        mut each: impl FnMut(u64, &Checkpoint, Option<&LogInfo>),
    ) -> Result<(Checkpoint, Option<LogInfo>, Chain), AgentError> {
        let Walk {
            base: (state, info, base_bytes, base_seq),
            diffs,
        } = walk;
        let (mut state, mut chain) = self.start(state, info.as_ref(), base_bytes);
        chain.len = diffs.len();
        each(base_seq, &state, info.as_ref());
        let mut info = info;
        for (seq, l, d, bytes) in diffs.into_iter().rev() {
            self.advance(&mut state, &mut chain, seq, &l, d, bytes).await?;
            each(seq, &state, Some(&l));
            info = Some(l);
        }
        Ok((state, info, chain))
    }

    /// A whole record (position `seq`, `bytes` long; authenticated when it was read), as the start of a chain.
    fn start(&self, mut state: Checkpoint, info: Option<&LogInfo>, bytes: usize) -> (Checkpoint, Chain) {
        let mac = match info {
            Some(l) => l.sig.as_ref().map(|s| s.mac.clone()),
            None => state.signature.as_ref().map(|s| s.mac.clone()),
        };
        state.signature = None;
        (state, Chain { mac, len: 0, bytes })
    }

    /// Applies diff record `seq` to `state`, verifying its link to the chain.
    async fn advance(
        &self,
        state: &mut Checkpoint,
        chain: &mut Chain,
        seq: u64,
        l: &LogInfo,
        body: log::Body,
        bytes: usize,
    ) -> Result<(), AgentError> {
        let key = self.key(seq);
        if let Some(keys) = self.codec.keys {
            let value = match &body {
                log::Body::Signed(v, _) => v.clone(),
                log::Body::Read(d) => diff_value(l, d),
            };
            let (s, p) = (seq.to_string(), l.parent().to_string());
            let parent_mac = chain.mac.clone().unwrap_or_default();
            keys.verify_value(
                l.sig.as_ref(),
                self.codec.agent,
                &[self.id, &s, &p, &parent_mac],
                &value,
                "session record",
            )
            .await
            .map_err(|e| corrupt(&key, e))?;
        }
        chain.mac = l.sig.as_ref().map(|s| s.mac.clone());
        chain.bytes += bytes;
        let d = body.diff().map_err(|e| corrupt(&key, e))?;
        log::apply(state, d, seq).map_err(|e| corrupt(&key, e))
    }

    /// The run at record `tip`, rebuilt from the chain back to a whole checkpoint; `None` when record `tip`
    /// itself is missing.
    async fn rebuild(
        &self,
        tip: u64,
        head: &HeadSeen,
        fetched: &mut Fetched,
    ) -> Result<Option<(Checkpoint, Option<LogInfo>, Chain)>, AgentError> {
        match self.walk(tip, head, fetched).await? {
            Some(walk) => self.follow(walk, |_, _, _| {}).await.map(Some),
            None => Ok(None),
        }
    }

    /// Reports the logged events of the session's chain numbered above `after` to `sink`. With `follow`, it
    /// then keeps reporting what later records add while a call runs the session — reading only the new
    /// records, a batch per poll — until the call ends, the session goes, or `follow` says stop.
    ///
    /// # Errors
    /// [`AgentError::SessionNotFound`] when nothing is stored under the id; as [`Log::load`].
    pub(crate) async fn replay(
        &self,
        after: u64,
        sink: &mut dyn EventSink,
        follow: Option<Follow>,
    ) -> Result<super::Replayed, AgentError> {
        let head = self.read_head().await?;
        let mut fetched = Fetched::default();
        let mut tip = self.probe(head.seq, &mut fetched).await?;
        let mut walk = self.walk(tip, &head, &mut fetched).await?;
        if walk.is_none() && head.seq > 0 {
            fetched.clear();
            tip = self.probe(0, &mut fetched).await?;
            walk = self.walk(tip, &HeadSeen::default(), &mut fetched).await?;
        }
        let mut reporter = Reporter {
            id: self.id,
            after,
            out: super::Replayed {
                last: after,
                ..super::Replayed::default()
            },
            ended: false,
        };
        let Some(walk) = walk else {
            // A checkpoint of the first releases stored under the id has no log: nothing to replay.
            if head.present {
                return Ok(reporter.out);
            }
            return Err(AgentError::SessionNotFound { id: self.id.to_owned() });
        };
        let (mut state, _, mut chain) = self.follow(walk, |n, s, l| reporter.record(n, s, l, sink)).await?;
        let Some(follow) = follow else { return Ok(reporter.out) };
        let until = crate::platform::now_ms().saturating_add(follow.timeout_ms);
        while reporter.out.running && !reporter.ended && !sink.aborted() {
            let now = crate::platform::now_ms();
            if now >= until {
                break;
            }
            crate::platform::sleep_until(now.saturating_add(follow.poll_ms).min(until)).await;
            if sink.aborted() {
                break;
            }
            let last = self.probe(tip, &mut fetched).await?;
            for seq in tip + 1..=last {
                let Some(read) = fetched.remove(&seq) else { break };
                match read.stored {
                    Stored::Diff(l, d) if l.parent() == tip => {
                        self.advance(&mut state, &mut chain, seq, &l, d, read.bytes).await?;
                        reporter.record(seq, &state, Some(&l), sink);
                    }
                    // A whole record: a snapshot, or a restore that branched.
                    Stored::Full(cp, l) => {
                        (state, chain) = self.start(cp, l.as_ref(), read.bytes);
                        reporter.record(seq, &state, l.as_ref(), sink);
                    }
                    _ => {
                        return Err(corrupt(
                            &self.key(seq),
                            CheckpointError::at("log.parent", format!("record {seq} does not follow record {tip}")),
                        ));
                    }
                }
                tip = seq;
            }
        }
        Ok(reporter.out)
    }

    /// Checks the rebuilt run as a checkpoint read from text is checked, and places it in the session.
    fn finish(
        &self,
        head: HeadSeen,
        tip: u64,
        mut state: Checkpoint,
        info: Option<LogInfo>,
        chain: Chain,
    ) -> Result<Loaded, AgentError> {
        let key = if tip == 0 { self.id.to_owned() } else { self.key(tip) };
        let limits = self.codec.limits;
        let depth = crate::checkpoint::normalize_values(&mut state);
        if depth > limits.checkpoint_depth() {
            return Err(corrupt(
                &key,
                CheckpointError::TooDeep {
                    depth,
                    max: limits.checkpoint_depth(),
                },
            ));
        }
        state.signature = None;
        let parent = info.as_ref().map_or_else(
            || state.thread.as_ref().and_then(|t| t.parent_step),
            |l| Some(l.parent()).filter(|p| *p > 0),
        );
        state.thread = Some(ThreadInfo {
            id: self.id.to_owned(),
            step: tip,
            parent_step: parent,
            label: label_of(&head.labels, tip).or_else(|| state.thread.as_ref().and_then(|t| t.label.clone())),
        });
        let bytes = crate::json::len(&state);
        if bytes > limits.max_checkpoint_bytes {
            return Err(corrupt(
                &key,
                CheckpointError::TooLarge {
                    bytes,
                    max: limits.max_checkpoint_bytes,
                },
            ));
        }
        state.validate().map_err(|e| corrupt(&key, e))?;
        let ended = info.as_ref().filter(|l| l.end).map(|l| l.at.unwrap_or(0));
        Ok(Loaded {
            head,
            tip,
            state: Some(state),
            ended: ended.is_some(),
            ended_at: ended.unwrap_or(0),
            chain,
            bytes,
        })
    }

    /// The run at record `seq` (with its place in the session), or `None` when it is not stored.
    pub(crate) async fn state_at(&self, seq: u64, head: &HeadSeen) -> Result<Option<Checkpoint>, AgentError> {
        let mut fetched = Fetched::default();
        match self.rebuild(seq, head, &mut fetched).await? {
            Some((state, info, chain)) => Ok(self.finish(head.clone(), seq, state, info, chain)?.state),
            None => Ok(None),
        }
    }

    /// Every record's summary (and earlier releases' history entries), oldest first.
    pub(crate) async fn records(&self) -> Result<Vec<SavedCheckpoint>, AgentError> {
        let prefix = format!("{}{HISTORY_SEPARATOR}", self.id);
        let mut all = self.saver.list_dyn(&prefix).await.map_err(|e| saver_error(e, None))?;
        all.retain(|e| position_of(self.id, &e.key).is_some());
        all.sort_by_key(|e| position_of(self.id, &e.key));
        Ok(all)
    }
}

/// True for the error of a chain whose record is missing.
fn is_missing_link(e: &AgentError) -> bool {
    matches!(e, AgentError::Saver { source: SaverError::Corrupt { source: CheckpointError::Invalid { path, .. }, .. }, .. } if path == "log")
}

/// When the record at `tip` ended the session (it is an end record), if it did.
fn ended_at(fetched: &Fetched, tip: u64) -> Option<u64> {
    match &fetched.get(&tip)?.stored {
        Stored::Diff(l, _) | Stored::Full(_, Some(l)) if l.end => Some(l.at.unwrap_or(0)),
        _ => None,
    }
}

/// A session whose last record ends it.
fn ended(head: HeadSeen, tip: u64, at: u64) -> Loaded {
    Loaded {
        head,
        tip,
        ended: true,
        ended_at: at,
        ..Loaded::default()
    }
}

/// How long [`Session::replay_following`](crate::Session::replay_following) keeps following a call that
/// runs the session in another process, and how often it reads what that call added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Follow {
    /// Stop following after this long (ms).
    pub timeout_ms: u64,
    /// Between two reads of the records past the last one (ms).
    pub poll_ms: u64,
}

impl Follow {
    /// Follows for `timeout_ms`, reading every `poll_ms`.
    pub fn new(timeout_ms: u64, poll_ms: u64) -> Self {
        Follow { timeout_ms, poll_ms }
    }
}

/// Reports a replayed record's events numbered above `after`.
struct Reporter<'a> {
    id: &'a str,
    after: u64,
    out: super::Replayed,
    /// An end record was met: the session is being deleted.
    ended: bool,
}

impl Reporter<'_> {
    fn report(&mut self, seq: u64, event: &Event<'_>, sink: &mut dyn EventSink) {
        if seq > self.after {
            sink.sequenced(Some(seq), event);
            self.out.last = seq;
        }
    }

    /// Record `n` (its state `state`, its log `info`): the events it logged, `checkpoint-saved`, and where
    /// the call stopped there, `interrupt` and `done` or `error`.
    fn record(&mut self, n: u64, state: &Checkpoint, info: Option<&LogInfo>, sink: &mut dyn EventSink) {
        let Some(info) = info else { return };
        if info.end {
            self.ended = true;
            return;
        }
        let block = n.saturating_sub(1).saturating_mul(EVENT_BLOCK);
        for e in &info.ev {
            if let Some((offset, event)) = log::expand(e, state) {
                self.report(block + offset, &event, sink);
            } else if let Some(logged) = log::Logged::of(e) {
                if let Some((event, path)) = logged.event() {
                    let nested = Event::Nested(crate::event::Nested {
                        event: &event,
                        path: path.to_vec(),
                    });
                    self.report(block + logged.offset, &nested, sink);
                }
            }
        }
        let base = n.saturating_mul(EVENT_BLOCK);
        let saved = Event::CheckpointSaved {
            key: self.id,
            message_count: state.messages.len(),
        };
        self.report(base + log::SAVED_AT, &saved, sink);
        self.out.running = true;
        if state.is_interrupted() {
            let event = Event::Interrupt {
                question: state.question.as_deref().unwrap_or_default(),
                interrupts: &state.interrupts,
            };
            self.report(base + log::INTERRUPT_AT, &event, sink);
        }
        if let Some(error) = &info.err {
            self.report(base + log::END_AT, &Event::Error { error }, sink);
            self.out.running = false;
        } else if state.is_interrupted() || state.is_finished() {
            let text = log::answer_text(state);
            let result = crate::event::CallResult::of(state, &text);
            self.report(base + log::END_AT, &Event::Done { result }, sink);
            self.out.running = false;
        }
    }
}

/// A value as JSON, through its text (one serializer per type in the .wasm, not two).
fn value_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// A record as the JSON value its MAC covers (without the MAC).
fn diff_value(l: &LogInfo, d: &Diff) -> Value {
    let mut l = l.clone();
    l.sig = None;
    value_of(&diff_text(&l, d))
}

fn full_value(cp: &Checkpoint, l: &LogInfo) -> Value {
    let mut l = l.clone();
    l.sig = None;
    let mut v = value_of(&full_text(cp, &l));
    if let Value::Object(m) = &mut v {
        m.remove("signature");
    }
    v
}

fn head_value(h: &Head) -> Value {
    let mut h = h.clone();
    h.sig = None;
    value_of(&crate::json::to_string(&h).unwrap_or_default())
}

/// The text of a full record: `{"log": …, …checkpoint}` (the checkpoint's own members after `log`).
fn full_text(cp: &Checkpoint, l: &LogInfo) -> String {
    let log = crate::json::to_string(l).unwrap_or_default();
    let checkpoint = cp.to_json();
    format!("{{\"log\":{log},{}", checkpoint.get(1..).unwrap_or_default())
}

fn diff_text(l: &LogInfo, d: &Diff) -> String {
    #[derive(Serialize)]
    struct R<'a> {
        log: &'a LogInfo,
        d: &'a Diff,
    }
    crate::json::to_string(&R { log: l, d }).unwrap_or_default()
}

/// Numbers a session's events and keeps the step-level ones for the next record.
#[derive(Debug, Default)]
pub(crate) struct Numbering {
    /// The record whose block the next events take.
    block: u64,
    next: u64,
    pending: Vec<Value>,
}

impl Numbering {
    fn at(block: u64, next: u64) -> Self {
        Numbering {
            block,
            next,
            pending: Vec::new(),
        }
    }

    /// The number of `event`, keeping it for the next record when it is logged.
    pub(crate) fn observe(&mut self, event: &Event<'_>) -> u64 {
        let base = self.block.saturating_mul(EVENT_BLOCK);
        match event {
            Event::CheckpointSaved { .. } => base + log::SAVED_AT,
            Event::Interrupt { .. } => base + log::INTERRUPT_AT,
            Event::CheckpointLoaded { .. } => base + log::LOADED_AT,
            Event::Done { .. } | Event::Error { .. } => base + log::END_AT,
            _ => {
                let offset = self.next;
                self.next += 1;
                if let Some(e) = log::entry(offset, event) {
                    self.pending.push(e);
                }
                base + offset
            }
        }
    }
}

/// Writes a session's records: one per saved step, each the next position after the last.
pub(crate) struct Writer<'a> {
    log: &'a Log<'a>,
    /// The last record (0: none) and what the next diff is relative to.
    pub(crate) tip: u64,
    base: Base,
    chain: Chain,
    /// The chain's bytes at which the state's size is measured again (a snapshot is due when the chain
    /// holds more than twice the state).
    snapshot_check: usize,
    /// The position a first write builds on (its parent must still be there after the write).
    pub(crate) loaded: u64,
    head: HeadSeen,
    pub(crate) numbering: Numbering,
    /// Records written by this call.
    pub(crate) written: u32,
    /// What the session waited for when loaded, to name in a busy error.
    question: Option<String>,
    /// The summary of the last record written (for the head).
    last_summary: Option<CheckpointSummary>,
    /// The state as of the last record, when the store keeps whole checkpoints (its head is one).
    last_whole: Option<Checkpoint>,
    /// The run's id, for the head's summary.
    run_id: Option<String>,
    /// With a bound on the history: a whole checkpoint at least this often, so old records can go.
    pub(crate) max_chain: Option<usize>,
    /// Positions of whole checkpoints known on the chain: the loaded chain's start and what this call wrote.
    pub(crate) wholes: Vec<u64>,
}

/// What a record carries besides the step.
#[derive(Default)]
pub(crate) struct Extra {
    pub(crate) err: Option<Value>,
    pub(crate) end: bool,
    /// Write a whole checkpoint, not a diff.
    pub(crate) whole: bool,
    /// Continue from this record instead of the last (a restore).
    pub(crate) parent: Option<u64>,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(log: &'a Log<'a>, loaded: &Loaded) -> Self {
        let base = loaded.state.as_ref().map(Base::of).unwrap_or_default();
        Writer {
            log,
            tip: loaded.tip,
            base,
            chain: loaded.chain.clone(),
            snapshot_check: SNAPSHOT_MIN_BYTES.max(loaded.bytes.saturating_mul(2)),
            loaded: loaded.tip,
            head: loaded.head.clone(),
            numbering: Numbering::at(loaded.tip, log::LOADED_AT + 1),
            written: 0,
            question: loaded.state.as_ref().and_then(|s| s.question.clone()),
            last_summary: None,
            last_whole: None,
            run_id: loaded.state.as_ref().and_then(|s| s.run_id.clone()),
            max_chain: None,
            wholes: vec![
                loaded
                    .tip
                    .saturating_sub(u64::try_from(loaded.chain.len).unwrap_or(u64::MAX)),
            ],
        }
    }

    fn busy(&self) -> AgentError {
        AgentError::SessionBusy {
            id: self.log.id.to_owned(),
            question: self
                .question
                .clone()
                .unwrap_or_else(|| "another call is running this session".to_owned()),
        }
    }

    /// True when this record should hold the whole checkpoint.
    fn whole_due(&mut self, cp: &Checkpoint) -> bool {
        if self.chain.len >= SNAPSHOT_MAX_RECORDS || self.max_chain.is_some_and(|m| self.chain.len + 1 >= m.max(1)) {
            return self.fits_whole(cp);
        }
        if self.chain.bytes < self.snapshot_check {
            return false;
        }
        let size = crate::json::len(cp);
        self.snapshot_check = self.chain.bytes + size / 2;
        // A store whose values are smaller than the run (a Durable Object's 2 MB) keeps it as records: a whole
        // one would not fit.
        if self
            .log
            .saver
            .max_value_bytes_dyn()
            .is_some_and(|max| self.stored_whole(size) > max)
        {
            return false;
        }
        self.chain.bytes > size.saturating_mul(2)
    }

    /// True unless the store's values are too small for `cp` whole.
    fn fits_whole(&self, cp: &Checkpoint) -> bool {
        match self.log.saver.max_value_bytes_dyn() {
            Some(max) => self.stored_whole(crate::json::len(cp)) <= max,
            None => true,
        }
    }

    /// About how many bytes a whole record of a checkpoint of `size` bytes takes in the store (sealed:
    /// base64 of the ciphertext).
    fn stored_whole(&self, size: usize) -> usize {
        let size = if self.log.codec.sealed() {
            size / 3 * 4 + 64
        } else {
            size
        };
        size.saturating_add(WHOLE_RECORD_FRAME)
    }

    /// Writes `cp` as the next record. `saved`: how the messages changed since the last record (`None`:
    /// unknown — the record holds the whole checkpoint). `claim`: the call's first write, which must find its
    /// position free and its parent still there. Returns the record's position.
    pub(crate) async fn write(
        &mut self,
        cp: &mut Checkpoint,
        saved: Option<Saved>,
        claim: bool,
        extra: Extra,
    ) -> Result<u64, AgentError> {
        let id = self.log.id;
        let codec = self.log.codec;
        let saver = self.log.saver;
        let seq = self.tip.saturating_add(1);
        let parent = extra.parent.unwrap_or(self.tip);
        cp.thread = Some(ThreadInfo {
            id: id.to_owned(),
            step: seq,
            parent_step: (parent > 0).then_some(parent),
            label: None,
        });
        cp.signature = None;
        // Whole: the first record of a chain, a restore (its parent is not the last record), a store of
        // checkpoints, a change the run could not describe, or a snapshot that is due.
        let whole = extra.whole
            || !saver.stores_records_dyn()
            || parent == 0
            || extra.parent.is_some()
            || (saved.is_none() && !extra.end);
        let whole = whole || (!extra.end && self.whole_due(cp));
        let mut info = LogInfo {
            seq,
            parent: (parent != seq - 1).then_some(parent),
            ev: std::mem::take(&mut self.numbering.pending),
            err: extra.err,
            end: extra.end,
            at: extra.end.then(crate::platform::now_ms),
            ..LogInfo::default()
        };
        let (d, next_base) = match (whole, saved) {
            (true, _) => (None, None),
            (false, Some(saved)) if !info.end => {
                let (d, next) = log::diff(&self.base, cp, saved);
                (Some(d), Some(next))
            }
            (false, _) => (Some(Diff::default()), None),
        };
        let key = self.log.key(seq);
        let text = self.record_text(cp, d.as_ref(), &mut info, parent, &key).await?;
        let bytes = text.len();
        let mut summary = log::summary(cp, seq, parent);
        if codec.sealed() {
            summary.question = None;
        }
        let condition = if claim || saver.compare_and_set_dyn() {
            Condition::Absent
        } else {
            Condition::Any
        };
        match saver.put_text_dyn(&key, text, &summary, condition).await {
            Ok(()) => {}
            Err(SaverError::Conflict { .. }) => return Err(self.busy()),
            Err(e) => {
                // The events stay numbered; they go with the next record that is written.
                self.numbering.pending = std::mem::take(&mut info.ev);
                return Err(saver_error(e, Some(cp)));
            }
        }
        if claim {
            self.back_out_if_ended(&key).await?;
        }
        self.wrote(cp, seq, bytes, d.is_some(), next_base, info.sig.map(|s| s.mac));
        self.last_summary = Some(summary);
        Ok(seq)
    }

    /// The text of record `info.seq` at `key`: its diff `d` (signed when the agent has keys), or `cp` whole;
    /// sealed when the agent seals.
    async fn record_text(
        &mut self,
        cp: &Checkpoint,
        d: Option<&Diff>,
        info: &mut LogInfo,
        parent: u64,
        key: &str,
    ) -> Result<String, AgentError> {
        let (id, codec, seq) = (self.log.id, self.log.codec, info.seq);
        let Some(d) = d else {
            return self.log.whole_text(cp, info, seq, key).await;
        };
        if let Some(keys) = codec.keys {
            let (s, p) = (seq.to_string(), parent.to_string());
            let parent_mac = self.chain.mac.clone().unwrap_or_default();
            let sig = keys
                .sign_value(codec.agent, &[id, &s, &p, &parent_mac], &diff_value(info, d))
                .await;
            info.sig = Some(sig.map_err(|e| saver_error(corrupt_source(key, e), Some(cp)))?);
        }
        codec
            .seal_text(diff_text(info, d), &bound(id, seq))
            .await
            .map_err(|e| saver_error(corrupt_source(key, e), Some(cp)))
    }

    /// Notes record `seq` (`bytes` long, a diff or whole) as written: the tip, the base the next diff is taken
    /// against, the chain since the last whole record and its MAC.
    fn wrote(
        &mut self,
        cp: &Checkpoint,
        seq: u64,
        bytes: usize,
        diff: bool,
        next_base: Option<Base>,
        mac: Option<String>,
    ) {
        self.tip = seq;
        self.base = next_base.unwrap_or_else(|| Base::of(cp));
        if diff {
            self.chain.len += 1;
            self.chain.bytes += bytes;
        } else {
            self.chain = Chain::default();
            self.chain.bytes = bytes;
            self.snapshot_check = SNAPSHOT_MIN_BYTES.max(bytes.saturating_mul(2));
            self.wholes.push(seq);
        }
        self.chain.mac = mac;
        self.numbering = Numbering::at(seq, 1);
        self.written += 1;
        self.run_id.clone_from(&cp.run_id);
        if !self.log.saver.stores_records_dyn() {
            self.last_whole = Some(cp.clone());
        }
    }

    /// After a call's first write (its claim, at `key`): when the session ended while this call loaded it —
    /// another call answered it and it completed, or it was deleted — what was loaded is gone: the record is
    /// taken back. To the caller it is the race it lost (as when the other call still runs), not a session
    /// that never was.
    async fn back_out_if_ended(&self, key: &str) -> Result<(), AgentError> {
        if self.loaded == 0 || self.parent_still_there().await? {
            return Ok(());
        }
        let _ = self.log.saver.delete_dyn(key).await;
        Err(AgentError::SessionBusy {
            id: self.log.id.to_owned(),
            question: "another call ended this session while this one loaded it (it answered it and the run completed, or deleted it)"
                .to_owned(),
        })
    }

    /// After a first write: the record it continues from is still stored (a deletion removes records
    /// oldest first, so a freed position means its parent went before it).
    async fn parent_still_there(&self) -> Result<bool, AgentError> {
        let saver = self.log.saver;
        if let Some(t) = saver
            .get_text_dyn(&self.log.key(self.loaded))
            .await
            .map_err(|e| saver_error(e, None))?
        {
            return Ok(!t.is_empty());
        }
        // An earlier release's session: its last step lives in the head.
        if self.head.whole.is_some() && self.head.seq == self.loaded {
            return Ok(saver
                .get_text_dyn(self.log.id)
                .await
                .map_err(|e| saver_error(e, None))?
                .is_some());
        }
        Ok(false)
    }

    /// Describes the loaded tip as the last record, for a head written without a new record (a label).
    pub(crate) fn describe_tip(&mut self, loaded: &Loaded) {
        if let Some(state) = &loaded.state {
            let parent = state.thread.as_ref().and_then(|t| t.parent_step).unwrap_or(0);
            let mut summary = log::summary(state, loaded.tip, parent);
            self.run_id.clone_from(&state.run_id);
            if self.log.codec.sealed() {
                summary.question = None;
            }
            self.last_summary = Some(summary);
            if !self.log.saver.stores_records_dyn() {
                self.last_whole = Some(state.clone());
            }
        }
    }

    /// Writes the head naming the last record, unless the store's write interval forbids it yet (Workers
    /// KV: a load then probes past the older head). `labels` replaces the head's labels when given.
    pub(crate) async fn write_head(&mut self, labels: Option<Labels>) -> Result<bool, AgentError> {
        let log = self.log;
        let now = crate::platform::now_ms();
        let interval = log.saver.min_write_interval_ms_dyn();
        if interval > 0 && self.head.present && now < self.head.at.saturating_add(interval + INTERVAL_MARGIN_MS) {
            return Ok(false);
        }
        let labels = labels.unwrap_or_else(|| self.head.labels.clone());
        let mut summary = match self.last_summary.clone() {
            Some(s) => s,
            None => return Ok(false),
        };
        summary.label = label_of(&labels, self.tip);
        summary.run_id.clone_from(&self.run_id);
        let text = match self.last_whole.as_mut() {
            Some(cp) => {
                let mut info = LogInfo {
                    seq: self.tip,
                    parent: cp
                        .thread
                        .as_ref()
                        .and_then(|t| t.parent_step)
                        .filter(|p| *p != self.tip - 1),
                    labels: Some(labels.clone()),
                    at: Some(now),
                    ..LogInfo::default()
                };
                log.whole_text(cp, &mut info, 0, log.id).await?
            }
            None => {
                let mut head = Head {
                    session: 1,
                    seq: self.tip,
                    at: now,
                    labels: labels.clone(),
                    sig: None,
                };
                if let Some(keys) = log.codec.keys {
                    head.sig = Some(
                        keys.sign_value(log.codec.agent, &[log.id, "head"], &head_value(&head))
                            .await
                            .map_err(|e| saver_error(corrupt_source(log.id, e), None))?,
                    );
                }
                crate::json::to_string(&head).unwrap_or_default()
            }
        };
        log.saver
            .put_text_dyn(log.id, text, &summary, Condition::Any)
            .await
            .map_err(|e| saver_error(e, None))?;
        self.head.present = true;
        self.head.seq = self.tip;
        self.head.at = now;
        self.head.labels = labels;
        Ok(true)
    }

    /// Reports a record written: `checkpoint-saved` with its number.
    pub(crate) fn saved_event(&mut self, message_count: usize, events: &mut dyn EventSink) {
        let event = Event::CheckpointSaved {
            key: self.log.id,
            message_count,
        };
        let seq = self.numbering.observe(&event);
        events.sequenced(Some(seq), &event);
    }
}

fn corrupt_source(key: &str, source: CheckpointError) -> SaverError {
    SaverError::Corrupt {
        key: key.to_owned(),
        source,
    }
}

/// Removes a session: an end record first (a call that loaded the session before cannot continue it any
/// more), then its head, then its records oldest first, the end record last. On a store with a write
/// interval, keys written too recently are returned instead of deleted (they go on the next touch).
pub(crate) async fn delete_session(
    log: &Log<'_>,
    loaded: &Loaded,
    writer: Option<(&mut Writer<'_>, &mut Checkpoint)>,
) -> Result<Vec<String>, AgentError> {
    let saver = log.saver;
    let interval = saver.min_write_interval_ms_dyn();
    let now = crate::platform::now_ms();
    let mut young = Vec::new();
    // The end record.
    let mut end = None;
    if let Some((w, cp)) = writer {
        let extra = Extra {
            end: true,
            ..Extra::default()
        };
        end = Some(w.write(cp, None, false, extra).await?);
    }
    let records = log.records().await?;
    // A position the listing does not show was written at the latest when the session last was.
    let last_write = if end.is_some() {
        now
    } else {
        loaded.ended_at.max(loaded.head.at)
    };
    let recent = |at: Option<u64>| interval > 0 && now < at.unwrap_or(last_write) + interval + INTERVAL_MARGIN_MS;
    let mut keys: Vec<(u64, String, Option<u64>)> = records
        .into_iter()
        .filter_map(|e| Some((position_of(log.id, &e.key)?, e.key, e.summary.updated_at)))
        .collect();
    // Positions the listing may not show yet (eventual stores): those of the loaded chain and this call.
    let top = end.unwrap_or(loaded.tip);
    for seq in top.saturating_sub(63).max(1)..=top {
        if !keys.iter().any(|(s, _, _)| *s == seq) {
            keys.push((seq, log.key(seq), None));
        }
    }
    keys.sort_by_key(|(s, _, _)| *s);
    // Oldest first, the end record last, the head after it: a call that loaded the session before and
    // claims a freed position finds its parent gone; a load in between finds the end record.
    let (last, rest): (Vec<_>, Vec<_>) = keys.into_iter().partition(|(s, _, _)| Some(*s) == end);
    for (_, key, at) in rest.into_iter().chain(last) {
        if recent(at) {
            young.push(key);
        } else {
            saver.delete_dyn(&key).await.map_err(|e| saver_error(e, None))?;
        }
    }
    if loaded.head.present || end.is_some() {
        if young.is_empty() && !recent(Some(loaded.head.at)) {
            saver.delete_dyn(log.id).await.map_err(|e| saver_error(e, None))?;
        } else {
            young.push(log.id.to_owned());
        }
    }
    Ok(young)
}

/// Keeps about `max` records: those before the newest whole checkpoint that the last `max` records still
/// need go, but labelled ones, which are rewritten whole first when their chain goes.
pub(crate) async fn prune(log: &Log<'_>, writer: &Writer<'_>, labels: &Labels, max: usize) -> Result<(), AgentError> {
    let records = log.records().await?;
    if records.len() <= max.saturating_add(max / 2).max(4) {
        return Ok(());
    }
    let oldest_kept = writer.tip.saturating_sub(u64::try_from(max).unwrap_or(u64::MAX)) + 1;
    let Some(keep_from) = writer
        .wholes
        .iter()
        .copied()
        .filter(|w| *w > 0 && *w <= oldest_kept)
        .max()
    else {
        return Ok(());
    };
    let labelled =
        |seq: u64, e: &SavedCheckpoint| labels.values().any(|l| l.as_u64() == Some(seq)) || e.summary.label.is_some();
    for e in &records {
        let Some(seq) = position_of(log.id, &e.key) else {
            continue;
        };
        if seq >= keep_from || !labelled(seq, e) {
            continue;
        }
        // A labelled step stays readable without the records before it.
        let head = HeadSeen::default();
        if let Some(mut cp) = log.state_at(seq, &head).await? {
            let mut info = LogInfo {
                seq,
                parent: cp.thread.as_ref().and_then(|t| t.parent_step).filter(|p| *p != seq - 1),
                ..LogInfo::default()
            };
            cp.signature = None;
            let text = log.whole_text(&cp, &mut info, seq, &e.key).await?;
            log.saver
                .put_text_dyn(&e.key, text, &e.summary, Condition::Any)
                .await
                .map_err(|err| saver_error(err, None))?;
        }
    }
    for e in records {
        let Some(seq) = position_of(log.id, &e.key) else {
            continue;
        };
        if seq < keep_from && !labelled(seq, &e) {
            log.saver
                .delete_dyn(&e.key)
                .await
                .map_err(|err| saver_error(err, None))?;
        }
    }
    Ok(())
}
