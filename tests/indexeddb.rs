//! The IndexedDB saver in real headless Chromium (wasm-bindgen-test + chromedriver).
#![cfg(all(target_arch = "wasm32", feature = "indexeddb"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)] // test code

use resumable_agent::{Checkpoint, IndexedDbOptions, IndexedDbSaver, Saver, SaverError};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn unique(name: &str) -> String {
    format!("{name}-{}", (js_sys::Math::random() * 1e9) as u64)
}

fn checkpoint(text: &str, question: Option<&str>) -> Checkpoint {
    let pending = question.map_or(String::new(), |q| {
        format!(
            r#",{{"role":"assistant","content":[{{"type":"tool_use","id":"t1","name":"ask_user","input":{{}}}}]}}],"pendingToolUseId":"t1","question":{q:?}"#
        )
    });
    let close = if question.is_some() { "" } else { "]" };
    Checkpoint::from_json(&format!(
        r#"{{"version":1,"messages":[{{"role":"user","content":{text:?}}}{pending}{close},"iterations":{},"usage":{{"inputTokens":3,"outputTokens":1}}}}"#,
        u8::from(question.is_some())
    ))
    .unwrap()
}

#[wasm_bindgen_test]
async fn round_trip_overwrite_delete_and_a_missing_key() {
    let saver = IndexedDbSaver::new(IndexedDbOptions::new(unique("db"), "checkpoints")).unwrap();
    assert_eq!(saver.get("missing").await.unwrap(), None);
    let first = checkpoint("one", Some("Your deadline?"));
    saver.put("s1", &first).await.unwrap();
    assert_eq!(saver.get("s1").await.unwrap(), Some(first));
    let second = checkpoint("one, then more", None);
    saver.put("s1", &second).await.unwrap();
    assert_eq!(saver.get("s1").await.unwrap(), Some(second));
    saver.delete("s1").await.unwrap();
    saver.delete("s1").await.unwrap();
    assert_eq!(saver.get("s1").await.unwrap(), None);
    assert!(saver.list("").await.unwrap().is_empty(), "the summary went with it");
}

