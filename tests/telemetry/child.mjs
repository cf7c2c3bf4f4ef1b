// Resumes a paused checkpoint (a file) in a process of its own, traced, and prints the finished spans as JSON:
// the trace must continue across processes through the checkpoint.   node child.mjs <checkpoint.json>
import { readFileSync } from 'node:fs';
import { setUpOtel, spansOf } from './otel.mjs';
import { pausingAgent } from './agents.mjs';

const { exporter, tracer } = setUpOtel();
const checkpoint = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const result = await pausingAgent(tracer).resume(checkpoint, { decisions: [{ type: 'approve' }] });
process.stdout.write(JSON.stringify({ text: result.text, traceparent: result.checkpoint.traceparent, spans: spansOf(exporter) }));
