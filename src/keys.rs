//! Signed and sealed checkpoints.
//!
//! An agent with [`CheckpointKeys`] signs every checkpoint it returns or saves: `signature: { kid, mac }`,
//! an HMAC-SHA256 under the current key over a canonical encoding of everything else in the checkpoint
//! (objects with sorted keys, numbers as the doubles JS would read, the key id included). It resumes only
//! checkpoints whose signature verifies under one of its keys, so keeping old key ids lets checkpoints
//! signed before a rotation resume. Because the MAC covers the decoded checkpoint rather than its text,
//! `JSON.parse(JSON.stringify(c))`, a store that reorders keys or re-spells numbers, keep it valid; and
//! whatever verifies decodes to exactly the checkpoint that was signed.
//!
//! With [`CheckpointKeys::sealed`], what leaves the agent as text (sessions' saves, the JS package's
//! results) is also encrypted: AES-256-GCM under a key derived from the current secret, in a plain-JSON
//! envelope `{ "version": 2, "kid": …, "sealed": "<base64url nonce ‖ ciphertext>" }`.

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::checkpoint::CheckpointError;
pub use crate::checkpoint::Signature;
use crate::checkpoint::{CHECKPOINT_VERSION, Checkpoint};
use crate::crypto;
use crate::limits::Limits;

/// The shortest secret accepted, in bytes.
pub const MIN_SECRET_BYTES: usize = 16;

const MAC_CONTEXT: &[u8] = b"resumable-agent/checkpoint-mac/v2\0";
/// The MAC of a checkpoint bound to its agent (`signature.agent`).
const BOUND_MAC_CONTEXT: &[u8] = b"resumable-agent/checkpoint-mac/v3\0";
/// The MAC of a session log record or head.
const LOG_MAC_CONTEXT: &[u8] = b"resumable-agent/session-log-mac/v1\0";
const SEAL_KEY_CONTEXT: &[u8] = b"resumable-agent/seal-key/v2";
const SEAL_AAD_CONTEXT: &[u8] = b"resumable-agent/sealed/v2\0";

/// The keys an agent signs (and optionally seals) its checkpoints with: the current key id and every
/// key id still accepted. Secrets never appear in `Debug` output or errors.
///
/// ```
/// use resumable_agent::CheckpointKeys;
/// let keys = CheckpointKeys::new("k2")
///     .key("k1", "an older secret, kept to verify")
///     .key("k2", "the secret new checkpoints use!");
/// assert_eq!(format!("{keys:?}"), r#"CheckpointKeys { current: "k2", kids: ["k1", "k2"], sealed: false, agent: None }"#);
/// ```
#[derive(Clone)]
pub struct CheckpointKeys {
    current: String,
    keys: Vec<(String, Vec<u8>)>,
    sealed: bool,
    agent: Option<String>,
}

impl fmt::Debug for CheckpointKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CheckpointKeys")
            .field("current", &self.current)
            .field("kids", &self.keys.iter().map(|(k, _)| k).collect::<Vec<_>>())
            .field("sealed", &self.sealed)
            .field("agent", &self.agent)
            .finish()
    }
}

/// The plain-JSON form of a sealed checkpoint.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Envelope {
    version: u64,
    kid: String,
    sealed: String,
}

impl CheckpointKeys {
    /// Keys whose id `current` signs new checkpoints (add it with [`CheckpointKeys::key`]).
    pub fn new(current: impl Into<String>) -> Self {
        CheckpointKeys {
            current: current.into(),
            keys: Vec::new(),
            sealed: false,
            agent: None,
        }
    }

    /// Binds what these keys sign to the agent named `name` instead of its fingerprint: checkpoints then
    /// survive a change of the agent's instructions, tools or approval rules (a deploy), and resume in any
    /// agent with the same keys and name. Without a name, a checkpoint resumes only in an agent with the same
    /// instructions, tool names, schemas and approval rules.
    pub fn agent(mut self, name: impl Into<String>) -> Self {
        self.agent = Some(name.into());
        self
    }

    /// The name given with [`CheckpointKeys::agent`].
    pub fn agent_name(&self) -> Option<&str> {
        self.agent.as_deref()
    }

    /// Adds the secret of key id `kid` (at least [`MIN_SECRET_BYTES`] bytes; random bytes or a long
    /// passphrase).
    pub fn key(mut self, kid: impl Into<String>, secret: impl AsRef<[u8]>) -> Self {
        self.keys.push((kid.into(), secret.as_ref().to_vec()));
        self
    }

