//! `parse_cost` is an upper bound of the memory a parse really takes (its peak, measured by dhat as this test
//! binary's allocator), so `parse_untrusted` refuses JSON that would amplify (issue 38: 2.6 MB of tiny objects
//! held 160 MB) and reads what servers really send. One test: dhat profiles one thing at a time.
#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)] // test code

use resumable_agent::{UntrustedJson, parse_cost, parse_untrusted};
use serde_json::{Value, json};

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

/// The most heap parsing `text` held at once, in bytes.
fn peak_of_parse(text: &str) -> usize {
    let profiler = dhat::Profiler::builder().testing().build();
    let v: Value = serde_json::from_str(text).unwrap();
    let peak = dhat::HeapStats::get().max_bytes;
    drop(v);
    drop(profiler);
    peak
}

#[test]
fn parse_cost_is_an_upper_bound_of_what_a_parse_takes_and_what_servers_send_passes() {
    let n = 20_000;
    let rows = |item: &str| format!("[{}]", vec![item; n].join(","));
    let listing = rows(
        r#"{"name":"t","description":"Does a thing.","inputSchema":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"number","description":"b"}},"required":["a"]}}"#,
    );
    let text = json!({"content": [{"type": "text", "text": "hello world ".repeat(50_000)}]}).to_string();
    let wide = json!(
        (0..5000)
            .map(|i| (format!("k{i}"), json!(i)))
            .collect::<serde_json::Map<_, _>>()
    )
    .to_string();
    // Whether each is read: what servers send is; tiny objects (85x here) are not; shapes in between (one-element
    // arrays take 45x on 64-bit targets, 22x on wasm32) go by the estimate.
    let shapes: Vec<(&str, String, Option<bool>)> = vec![
        ("tiny objects", rows(r#"{"a":1}"#), Some(false)),
        ("one-element arrays", rows("[1]"), None),
        ("empty objects", rows("{}"), None),
        ("numbers", rows("1"), Some(true)),
        ("strings", rows(r#""a""#), Some(true)),
        ("a tool listing", listing, Some(true)),
        ("a text answer", text, Some(true)),
        ("an object of 5000 keys", wide, Some(true)),
        (
            "nested arrays",
            format!("{}{}", "[".repeat(100), "]".repeat(100)),
            Some(true),
        ),
    ];
    for (name, text, accepted) in shapes {
        let cost = parse_cost(&text);
        let peak = peak_of_parse(&text);
        assert!(cost >= peak, "{name}: estimated {cost} < {peak} taken");
        let read = parse_untrusted(&text);
        let what = format!(
            "{name}: {:?} ({} bytes, cost {cost}, peak {peak})",
            read.as_ref().err(),
            text.len()
        );
        if let Some(accepted) = accepted {
            assert_eq!(read.is_ok(), accepted, "{what}");
        }
        if let Err(e) = read {
            assert!(matches!(e, UntrustedJson::TooCostly { .. }), "{what}");
            assert!(
                peak > text.len() * 20,
                "{what}: refused what takes only {}x",
                peak / text.len()
            );
        }
    }
    assert!(matches!(parse_untrusted("{\"a\":"), Err(UntrustedJson::Invalid(_))));
    // Lone surrogates are repaired, as everywhere JSON enters.
    assert_eq!(parse_untrusted(r#""\ud800x""#).unwrap(), json!("\u{fffd}x"));
}
