//! Natively, every future the library hands out is `Send` (so it runs on a multi-threaded runtime).
#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used)] // test code

use resumable_agent::{Agent, Checkpoint, Input, MemorySaver, ModelResponse, ScriptedModel};

fn assert_send<T: Send>(_: &T) {}

#[test]
fn agent_and_session_futures_are_send() {
    let agent = Agent::builder(ScriptedModel::new([ModelResponse::text("hi")]))
        .build()
        .unwrap();
    let saver = MemorySaver::new();
    let cp = Checkpoint::new("r", 0);
    assert_send(&agent.prompt("x"));
    assert_send(&agent.resume(cp.clone(), ""));
    assert_send(&agent.run(Input::prompt("x"), &mut |_: &resumable_agent::Event<'_>| {}));
    let session = agent.session(&saver, "s");
    assert_send(&session.prompt("x"));
    assert_send(&session.reply("x"));
    assert_send(&session.resume());
    assert_send(&session.history(10, None));
    assert_send(&session.restore("1"));
}