    /// Also encrypts checkpoints that leave as text (see the [module docs](self)).
    pub fn sealed(mut self, sealed: bool) -> Self {
        self.sealed = sealed;
        self
    }

    /// True when checkpoints are sealed.
    pub fn is_sealed(&self) -> bool {
        self.sealed
    }

    /// The id of the key new checkpoints are signed with.
    pub fn current(&self) -> &str {
        &self.current
    }

    /// Checks the keys: the current id has a secret, ids are unique and non-empty, secrets long enough.
    ///
    /// # Errors
    /// What is wrong, naming the key id (never the secret).
    pub fn check(&self) -> Result<(), String> {
        for (i, (kid, secret)) in self.keys.iter().enumerate() {
            if kid.is_empty() || kid.len() > 64 {
                return Err(format!("checkpointKeys.keys: key id {kid:?} must be 1 to 64 bytes"));
            }
            if self.keys.iter().take(i).any(|(k, _)| k == kid) {
                return Err(format!("checkpointKeys.keys: key id {kid:?} is given twice"));
            }
            if secret.len() < MIN_SECRET_BYTES {
                return Err(format!(
                    "checkpointKeys.keys.{kid}: the secret is {} bytes; use at least {MIN_SECRET_BYTES} (random bytes or a long passphrase)",
                    secret.len()
                ));
            }
        }
        if self.agent.as_ref().is_some_and(|a| a.is_empty() || a.len() > 128) {
            return Err("checkpointKeys.agent: the name must be 1 to 128 bytes".into());
        }
        if self.secret(&self.current).is_none() {
            return Err(format!(
                "checkpointKeys.current: {:?} is not one of the key ids ({})",
                self.current,
                self.kids()
            ));
        }
        Ok(())
    }

    fn secret(&self, kid: &str) -> Option<&[u8]> {
        self.keys.iter().find(|(k, _)| k == kid).map(|(_, s)| s.as_slice())
    }

    fn kids(&self) -> String {
        let kids: Vec<String> = self.keys.iter().map(|(k, _)| format!("{k:?}")).collect();
        kids.join(", ")
    }

    /// Signs `checkpoint` with the current key (replacing any signature it had), bound to no agent (an
    /// agent's own checkpoints are bound to it: [`CheckpointKeys::sign_for`]).
    ///
    /// # Errors
    /// [`CheckpointError::Signature`] when the host's crypto fails (on wasm32: no Web Crypto).
    pub async fn sign(&self, checkpoint: &mut Checkpoint) -> Result<(), CheckpointError> {
        self.sign_for(checkpoint, None).await
    }

    /// Checks `checkpoint`'s signature (constant-time), whatever agent it is bound to.
    ///
    /// # Errors
    /// [`CheckpointError::Signature`]: no signature, an unknown key id, or a MAC that does not match.
    pub async fn verify(&self, checkpoint: &Checkpoint) -> Result<(), CheckpointError> {
        self.verify_for(checkpoint, None).await
    }

    /// Signs `checkpoint` with the current key (replacing any signature it had), bound to `agent` when given
    /// (see [`Signature::agent`]).
    ///
    /// # Errors
    /// [`CheckpointError::Signature`] when the host's crypto fails (on wasm32: no Web Crypto).
    pub async fn sign_for(&self, checkpoint: &mut Checkpoint, agent: Option<&str>) -> Result<(), CheckpointError> {
        checkpoint.signature = None;
        let secret = self
            .secret(&self.current)
            .ok_or_else(|| signature(format!("no secret for key id {:?}", self.current)))?;
        let tag = crypto::hmac(secret, &mac_input(&self.current, agent, checkpoint))
            .await
            .map_err(|e| signature(format!("signing failed: {e}")))?;
        checkpoint.signature = Some(Signature {
            kid: self.current.clone(),
            agent: agent.map(str::to_owned),
            mac: B64.encode(tag),
        });
        Ok(())
    }

