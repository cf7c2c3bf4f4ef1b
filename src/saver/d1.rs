//! `D1Saver`: checkpoints in Cloudflare D1, for Rust Workers (`worker` crate, feature `d1`).
//!
//! The table and its rules are the npm package's `d1Saver` (pkg-template/sql-savers.js), so a JS Worker and a
//! Rust Worker share one database (tests/workers/savers.test.mjs writes with one and reads with the other):
//!
//! ```text
//! key TEXT, part INTEGER (0: the key's row; 1, 2, …: the rest of a value past D1's 2,000,000-byte row limit),
//! step INTEGER (what compare-and-set compares), parts INTEGER, token TEXT (the write that made the row),
//! summary TEXT, value TEXT, PRIMARY KEY (key, part); an index on (key, summary) WHERE part = 0 for listings.
//! ```
//!
//! Compare-and-set is each write's own condition (`INSERT … ON CONFLICT DO NOTHING` for a record, `UPDATE … WHERE
//! step = n` for a head), and a value's further rows are written in the same `batch()` — D1's transaction — only
//! under the token of the row 0 that batch wrote: a reader gets a value whole or not at all.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Deserialize;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement};

use crate::checkpoint::CheckpointSummary;
use crate::platform::MaybeSend;
use crate::saver::{Condition, SavedCheckpoint, Saver, SaverError};

/// D1 (and Durable Object SQLite) store rows of at most 2,000,000 bytes.
pub const D1_MAX_ROW_BYTES: usize = 2_000_000;
/// What a row takes besides its key, summary and value (integers, the token, the record header), rounded up.
const ROW_OVERHEAD: usize = 128;
/// Keys per `IN (…)` list: D1 binds at most 100 parameters in a statement.
const KEYS_PER_READ: usize = 50;
/// A session's key, not one of its step records (`<id>#~<n>`): in the index of sessions and its query.
const HEAD: &str = "instr(key, '#~') = 0";
/// The rows of sessions' keys: what the index of sessions holds.
const HEAD_ROWS: &str = "part = 0 AND instr(key, '#~') = 0";
/// The table both implementations use unless told otherwise.
pub const D1_DEFAULT_TABLE: &str = "resumable_agent_checkpoints";

/// A [`Saver`] over a D1 database (`env.d1("DB")`): one row per stored key.
///
/// ```no_run
/// # async fn f(env: worker::Env) -> Result<(), Box<dyn std::error::Error>> {
/// use resumable_agent::D1Saver;
/// let saver = D1Saver::new(env.d1("DB")?);
/// let mine = D1Saver::with_table(env.d1("DB")?, "agent_runs")?;
/// # Ok(()) }
/// ```
pub struct D1Saver {
    db: D1Database,
    /// The quoted table name.
    table: String,
    /// The quoted name of its listing index.
    index: String,
    /// The quoted name of its index of sessions (keys without `#~`).
    sessions: String,
    made: AtomicBool,
}

#[derive(Deserialize)]
struct Row {
    #[serde(default)]
    key: Option<String>,
    part: f64,
    #[serde(default)]
    parts: Option<f64>,
    #[serde(default)]
    token: Option<String>,
    value: String,
}

#[derive(Deserialize)]
struct Listed {
    key: String,
    summary: Option<String>,
}

fn backend(op: &str, key: Option<&str>, e: impl std::fmt::Display) -> SaverError {
    let first = e.to_string();
    let first = first.lines().next().unwrap_or_default();
    SaverError::Backend {
        message: match key {
            Some(key) => format!("D1Saver: {op} of key {key:?} failed: {first}"),
            None => format!("D1Saver: {op} failed: {first}"),
        },
    }
}

/// True for a table name the database takes as it is: letters, digits and `_`, not starting with a digit, at
/// most 63, and not a reserved prefix (`_cf_`, `sqlite_`).
fn valid_table(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    let lower = name.to_ascii_lowercase();
    first_ok
        && name.len() <= 63
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !lower.starts_with("_cf_")
        && !lower.starts_with("sqlite_")
}

