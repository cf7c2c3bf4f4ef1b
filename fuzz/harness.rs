// What each fuzz target checks, shared with tests/fuzz_regressions.rs (which replays the committed corpus
// and every crash ever found through the same code on stable Rust). Included with `include!`, so it names
// everything by its full path.
//
// The invariants, for any input: no panic, no trap, no unbounded work; and whatever the library accepts
// (a checkpoint, a model response, decisions) leads to checkpoints it can read back, byte for byte.

#[allow(dead_code)]
const FUZZ_KEYS: (&str, &str) = ("fuzz", "a secret used only by the fuzzer");

#[allow(dead_code)]
fn fuzz_agent(keys: bool) -> resumable_agent::Agent {
    use resumable_agent::{ContentBlock, InterruptError, ModelResponse, ScriptedModel, ToolUse, tool};
    use serde_json::json;
    let call = |id: &str, name: &str| {
        ContentBlock::ToolUse(ToolUse {
            id: id.into(),
            name: name.into(),
            input: json!({"key": id, "question": "Why?"}),
            signature: None,
        })
    };
    let model = ScriptedModel::new([
        ModelResponse::new(vec![call("f1", "lookup"), call("f2", "send"), call("f3", "ask_user")]),
        ModelResponse::text("fuzzed"),
        ModelResponse::text("fuzzed again"),
    ]);
    let lookup = tool("lookup", "Look up.", json!({"type": "object"}), |input, _| async move { Ok(input) });
    let ask = tool("ask_user", "Ask.", json!({"type": "object"}), |_, _| async move {
        Err(InterruptError::new("Why?").into())
    });
    let send = tool(
        "send",
        "Send.",
        json!({"type": "object", "properties": {"to": {"type": "string"}}}),
        |input, _| async move { Ok(input) },
    )
    .needs_approval();
    let mut builder = resumable_agent::Agent::builder(model)
        .tool(lookup)
        .tool(ask)
        .tool(send)
        .max_iterations(6);
    if keys {
        builder = builder.checkpoint_keys(resumable_agent::CheckpointKeys::new(FUZZ_KEYS.0).key(FUZZ_KEYS.0, FUZZ_KEYS.1));
    }
    builder.build().unwrap_or_else(|e| panic!("the fuzz agent builds: {e}"))
}

/// What the library writes, it reads back to the same bytes.
#[allow(dead_code)]
fn assert_reads_back(cp: &resumable_agent::Checkpoint) {
    let text = cp.to_json();
    let back = resumable_agent::Checkpoint::from_json(&text)
        .unwrap_or_else(|e| panic!("a checkpoint the library wrote does not decode: {e}\n{text}"));
    assert_eq!(back.to_json(), text, "decode → encode changed the checkpoint");
}

/// Ends of a run (outcome or error) must carry checkpoints that read back.
#[allow(dead_code)]
fn assert_result_reads_back(result: &Result<resumable_agent::Outcome, resumable_agent::AgentError>) {
    match result {
        Ok(o) => assert_reads_back(o.checkpoint()),
        Err(e) => {
            if let Some(cp) = e.checkpoint() {
                assert_reads_back(cp);
            }
        }
    }
}

/// Checkpoint text, decoded plainly and by an agent with keys (signature and sealed-envelope paths), then
/// resumed with an answer and with decisions.
#[allow(dead_code)]
fn checkpoint(data: &[u8]) {
    use resumable_agent::{Checkpoint, Decision, Resume};
    let Ok(text) = std::str::from_utf8(data) else { return };
    let keyed = fuzz_agent(true);
    let _ = pollster::block_on(keyed.decode_checkpoint(text));
    let Ok(cp) = Checkpoint::from_json(text) else { return };
    assert_reads_back(&cp);
    let agent = fuzz_agent(false);
    assert_result_reads_back(&pollster::block_on(agent.resume(cp.clone(), "an answer")));
    let approve_all = Resume::decisions(cp.interrupts.iter().map(|_| Decision::approve()));
    assert_result_reads_back(&pollster::block_on(agent.resume(cp, approve_all)));
}

/// A provider's 2xx body: decoded by the wire format, then fed to a run, whose checkpoints read back.
#[allow(dead_code)]
fn provider_response(wire: &dyn Fn(&serde_json::Value) -> Result<resumable_agent::ModelResponse, resumable_agent::ModelError>, data: &[u8]) {
    let Ok(body) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    let Ok(response) = wire(&body) else { return };
    run_response(response);
}

