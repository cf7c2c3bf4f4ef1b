//! Replays every committed fuzz input — seeds, the minimized corpus, and each crash ever found
//! (fuzz/regressions) — through the fuzz targets' own checks, on stable Rust, in every `cargo test`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)] // test code
#![cfg(not(target_arch = "wasm32"))]

include!("../fuzz/harness.rs");

fn replay(target: &str, check: fn(&[u8])) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut n = 0;
    for dir in ["seeds", "corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|f| f == ".keep") {
                continue;
            }
            let data = std::fs::read(&path).unwrap();
            let replayed = std::panic::catch_unwind(|| check(&data));
            assert!(replayed.is_ok(), "{}: the check failed", path.display());
            n += 1;
        }
    }
    assert!(n > 0, "no inputs for {target}");
    println!("{target}: {n} inputs replayed");
}

#[test]
fn checkpoint_inputs() {
    replay("checkpoint", checkpoint);
}

#[test]
fn anthropic_response_inputs() {
    replay("anthropic_response", anthropic_response);
}

#[test]
fn openai_response_inputs() {
    replay("openai_response", openai_response);
}

#[test]
fn decisions_inputs() {
    replay("decisions", decisions);
}

#[test]
fn sse_stream_inputs() {
    replay("sse_stream", sse_stream);
}

#[test]
fn responses_response_inputs() {
    replay("responses_response", responses_response);
}

#[test]
fn responses_stream_inputs() {
    replay("responses_stream", responses_stream);
}

#[test]
fn gemini_response_inputs() {
    replay("gemini_response", gemini_response);
}

#[test]
fn gemini_stream_inputs() {
    replay("gemini_stream", gemini_stream);
}

#[test]
fn mcp_answer_inputs() {
    replay("mcp_answer", mcp_answer);
}