/// The least string after every string that starts with `prefix` (code point order = UTF-8 byte order).
fn after(prefix: &str) -> Option<String> {
    let mut points: Vec<char> = prefix.chars().collect();
    while points.last() == Some(&char::MAX) {
        points.pop();
    }
    let last = points.pop()? as u32;
    let next = if last == 0xD7FF { 0xE000 } else { last + 1 };
    points.push(char::from_u32(next)?);
    Some(points.into_iter().collect())
}

/// `text` cut into pieces of at most `first` bytes, then `rest` each, never inside a character.
fn pieces(text: &str, first: usize, rest: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut budget = first;
    while at < text.len() || out.is_empty() {
        let mut end = (at + budget).min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        out.push(text.get(at..end).unwrap_or_default());
        at = end;
        budget = rest;
    }
    out
}

/// A value from its rows (`part` ascending), checked whole.
fn assemble(key: &str, rows: &[&Row]) -> Result<Option<String>, SaverError> {
    let Some(head) = rows.first() else { return Ok(None) };
    if head.part != 0.0 {
        return Err(backend("get", Some(key), "it has rows but no head row"));
    }
    let parts = head.parts.unwrap_or(1.0) as usize;
    if parts <= 1 {
        return Ok(Some(head.value.clone()));
    }
    let mine: Vec<&Row> = rows.iter().copied().filter(|r| (r.part as usize) < parts).collect();
    let whole = mine.len() == parts
        && mine
            .iter()
            .enumerate()
            .all(|(i, r)| r.part as usize == i && r.token == head.token);
    if !whole {
        let ours = mine.iter().filter(|r| r.token == head.token).count();
        return Err(backend(
            "get",
            Some(key),
            format!("its value spans {parts} rows; {ours} of them are there from the write that made it"),
        ));
    }
    Ok(Some(mine.iter().map(|r| r.value.as_str()).collect()))
}

impl D1Saver {
    /// The saver over `db`, in the table `resumable_agent_checkpoints` (made on first use).
    pub fn new(db: D1Database) -> Self {
        Self::named(db, D1_DEFAULT_TABLE)
    }

    /// The saver over `db`, in `table` (made on first use).
    ///
    /// # Errors
    /// [`SaverError::Option`] for a name that is not `[A-Za-z_][A-Za-z0-9_]*` (at most 63) or starts with `_cf_`
    /// or `sqlite_` (reserved by D1 and SQLite).
    pub fn with_table(db: D1Database, table: &str) -> Result<Self, SaverError> {
        if !valid_table(table) {
            return Err(SaverError::Option(format!(
                "D1Saver table {table:?}: expected letters, digits and _ (not starting with a digit, at most 63), not starting with _cf_ or sqlite_"
            )));
        }
        Ok(Self::named(db, table))
    }

    fn named(db: D1Database, table: &str) -> Self {
        D1Saver {
            db,
            table: format!("\"{table}\""),
            index: format!("\"{table}_heads\""),
            sessions: format!("\"{table}_sessions\""),
            made: AtomicBool::new(false),
        }
    }

    fn statement(&self, sql: &str, params: &[JsValue]) -> Result<D1PreparedStatement, SaverError> {
        self.db.prepare(sql).bind(params).map_err(|e| backend("bind", None, e))
    }