/// A model response through a run: recorded or refused whole, and every checkpoint on the way reads back.
#[allow(dead_code)]
fn run_response(response: resumable_agent::ModelResponse) {
    use resumable_agent::{Run, RunConfig, Step, ToolDefinition, ToolOutcome};
    let tools = ["lookup", "send"].map(|name| ToolDefinition {
        name: name.into(),
        description: String::new(),
        input_schema: serde_json::json!({"type": "object"}),
    });
    let config = RunConfig::new(tools).approval("send", resumable_agent::OnExpire::Deny);
    let mut run = Run::start(&config, "hi", "fuzz", 0);
    assert!(matches!(run.next_step(), Step::CallModel));
    if run.model_replied(response, 1).is_err() {
        return;
    }
    for _ in 0..64 {
        assert_reads_back(run.checkpoint());
        match run.next_step() {
            Step::Review(_) => run.reviewed(Vec::new(), 2),
            Step::CallTool(call) => run.tool_finished(&call.id, ToolOutcome::Output("ok".into()), 3),
            Step::Refused(..) => {}
            _ => break,
        }
    }
    assert_reads_back(run.checkpoint());
}

#[allow(dead_code)]
fn anthropic_response(data: &[u8]) {
    use resumable_agent::provider::WireFormat;
    let wire = resumable_agent::provider::anthropic::Anthropic::new("k", "m");
    provider_response(&|body| wire.response(body), data);
}

#[allow(dead_code)]
fn openai_response(data: &[u8]) {
    use resumable_agent::provider::WireFormat;
    let wire = resumable_agent::provider::openai::OpenAi::new("k", "m");
    provider_response(&|body| wire.response(body), data);
}

#[allow(dead_code)]
fn responses_response(data: &[u8]) {
    use resumable_agent::provider::WireFormat;
    let wire = resumable_agent::provider::responses::OpenAiResponses::new("k", "m");
    provider_response(&|body| wire.response(body), data);
}

#[allow(dead_code)]
fn gemini_response(data: &[u8]) {
    use resumable_agent::provider::WireFormat;
    let wire = resumable_agent::provider::gemini::Gemini::new("k", "m");
    provider_response(&|body| wire.response(body), data);
}

/// Decisions as JSON text, applied to a run paused on two approvals and to one paused on a question.
#[allow(dead_code)]
fn decisions(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(resume) = resumable_agent::Resume::from_decisions_json(text) else { return };
    let agent = fuzz_agent(false);
    let Ok(first) = pollster::block_on(agent.prompt("Go.")) else { return };
    assert_reads_back(first.checkpoint());
    let paused = first.checkpoint().clone();
    assert_result_reads_back(&pollster::block_on(agent.resume(paused, resume)));
}

/// Serves bytes as a streamed answer, in two chunks split at `split`.
#[allow(dead_code)]
struct Replay {
    body: Vec<u8>,
    split: usize,
}

impl resumable_agent::provider::HttpClient for Replay {
    fn send(
        &self,
        _: resumable_agent::provider::HttpRequest,
    ) -> impl std::future::Future<Output = Result<resumable_agent::provider::HttpResponse, String>> + Send {
        std::future::ready(Ok(resumable_agent::provider::HttpResponse::new(500, None, String::new())))
    }

    fn sleep(&self, _: std::time::Duration) -> impl std::future::Future<Output = ()> + Send {
        std::future::ready(())
    }

    fn send_streaming<'a>(
        &'a self,
        _: resumable_agent::provider::HttpRequest,
        body: &'a mut dyn resumable_agent::provider::BodySink,
    ) -> impl std::future::Future<Output = Result<resumable_agent::provider::HttpResponse, String>> + Send + 'a {
        let (a, b) = self.body.split_at(self.split.min(self.body.len()));
        let _ = body.chunk(a) && body.chunk(b);
        std::future::ready(Ok(resumable_agent::provider::HttpResponse::new(200, None, String::new())))
    }
}

/// A streamed answer (server-sent events) in either Anthropic's or Chat Completions' format, split anywhere:
/// byte 0 picks the format (even: Anthropic, odd: OpenAI), the rest is as for [`stream_in`].
#[allow(dead_code)]
fn sse_stream(data: &[u8]) {
    use resumable_agent::provider::{anthropic::Anthropic, openai::OpenAi};
    let [kind, rest @ ..] = data else { return };
    if kind % 2 == 0 {
        stream_in(Anthropic::new("k", "m"), rest);
    } else {
        stream_in(OpenAi::new("k", "m"), rest);
    }
}