    /// Checks `checkpoint`'s signature (constant-time), and that it is bound to `agent` (a checkpoint
    /// signed before bindings existed carries none and is accepted).
    ///
    /// # Errors
    /// [`CheckpointError::Signature`]: no signature, an unknown key id, or a MAC that does not match;
    /// [`CheckpointError::Binding`]: signed for another agent.
    pub async fn verify_for(&self, checkpoint: &Checkpoint, agent: Option<&str>) -> Result<(), CheckpointError> {
        let Some(sig) = &checkpoint.signature else {
            return Err(signature(
                "missing: this agent signs its checkpoints (checkpointKeys), so it resumes only signed ones".into(),
            ));
        };
        self.check_mac(sig, &mac_input(&sig.kid, sig.agent.as_deref(), checkpoint))
            .await?;
        check_agent(sig.agent.as_deref(), agent)
    }

    /// Checks the signature of a checkpoint's parsed JSON `value` (its `signature` member over everything
    /// else in it, as it is), and that it is bound to `agent`: before anything reads it as a checkpoint.
    pub(crate) async fn verify_parsed(&self, value: &mut Value, agent: Option<&str>) -> Result<(), CheckpointError> {
        let Value::Object(map) = value else {
            return Err(signature("not a checkpoint: a JSON object was expected".into()));
        };
        let Some(given) = map.remove("signature") else {
            return Err(signature(
                "missing: this agent signs its checkpoints (checkpointKeys), so it resumes only signed ones".into(),
            ));
        };
        // Through its text: no decoder of parsed values for it in the .wasm.
        let sig =
            serde_json::from_str::<Signature>(&given.to_string()).map_err(|e| signature(format!("malformed: {e}")));
        let checked = match &sig {
            Ok(sig) => {
                self.check_mac(sig, &mac_input_value(&sig.kid, sig.agent.as_deref(), value))
                    .await
            }
            Err(e) => Err(e.clone()),
        };
        if let Value::Object(map) = value {
            map.insert("signature".into(), given);
        }
        checked?;
        check_agent(sig?.agent.as_deref(), agent)
    }

    /// Checks `sig`'s MAC over `input` (constant-time).
    async fn check_mac(&self, sig: &Signature, input: &[u8]) -> Result<(), CheckpointError> {
        let (secret, tag) = self.secret_and_tag(sig)?;
        let ok = crypto::hmac_verify(secret, input, &tag)
            .await
            .map_err(|e| signature(format!("verifying failed: {e}")))?;
        if ok {
            Ok(())
        } else {
            Err(signature(
                "does not match: the checkpoint was changed after it was signed, or signed with another secret".into(),
            ))
        }
    }

    fn secret_and_tag(&self, sig: &Signature) -> Result<(&[u8], Vec<u8>), CheckpointError> {
        let Some(secret) = self.secret(&sig.kid) else {
            return Err(signature(format!(
                "unknown key id {:?} (this agent knows {})",
                sig.kid,
                self.kids()
            )));
        };
        let tag = B64
            .decode(&sig.mac)
            .map_err(|_| signature("mac: not base64url (without padding)".into()))?;
        Ok((secret, tag))
    }

    /// The MAC of a session's log record or head: over `what` (the session id, the position, the parent's MAC,
    /// … — each part delimited) and the value's canonical JSON, bound to `agent`.
    pub(crate) async fn sign_value(
        &self,
        agent: Option<&str>,
        what: &[&str],
        value: &Value,
    ) -> Result<Signature, CheckpointError> {
        let secret = self
            .secret(&self.current)
            .ok_or_else(|| signature(format!("no secret for key id {:?}", self.current)))?;
        let tag = crypto::hmac(secret, &value_mac_input(&self.current, agent, what, value))
            .await
            .map_err(|e| signature(format!("signing failed: {e}")))?;
        Ok(Signature {
            kid: self.current.clone(),
            agent: agent.map(str::to_owned),
            mac: B64.encode(tag),
        })
    }

    /// Checks a MAC made by [`CheckpointKeys::sign_value`] over the same parts.
    ///
    /// # Errors
    /// [`CheckpointError::Signature`] (naming `place`) or [`CheckpointError::Binding`].
    pub(crate) async fn verify_value(
        &self,
        sig: Option<&Signature>,
        agent: Option<&str>,
        what: &[&str],
        value: &Value,
        place: &str,
    ) -> Result<(), CheckpointError> {
        let Some(sig) = sig else {
            return Err(signature(format!(
                "{place}: missing (this agent signs its sessions, so it reads only signed records)"
            )));
        };
        let (secret, tag) = self.secret_and_tag(sig)?;
        let ok = crypto::hmac_verify(
            secret,
            &value_mac_input(&sig.kid, sig.agent.as_deref(), what, value),
            &tag,
        )
        .await
        .map_err(|e| signature(format!("verifying failed: {e}")))?;
        if !ok {
            return Err(signature(format!(
                "{place}: does not match: it was changed, moved from another session or position, or signed with another secret"
            )));
        }
        check_agent(sig.agent.as_deref(), agent)
    }