    /// Makes the table and its index, once per saver.
    async fn ready(&self) -> Result<(), SaverError> {
        if self.made.load(Ordering::Relaxed) {
            return Ok(());
        }
        let (t, i) = (&self.table, &self.index);
        let create = [
            format!(
                "CREATE TABLE IF NOT EXISTS {t} (key TEXT NOT NULL, part INTEGER NOT NULL, step INTEGER, parts INTEGER, token TEXT, summary TEXT, value TEXT NOT NULL, PRIMARY KEY (key, part))"
            ),
            format!("CREATE INDEX IF NOT EXISTS {i} ON {t} (key, summary) WHERE part = 0"),
            format!(
                "CREATE INDEX IF NOT EXISTS {} ON {t} (key, summary) WHERE part = 0 AND {HEAD}",
                self.sessions
            ),
        ];
        let statements = create.iter().map(|sql| self.db.prepare(sql.as_str())).collect();
        self.db
            .batch(statements)
            .await
            .map_err(|e| backend("making the table", None, e))?;
        self.made.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// The keys under `prefix` whose rows match `rows` (`part = 0`: every key; [`HEAD_ROWS`]: sessions), with
    /// their summaries.
    fn listed<'a>(
        &'a self,
        prefix: &'a str,
        rows: &'static str,
    ) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + MaybeSend + 'a {
        async move {
            self.ready().await?;
            let t = &self.table;
            let statement = match (prefix.is_empty(), after(prefix)) {
                (true, _) => self.statement(&format!("SELECT key, summary FROM {t} WHERE {rows} ORDER BY key"), &[])?,
                (false, None) => self.statement(
                    &format!("SELECT key, summary FROM {t} WHERE {rows} AND key >= ? ORDER BY key"),
                    &[prefix.into()],
                )?,
                (false, Some(end)) => self.statement(
                    &format!("SELECT key, summary FROM {t} WHERE {rows} AND key >= ? AND key < ? ORDER BY key"),
                    &[prefix.into(), end.as_str().into()],
                )?,
            };
            let rows: Vec<Listed> = self.rows(statement, "list", None).await?;
            Ok(rows
                .into_iter()
                .filter_map(|r| {
                    let summary = serde_json::from_str(r.summary.as_deref()?).ok()?;
                    Some(SavedCheckpoint { key: r.key, summary })
                })
                .collect())
        }
    }

    async fn rows<T: for<'de> Deserialize<'de>>(
        &self,
        statement: D1PreparedStatement,
        op: &str,
        key: Option<&str>,
    ) -> Result<Vec<T>, SaverError> {
        let result = statement.all().await.map_err(|e| backend(op, key, e))?;
        result.results::<T>().map_err(|e| backend(op, key, e))
    }
}

fn changes(result: &worker::D1Result) -> usize {
    result.meta().ok().flatten().and_then(|m| m.changes).unwrap_or(0)
}

impl Saver for D1Saver {
    fn get_text(&self, key: &str) -> impl Future<Output = Result<Option<String>, SaverError>> + MaybeSend {
        async move {
            self.ready().await?;
            let sql = format!(
                "SELECT part, parts, token, value FROM {} WHERE key = ? ORDER BY part",
                self.table
            );
            let rows: Vec<Row> = self
                .rows(self.statement(&sql, &[key.into()])?, "get", Some(key))
                .await?;
            assemble(key, &rows.iter().collect::<Vec<_>>())
        }
    }

    fn get_many(&self, keys: &[String]) -> impl Future<Output = Result<Vec<Option<String>>, SaverError>> + MaybeSend {
        async move {
            self.ready().await?;
            let mut out = Vec::with_capacity(keys.len());
            for chunk in keys.chunks(KEYS_PER_READ) {
                let marks = vec!["?"; chunk.len()].join(", ");
                let sql = format!(
                    "SELECT key, part, parts, token, value FROM {} WHERE key IN ({marks}) ORDER BY key, part",
                    self.table
                );
                let params: Vec<JsValue> = chunk.iter().map(|k| JsValue::from_str(k)).collect();
                let rows: Vec<Row> = self.rows(self.statement(&sql, &params)?, "get", None).await?;
                for k in chunk {
                    // The rows of `k`, borrowed (values are not copied).
                    let mine: Vec<&Row> = rows.iter().filter(|r| r.key.as_deref() == Some(k.as_str())).collect();
                    out.push(assemble(k, &mine)?);
                }
            }
            Ok(out)
        }
    }