/// A streamed answer in `wire`'s format, split anywhere (byte 0 is the split point): the stream decoders never
/// panic, deltas are well-formed, and an answer they accept goes through a run like any response.
#[allow(dead_code)]
fn stream_in<W: resumable_agent::provider::WireFormat>(wire: W, data: &[u8]) {
    use resumable_agent::provider::{HttpModel, Retry};
    use resumable_agent::{Delta, Message, Model, ModelRequest};
    let [split, body @ ..] = data else { return };
    let client = Replay {
        body: body.to_vec(),
        split: usize::from(*split),
    };
    let messages = [Message::user("hi")];
    let mut deltas = 0usize;
    let mut sink = |_: Delta<'_>| deltas += 1;
    let m = HttpModel::new(wire, client, "k").retry(Retry::default().max_retries(0));
    let result = pollster::block_on(m.stream(ModelRequest::new(&messages, &[]), &mut sink));
    assert!(deltas <= body.len() + 1, "more deltas than bytes");
    if let Ok(response) = result {
        run_response(response);
    }
}

/// A streamed answer of the Responses API.
#[allow(dead_code)]
fn responses_stream(data: &[u8]) {
    stream_in(resumable_agent::provider::responses::OpenAiResponses::new("k", "m"), data);
}

/// A streamed answer of Gemini.
#[allow(dead_code)]
fn gemini_stream(data: &[u8]) {
    stream_in(resumable_agent::provider::gemini::Gemini::new("k", "m"), data);
}

/// An MCP server's answer to a `tools/call` (JSON or an event stream, split anywhere; byte 0 picks the era and
/// the split point): the reader never panics, and whatever a run makes of it — a result, an error result, a
/// pause on its requests for input, `AgentError::Mcp` — leaves checkpoints it can read back; a pause is answered
/// (every request declined) and the retried call's answer read again.
#[allow(dead_code)]
fn mcp_answer(data: &[u8]) {
    use resumable_agent::mcp::{Era, McpClient, McpServer, McpTool, MODERN, LEGACY};
    use resumable_agent::{Decision, ModelResponse, Outcome, Resume, ScriptedModel, ToolDefinition};
    use serde_json::json;
    let [kind, rest @ ..] = data else { return };
    let [split, body @ ..] = rest else { return };
    let era = if kind % 2 == 0 {
        Era::Modern(MODERN.to_owned())
    } else {
        Era::Legacy { version: LEGACY.to_owned(), session: Some("s".into()) }
    };
    let client = McpClient::new(McpServer::new("http://127.0.0.1:9/mcp"), McpReplay(Replay { body: body.to_vec(), split: usize::from(*split) }))
        .with_era(era);
    let tool = McpTool::new(
        std::sync::Arc::new(client),
        "t",
        ToolDefinition::new("t", "A fuzzed MCP tool.", json!({"type": "object"})),
    );
    let model = ScriptedModel::new([ModelResponse::tool_call("m1", "t", json!({"a": 1})), ModelResponse::text("done"), ModelResponse::text("done")]);
    let Ok(agent) = resumable_agent::Agent::builder(model).tool(tool).build() else { return };
    let first = pollster::block_on(agent.prompt("Go."));
    assert_result_reads_back(&first);
    if let Ok(Outcome::Interrupted(paused)) = first {
        let declined = Resume::decisions(paused.checkpoint.interrupts.iter().map(|_| Decision::Decline));
        assert_result_reads_back(&pollster::block_on(agent.resume(paused.checkpoint, declined)));
    }
}

/// [`Replay`] answering each request with the fuzzed body in which `"x"` stands for the request's own id (so a
/// reply can match it).
#[allow(dead_code)]
struct McpReplay(Replay);

impl resumable_agent::provider::HttpClient for McpReplay {
    fn send(
        &self,
        request: resumable_agent::provider::HttpRequest,
    ) -> impl std::future::Future<Output = Result<resumable_agent::provider::HttpResponse, String>> + Send {
        self.0.send(request)
    }

    fn sleep(&self, d: std::time::Duration) -> impl std::future::Future<Output = ()> + Send {
        self.0.sleep(d)
    }

    fn send_streaming<'a>(
        &'a self,
        request: resumable_agent::provider::HttpRequest,
        body: &'a mut dyn resumable_agent::provider::BodySink,
    ) -> impl std::future::Future<Output = Result<resumable_agent::provider::HttpResponse, String>> + Send + 'a {
        let id = serde_json::from_str::<serde_json::Value>(&request.body)
            .ok()
            .and_then(|m| m.get("id").cloned())
            .map_or_else(|| "null".to_owned(), |id| id.to_string());
        let text = String::from_utf8_lossy(&self.0.body).replace("\"x\"", &id);
        let (a, b) = text.as_bytes().split_at(self.0.split.min(text.len()));
        let _ = body.chunk(a) && body.chunk(b);
        std::future::ready(Ok(resumable_agent::provider::HttpResponse::new(200, None, String::new())))
    }
}