    /// Encrypts checkpoint JSON `text` into an envelope, as JSON text; `bound` (a session record's place)
    /// joins the authenticated data, so the envelope opens only there.
    pub(crate) async fn seal(&self, text: &str, bound: &[u8]) -> Result<String, CheckpointError> {
        let kid = &self.current;
        let key = self.seal_key(kid).await?;
        let blob = crypto::seal(&key, &[aad(kid).as_slice(), bound].concat(), text.as_bytes())
            .await
            .map_err(|e| signature(format!("sealing failed: {e}")))?;
        let envelope = Envelope {
            version: u64::from(CHECKPOINT_VERSION),
            kid: kid.clone(),
            sealed: B64.encode(blob),
        };
        crate::json::to_string(&envelope).map_err(|e| signature(e.to_string()))
    }

    /// The checkpoint JSON inside an envelope sealed with `bound` (see [`CheckpointKeys::seal`]).
    pub(crate) async fn open(&self, envelope: &Envelope, bound: &[u8]) -> Result<String, CheckpointError> {
        if envelope.version != u64::from(CHECKPOINT_VERSION) {
            return Err(CheckpointError::UnsupportedVersion {
                found: envelope.version,
                supported: CHECKPOINT_VERSION,
            });
        }
        if self.secret(&envelope.kid).is_none() {
            return Err(signature(format!(
                "sealed with unknown key id {:?} (this agent knows {})",
                envelope.kid,
                self.kids()
            )));
        }
        let blob = B64
            .decode(&envelope.sealed)
            .map_err(|_| signature("sealed: not base64url (without padding)".into()))?;
        let key = self.seal_key(&envelope.kid).await?;
        let opened = crypto::open(&key, &[aad(&envelope.kid).as_slice(), bound].concat(), &blob)
            .await
            .map_err(|e| signature(format!("opening failed: {e}")))?
            .ok_or_else(|| {
                signature("sealed: does not decrypt: it was changed, or sealed with another secret".into())
            })?;
        String::from_utf8(opened).map_err(|_| signature("sealed: the content is not UTF-8".into()))
    }

    async fn seal_key(&self, kid: &str) -> Result<Vec<u8>, CheckpointError> {
        let secret = self
            .secret(kid)
            .ok_or_else(|| signature(format!("no secret for key id {kid:?}")))?;
        crypto::hmac(secret, SEAL_KEY_CONTEXT)
            .await
            .map_err(|e| signature(format!("deriving the sealing key failed: {e}")))
    }
}

fn signature(problem: String) -> CheckpointError {
    CheckpointError::Signature { problem }
}

fn aad(kid: &str) -> Vec<u8> {
    [SEAL_AAD_CONTEXT, kid.as_bytes()].concat()
}

/// A signature bound to `found` (or to nothing: signed before bindings) verified by an agent bound to
/// `expected`.
fn check_agent(found: Option<&str>, expected: Option<&str>) -> Result<(), CheckpointError> {
    match (found, expected) {
        (Some(f), Some(e)) if f != e => Err(CheckpointError::Binding {
            problem: format!(
                "signed for another agent ({f:?}; this agent is {e:?}): an agent resumes only its own checkpoints — one whose instructions, tools or approval rules differ could skip approvals the checkpoint's agent did not need (name both agents with checkpointKeys.agent to carry checkpoints across a deploy)"
            ),
        }),
        _ => Ok(()),
    }
}

/// What the MAC covers: a context string, the key id, the agent bound to, and the canonical encoding of the
/// checkpoint without its signature.
fn mac_input(kid: &str, agent: Option<&str>, checkpoint: &Checkpoint) -> Vec<u8> {
    // Through the JSON text rather than `to_value`: the same result, without a second serializer for every
    // checkpoint type in the .wasm. A checkpoint's own JSON always parses.
    let mut value: Value = serde_json::from_str(&checkpoint.to_json()).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        map.remove("signature");
    }
    mac_input_value(kid, agent, &value)
}