    fn put_text(
        &self,
        key: &str,
        value: String,
        summary: &CheckpointSummary,
        condition: Condition,
    ) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        let stored = summary.to_stored();
        let step = summary.step.unwrap_or(0);
        async move {
            self.ready().await?;
            let fixed = key.len() + ROW_OVERHEAD;
            let Some(first) = D1_MAX_ROW_BYTES
                .checked_sub(fixed + stored.len())
                .filter(|n| *n >= 1024)
            else {
                return Err(SaverError::TooLarge {
                    key: key.to_owned(),
                    bytes: fixed + stored.len(),
                    max: D1_MAX_ROW_BYTES,
                });
            };
            let values = pieces(&value, first, D1_MAX_ROW_BYTES - fixed);
            let token = crate::platform::new_run_id();
            let t = &self.table;
            let n = values.len() as f64;
            let (k, s) = (JsValue::from_str(key), JsValue::from_str(&stored));
            let (tok, first_value) = (
                JsValue::from_str(&token),
                JsValue::from_str(values.first().copied().unwrap_or_default()),
            );
            let step_js = JsValue::from_f64(step as f64);
            let head = match condition {
                Condition::Absent => self.statement(
                    &format!("INSERT INTO {t} (key, part, step, parts, token, summary, value) VALUES (?, 0, ?, ?, ?, ?, ?) ON CONFLICT (key, part) DO NOTHING"),
                    &[k.clone(), step_js, n.into(), tok.clone(), s, first_value],
                )?,
                Condition::Step(expected) => self.statement(
                    &format!("UPDATE {t} SET step = ?, parts = ?, token = ?, summary = ?, value = ? WHERE key = ? AND part = 0 AND COALESCE(step, 0) = ?"),
                    &[step_js, n.into(), tok.clone(), s, first_value, k.clone(), JsValue::from_f64(expected as f64)],
                )?,
                Condition::Any => self.statement(
                    &format!("INSERT INTO {t} (key, part, step, parts, token, summary, value) VALUES (?, 0, ?, ?, ?, ?, ?) ON CONFLICT (key, part) DO UPDATE SET step = excluded.step, parts = excluded.parts, token = excluded.token, summary = excluded.summary, value = excluded.value"),
                    &[k.clone(), step_js, n.into(), tok.clone(), s, first_value],
                )?,
            };
            let mut batch = vec![
                head,
                self.statement(
                    &format!("DELETE FROM {t} WHERE key = ? AND part > 0 AND EXISTS (SELECT 1 FROM {t} WHERE key = ? AND part = 0 AND token = ?)"),
                    &[k.clone(), k.clone(), tok.clone()],
                )?,
            ];
            for (i, piece) in values.iter().enumerate().skip(1) {
                batch.push(self.statement(
                    &format!("INSERT INTO {t} (key, part, token, value) SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM {t} WHERE key = ? AND part = 0 AND token = ?)"),
                    &[k.clone(), (i as f64).into(), tok.clone(), JsValue::from_str(piece), k.clone(), tok.clone()],
                )?);
            }
            let results = self.db.batch(batch).await.map_err(|e| backend("put", Some(key), e))?;
            if results.first().map_or(0, changes) == 0 {
                return Err(condition.conflict(key, None));
            }
            Ok(())
        }
    }

    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        async move {
            self.ready().await?;
            let sql = format!("DELETE FROM {} WHERE key = ?", self.table);
            self.statement(&sql, &[key.into()])?
                .run()
                .await
                .map_err(|e| backend("delete", Some(key), e))?;
            Ok(())
        }
    }

    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + MaybeSend {
        async move { self.listed(prefix, "part = 0").await }
    }

    fn list_heads(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + MaybeSend {
        async move { self.listed(prefix, HEAD_ROWS).await }
    }

    fn compare_and_set(&self) -> bool {
        true
    }
}