#[wasm_bindgen_test]
async fn list_returns_summaries_by_prefix() {
    let saver = IndexedDbSaver::new(IndexedDbOptions::new(unique("db"), "runs")).unwrap();
    saver.put("chat/a", &checkpoint("a", Some("Q a?"))).await.unwrap();
    saver.put("chat/b", &checkpoint("b", None)).await.unwrap();
    saver.put("other/c", &checkpoint("c", Some("Q c?"))).await.unwrap();
    let listed = saver.list("chat/").await.unwrap();
    let rows: Vec<(String, bool, Option<String>, usize)> = listed
        .iter()
        .map(|s| {
            (
                s.key.clone(),
                s.summary.interrupted,
                s.summary.question.clone(),
                s.summary.message_count,
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("chat/a".to_owned(), true, Some("Q a?".to_owned()), 2),
            ("chat/b".to_owned(), false, None, 1)
        ]
    );
    assert_eq!(saver.list("").await.unwrap().len(), 3);
}

/// Opens `db` directly (like another piece of code on the page would).
async fn raw_open(db: &str) -> web_sys::IdbDatabase {
    let factory: web_sys::IdbFactory = js_sys::Reflect::get(&js_sys::global(), &"indexedDB".into())
        .unwrap()
        .unchecked_into();
    let request = factory.open(db).unwrap();
    let opened = js_sys::Promise::new(&mut |resolve, _| request.set_onsuccess(Some(&resolve)));
    wasm_bindgen_futures::JsFuture::from(opened).await.unwrap();
    request.result().unwrap().unchecked_into()
}

#[wasm_bindgen_test]
async fn list_reads_summaries_only_and_get_names_a_corrupt_checkpoint() {
    let db = unique("db");
    let saver = IndexedDbSaver::new(IndexedDbOptions::new(&db, "checkpoints")).unwrap();
    saver
        .put("s", &checkpoint("hello", Some("Still listed?")))
        .await
        .unwrap();
    // Overwrite the checkpoint itself with something that is not one, behind the saver's back.
    let raw = raw_open(&db).await;
    let tx = raw
        .transaction_with_str_and_mode("checkpoints", web_sys::IdbTransactionMode::Readwrite)
        .unwrap();
    tx.object_store("checkpoints")
        .unwrap()
        .put_with_key(&"not a checkpoint".into(), &"s".into())
        .unwrap();
    let done = js_sys::Promise::new(&mut |resolve, _| tx.set_oncomplete(Some(&resolve)));
    wasm_bindgen_futures::JsFuture::from(done).await.unwrap();
    raw.close();

    let listed = saver.list("").await.unwrap();
    assert_eq!(listed.len(), 1, "listing never reads the checkpoint store");
    assert_eq!(listed[0].summary.question.as_deref(), Some("Still listed?"));
    let err = saver.get("s").await.unwrap_err();
    assert!(matches!(&err, SaverError::Corrupt { key, .. } if key == "s"), "{err:?}");
}

#[wasm_bindgen_test]
async fn two_databases_are_isolated_and_a_second_store_upgrades_the_database() {
    let (db1, db2) = (unique("db"), unique("db"));
    let a = IndexedDbSaver::new(IndexedDbOptions::new(&db1, "checkpoints")).unwrap();
    let b = IndexedDbSaver::new(IndexedDbOptions::new(&db2, "checkpoints")).unwrap();
    a.put("k", &checkpoint("in a", None)).await.unwrap();
    assert_eq!(b.get("k").await.unwrap(), None);
    assert_eq!(b.list("").await.unwrap().len(), 0);
    // Another store in the same database: opened at a higher version, while `a` stays usable.
    let c = IndexedDbSaver::new(IndexedDbOptions::new(&db1, "other")).unwrap();
    assert_eq!(c.get("k").await.unwrap(), None);
    c.put("k", &checkpoint("in c", None)).await.unwrap();
    assert_eq!(a.get("k").await.unwrap().unwrap().messages[0].text(), "in a");
    assert_eq!(c.get("k").await.unwrap().unwrap().messages[0].text(), "in c");
}

#[wasm_bindgen_test]
async fn a_new_saver_instance_reads_what_another_wrote() {
    // As after a reload: nothing shared but the database.
    let db = unique("db");
    IndexedDbSaver::new(IndexedDbOptions::new(&db, "checkpoints"))
        .unwrap()
        .put("s", &checkpoint("hello", Some("Q?")))
        .await
        .unwrap();
    let fresh = IndexedDbSaver::new(IndexedDbOptions::new(&db, "checkpoints")).unwrap();
    assert_eq!(fresh.get("s").await.unwrap().unwrap().question.as_deref(), Some("Q?"));
}

#[wasm_bindgen_test]
async fn an_upgrade_blocked_by_another_connection_is_a_typed_error() {
    let db = unique("db");
    IndexedDbSaver::new(IndexedDbOptions::new(&db, "checkpoints"))
        .unwrap()
        .put("k", &checkpoint("x", None))
        .await
        .unwrap();
    // A connection that, like a stale tab, ignores versionchange and stays open.
    let factory: web_sys::IdbFactory = js_sys::Reflect::get(&js_sys::global(), &"indexedDB".into())
        .unwrap()
        .unchecked_into();
    let request = factory.open(&db).unwrap();
    let opened = js_sys::Promise::new(&mut |resolve, _| request.set_onsuccess(Some(&resolve)));
    wasm_bindgen_futures::JsFuture::from(opened).await.unwrap();
    let stale: web_sys::IdbDatabase = request.result().unwrap().unchecked_into();

    let needs_upgrade = IndexedDbSaver::new(IndexedDbOptions::new(&db, "new-store")).unwrap();
    let err = needs_upgrade.put("k", &checkpoint("y", None)).await.unwrap_err();
    assert!(
        matches!(&err, SaverError::Blocked { db: name } if *name == db),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("another tab keeps an older version of it open"),
        "{err}"
    );
    stale.close();
}

#[wasm_bindgen_test]
async fn the_rust_conformance_suite_passes_on_indexeddb() {
    let base = unique("conformance");
    let results = resumable_agent::testing::saver_conformance(|ns| {
        IndexedDbSaver::new(IndexedDbOptions::new(format!("{base}-{ns}"), "checkpoints")).unwrap()
    })
    .await;
    let failed: Vec<_> = results.iter().filter(|r| !r.ok).collect();
    assert!(failed.is_empty(), "{failed:?}");
    let skipped: Vec<&str> = results.iter().filter(|r| r.skipped.is_some()).map(|r| r.name).collect();
    assert_eq!(
        skipped,
        ["list reads summaries, not values"],
        "compare-and-set applies to IndexedDB"
    );
}