/// [`mac_input`] of a checkpoint's JSON (without its signature).
fn mac_input_value(kid: &str, agent: Option<&str>, value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(4096);
    match agent {
        Some(a) => {
            out.extend_from_slice(BOUND_MAC_CONTEXT);
            out.extend_from_slice(kid.as_bytes());
            out.push(0);
            out.extend_from_slice(a.as_bytes());
            out.push(0);
        }
        None => {
            out.extend_from_slice(MAC_CONTEXT);
            out.extend_from_slice(kid.as_bytes());
            out.push(0);
        }
    }
    write_canonical(value, &mut out);
    out
}

/// What a log record's or head's MAC covers.
fn value_mac_input(kid: &str, agent: Option<&str>, what: &[&str], value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(1024);
    out.extend_from_slice(LOG_MAC_CONTEXT);
    for part in [kid, agent.unwrap_or_default()].iter().chain(what) {
        out.extend_from_slice(part.as_bytes());
        out.push(0);
    }
    write_canonical(value, &mut out);
    out
}

/// A stable fingerprint of what decides a run's approvals: 64-bit FNV-1a of the canonical JSON of `what`,
/// as `fp:` and 16 hex digits. It names an agent, it is not a secret: the MAC that covers it is what an
/// attacker cannot forge.
pub(crate) fn fingerprint(what: &Value) -> String {
    let mut bytes = Vec::new();
    write_canonical(what, &mut bytes);
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("fp:{h:016x}")
}

/// JSON with object keys sorted, no whitespace, strings escaped as serde_json does, and every number
/// written as the double JS reads it (integers below 2^53 without a fraction; `-0` as `0`): the encoding
/// does not change when the checkpoint travels through `JSON.parse`/`JSON.stringify` or a store.
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Number(n) => write_number(n.as_f64().unwrap_or(0.0), out),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(k, out);
                out.push(b':');
                write_canonical(v, out);
            }
            out.push(b'}');
        }
    }
}

fn write_string(s: &str, out: &mut Vec<u8>) {
    // Writing a string into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

fn write_number(f: f64, out: &mut Vec<u8>) {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if f == 0.0 {
        out.push(b'0');
    } else if f.fract() == 0.0 && f.abs() < EXACT {
        #[allow(clippy::cast_possible_truncation)] // |f| < 2^53 and integral: exact
        out.extend_from_slice((f as i64).to_string().as_bytes());
    } else {
        let _ = serde_json::to_writer(&mut *out, &f);
    }
}

/// How an agent's checkpoints enter and leave as text: limits, signature and sealing.
#[derive(Clone, Copy)]
pub(crate) struct Codec<'a> {
    pub(crate) limits: Limits,
    pub(crate) keys: Option<&'a CheckpointKeys>,
    /// The agent signatures are bound to (with keys).
    pub(crate) agent: Option<&'a str>,
}

impl Codec<'_> {
    /// Signs `checkpoint` (or removes a stale signature when there are no keys).
    pub(crate) async fn sign(&self, checkpoint: &mut Checkpoint) -> Result<(), CheckpointError> {
        match self.keys {
            Some(k) => k.sign_for(checkpoint, self.agent).await,
            None => {
                checkpoint.signature = None;
                Ok(())
            }
        }
    }

    /// Checks the signature when there are keys.
    pub(crate) async fn verify(&self, checkpoint: &Checkpoint) -> Result<(), CheckpointError> {
        match self.keys {
            Some(k) => k.verify_for(checkpoint, self.agent).await,
            None => Ok(()),
        }
    }

    /// True when text leaves sealed.
    pub(crate) fn sealed(&self) -> bool {
        self.keys.is_some_and(CheckpointKeys::is_sealed)
    }

    /// Signs `checkpoint` and returns its text: JSON, or a sealed envelope.
    pub(crate) async fn encode(&self, checkpoint: &mut Checkpoint) -> Result<String, CheckpointError> {
        self.sign(checkpoint).await?;
        self.text(checkpoint).await
    }

    /// The text of an already signed checkpoint: JSON, or a sealed envelope.
    pub(crate) async fn text(&self, checkpoint: &Checkpoint) -> Result<String, CheckpointError> {
        let text = checkpoint.to_json();
        match self.keys.filter(|k| k.sealed) {
            Some(k) => k.seal(&text, &[]).await,
            None => Ok(text),
        }
    }

    /// Decodes checkpoint text (JSON or a sealed envelope) under the limits. With keys, what is read was
    /// authenticated first: an envelope is opened (AES-GCM), a signed checkpoint's MAC is checked over its
    /// parsed JSON — every key and value of it, one the format does not know included — and only then is it
    /// read as a checkpoint and validated, once. So any change to a signed checkpoint that still parses is
    /// `SIGNATURE`, never an error of what the change made.
    pub(crate) async fn decode(&self, text: &str) -> Result<Checkpoint, CheckpointError> {
        self.decode_as_written(text).await.map(|(checkpoint, _)| checkpoint)
    }

    /// [`Codec::decode`], and whether its messages are exactly what `text` says
    /// ([`Decoded::messages_as_written`](crate::Decoded::messages_as_written)).
    pub(crate) async fn decode_as_written(&self, text: &str) -> Result<(Checkpoint, bool), CheckpointError> {
        if text.len() > self.limits.max_checkpoint_bytes {
            return Err(CheckpointError::TooLarge {
                bytes: text.len(),
                max: self.limits.max_checkpoint_bytes,
            });
        }
        let Some(keys) = self.keys else {
            return match crate::message::read_as_written(|| read_text(text, &self.limits)) {
                (Text::Plain(checkpoint), as_written) => Ok((checkpoint?, as_written)),
                (Text::Sealed, _) => Err(signature(
                    "a sealed checkpoint, but this agent has no checkpointKeys to open it".into(),
                )),
            };
        };
        let mut value = crate::checkpoint::parse_value(text, &self.limits)?;
        let opened = match envelope_value(&value) {
            Some(envelope) => {
                let opened = keys.open(&envelope, &[]).await?;
                value = crate::checkpoint::parse_value(&opened, &self.limits)?;
                Some(opened)
            }
            None => None,
        };
        keys.verify_parsed(&mut value, self.agent).await?;
        // Read from its text again rather than from the parsed value: the same result, without a second
        // decoder for every checkpoint type in the .wasm (30 KB gzip).
        let (checkpoint, as_written) = crate::message::read_as_written(|| {
            Checkpoint::from_json_with(opened.as_deref().unwrap_or(text), &self.limits)
        });
        // An opened envelope's messages are not the text's.
        Ok((checkpoint?, as_written && opened.is_none()))
    }

    /// `text` sealed with `bound` when the keys seal; as it is otherwise.
    pub(crate) async fn seal_text(&self, text: String, bound: &[u8]) -> Result<String, CheckpointError> {
        match self.keys.filter(|k| k.sealed) {
            Some(k) => k.seal(&text, bound).await,
            None => Ok(text),
        }
    }

    /// What a stored text holds: opened when it is an envelope — sealed with `bound` or, by an earlier
    /// release, without — and as it is otherwise.
    pub(crate) async fn open_text(&self, text: String, bound: &[u8]) -> Result<String, CheckpointError> {
        let Some(envelope) = looks_sealed(&text).then(|| envelope(&text)).flatten() else {
            return Ok(text);
        };
        let keys = self
            .keys
            .ok_or_else(|| signature("a sealed checkpoint, but this agent has no checkpointKeys to open it".into()))?;
        match keys.open(&envelope, bound).await {
            Ok(opened) => Ok(opened),
            Err(e) if bound.is_empty() => Err(e),
            Err(e) => keys.open(&envelope, &[]).await.map_err(|_| e),
        }
    }
}

/// The envelope, when `value` is one (an object with exactly `version`, `kid` and `sealed`).
fn envelope_value(value: &Value) -> Option<Envelope> {
    let o = value.as_object()?;
    (o.len() == 3 && o.contains_key("sealed"))
        .then(|| serde_json::from_str::<Envelope>(&value.to_string()).ok())
        .flatten()
}

/// The envelope, when `text` is one (a small object with exactly `version`, `kid` and `sealed`).
fn envelope(text: &str) -> Option<Envelope> {
    let head = text.trim_start();
    if !head.starts_with('{') || !text.contains("\"sealed\"") {
        return None;
    }
    serde_json::from_str(text).ok()
}

/// How far into an envelope its `"sealed"` key is at most, as this library writes one: after `version`
/// and a key id of at most 64 bytes (escaped, up to 6 bytes each).
const SEALED_KEY_WITHIN: usize = 512;

/// True when `text` starts like an envelope this library wrote: a cheap look at its head, not a search of
/// a whole checkpoint.
pub(crate) fn looks_sealed(text: &str) -> bool {
    let head = text.as_bytes().get(..SEALED_KEY_WITHIN).unwrap_or(text.as_bytes());
    text.trim_start().starts_with('{') && head.windows(8).any(|w| w == b"\"sealed\"")
}

/// What a checkpoint's text is: a sealed envelope, or a plain checkpoint (decoded, or why not).
#[allow(clippy::large_enum_variant)] // made once per read and taken apart at once
pub(crate) enum Text {
    Sealed,
    Plain(Result<Checkpoint, CheckpointError>),
}

/// Reads checkpoint text as an envelope or a plain checkpoint, for decoding and for savers that keep a
/// sealed checkpoint as it is. An envelope as this library writes it says "sealed" near its start; any
/// other spelling of one is found when the text does not decode as a checkpoint. So a plain checkpoint is
/// parsed once and never searched whole.
pub(crate) fn read_text(text: &str, limits: &crate::limits::Limits) -> Text {
    if looks_sealed(text) && envelope(text).is_some() {
        return Text::Sealed;
    }
    match Checkpoint::from_json_with(text, limits) {
        Ok(checkpoint) => Text::Plain(Ok(checkpoint)),
        Err(e) => envelope(text).map_or(Text::Plain(Err(e)), |_| Text::Sealed),
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use serde_json::json;

    fn keys() -> CheckpointKeys {
        CheckpointKeys::new("k2")
            .key("k1", "0123456789abcdef-one")
            .key("k2", "0123456789abcdef-two")
    }

    fn paused() -> Checkpoint {
        Checkpoint::from_value(json!({
            "version": 2, "runId": "r", "iterations": 1, "usage": {"inputTokens": 3, "outputTokens": 4},
            "messages": [
                {"role": "user", "content": "Plan it."},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "ask",
                  "input": {"q": "When?", "n": 1.5e-7, "big": 12345678901234567890u64}}]}
            ],
            "interrupts": [{"kind": "question", "id": "c1", "toolName": "ask",
                "input": {"q": "When?", "n": 1.5e-7, "big": 12345678901234567890u64}, "question": "When?"}],
            "pendingToolUseId": "c1", "question": "When?", "reviewed": true
        }))
        .unwrap_or_else(|e| Checkpoint::new(e.to_string(), 0))
    }

    fn block<T>(f: impl std::future::Future<Output = T>) -> T {
        pollster::block_on(f)
    }

    #[test]
    fn a_bound_signature_verifies_only_for_its_agent() {
        let k = keys();
        let mut cp = paused();
        block(k.sign_for(&mut cp, Some("fp:1"))).unwrap_or_default();
        assert_eq!(block(k.verify_for(&cp, Some("fp:1"))), Ok(()));
        assert_eq!(
            block(k.verify_for(&cp, Some("fp:2"))).map_err(|e| e.code()),
            Err("BINDING")
        );
        // The binding is under the MAC: rewriting it breaks the signature.
        let mut moved = cp.clone();
        if let Some(s) = moved.signature.as_mut() {
            s.agent = Some("fp:2".into());
        }
        assert_eq!(
            block(k.verify_for(&moved, Some("fp:2"))).map_err(|e| e.code()),
            Err("SIGNATURE")
        );
        // Signed before bindings existed: still accepted.
        let mut old = paused();
        block(k.sign(&mut old)).unwrap_or_default();
        assert_eq!(block(k.verify_for(&old, Some("fp:1"))), Ok(()));
        assert_eq!(
            fingerprint(&json!({"a": 1, "b": [2]})),
            fingerprint(&json!({"b": [2.0], "a": 1}))
        );
        assert_ne!(fingerprint(&json!({"a": 1})), fingerprint(&json!({"a": 2})));
    }

    #[test]
    fn canonical_numbers_are_what_js_reads() {
        assert_eq!(
            canonical_json(&json!({"b": 1.0, "a": -0.0, "c": [3, 2.5, 1e21, 12345678901234567890u64]})),
            r#"{"a":0,"b":1,"c":[3,2.5,1e+21,1.2345678901234567e+19]}"#
        );
    }

    #[test]
    fn signed_checkpoints_verify_after_a_text_round_trip_and_not_after_a_change() {
        let k = keys();
        let mut cp = paused();
        block(k.sign(&mut cp)).unwrap_or_default();
        assert_eq!(cp.signature.as_ref().map(|s| s.kid.as_str()), Some("k2"));
        let back = Checkpoint::from_json(&cp.to_json()).unwrap_or_else(|_| Checkpoint::new("x", 0));
        assert_eq!(block(k.verify(&back)), Ok(()));
        // Another store's spelling of the same JSON: keys reordered, numbers as JS writes them.
        let respelled: Value = serde_json::from_str(&cp.to_json()).unwrap_or_default();
        let respelled = canonical_json(&respelled).replace("1.5e-7", "1.5E-7");
        assert!(respelled.contains("1.5E-7") && respelled != cp.to_json(), "{respelled}");
        let back = Checkpoint::from_json(&respelled).unwrap_or_else(|_| Checkpoint::new("x", 0));
        assert_eq!(block(k.verify(&back)), Ok(()));
        // Rotation: a checkpoint signed with k1 still verifies with keys that sign with k2.
        let old = CheckpointKeys::new("k1").key("k1", "0123456789abcdef-one");
        let mut signed_before = paused();
        block(old.sign(&mut signed_before)).unwrap_or_default();
        assert_eq!(block(k.verify(&signed_before)), Ok(()));

        let mut changed = cp.clone();
        changed.iterations = 0;
        assert_eq!(block(k.verify(&changed)).map_err(|e| e.code()), Err("SIGNATURE"));
        let mut swapped = cp.clone();
        if let Some(s) = swapped.signature.as_mut() {
            s.kid = "k1".into();
        }
        assert_eq!(block(k.verify(&swapped)).map_err(|e| e.code()), Err("SIGNATURE"));
        let mut unsigned = cp.clone();
        unsigned.signature = None;
        let err = block(k.verify(&unsigned))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("missing"), "{err}");
        let stranger = CheckpointKeys::new("k9").key("k9", "0123456789abcdef-nine");
        let err = block(stranger.verify(&cp))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("unknown key id \"k2\""), "{err}");
        assert!(!err.contains("0123456789"), "no secret in errors: {err}");
    }

    #[test]
    fn sealed_text_hides_the_checkpoint_and_opens_only_intact() {
        let k = keys().sealed(true);
        let codec = Codec {
            limits: Limits::default(),
            keys: Some(&k),
            agent: None,
        };
        let mut cp = paused();
        let text = block(codec.encode(&mut cp)).unwrap_or_default();
        assert!(text.starts_with(r#"{"version":2,"kid":"k2","sealed":""#), "{text}");
        assert!(!text.contains("When?"));
        assert_eq!(block(codec.decode(&text)).ok(), Some(cp.clone()));
        // One character of the ciphertext changed.
        let at = text.len() - 10;
        let mut bytes = text.clone().into_bytes();
        bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(bytes).unwrap_or_default();
        assert_eq!(block(codec.decode(&tampered)).map_err(|e| e.code()), Err("SIGNATURE"));
        let plain = Codec {
            limits: Limits::default(),
            keys: None,
            agent: None,
        };
        let err = block(plain.decode(&text))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("no checkpointKeys"), "{err}");
        // Another spelling of the envelope (keys reordered, "sealed" far from the start) opens as well;
        // a plain checkpoint that mentions "sealed" early still decodes as itself.
        let v: Value = serde_json::from_str(&text).unwrap_or_default();
        let respelled = format!(
            "{{\"kid\":\"k2\",{}\"version\":2,\"sealed\":{}}}",
            " ".repeat(2 * SEALED_KEY_WITHIN),
            v["sealed"]
        );
        assert!(!looks_sealed(&respelled));
        assert_eq!(block(codec.decode(&respelled)).ok(), Some(cp.clone()));
        let mut mentions = Checkpoint::new("r", 0);
        mentions.messages.push(crate::Message::user("hi"));
        let plain_text = mentions.to_json().replacen('{', r#"{"sealed":"no","#, 1);
        assert!(looks_sealed(&plain_text));
        assert_eq!(block(plain.decode(&plain_text)).ok(), Some(mentions));
    }

    #[test]
    fn keys_are_checked_without_naming_secrets() {
        assert!(keys().check().is_ok());
        let short = CheckpointKeys::new("a").key("a", "short");
        assert!(short.check().err().unwrap_or_default().contains("5 bytes"));
        let missing = CheckpointKeys::new("b").key("a", "0123456789abcdef");
        assert!(
            missing
                .check()
                .err()
                .unwrap_or_default()
                .contains("\"b\" is not one of")
        );
        let twice = CheckpointKeys::new("a")
            .key("a", "0123456789abcdef")
            .key("a", "0123456789abcdef");
        assert!(twice.check().err().unwrap_or_default().contains("twice"));
    }
}
