// Subagents: agentTool(), a tool whose call runs a child agent, its run nested in the parent's checkpoint. A capability
// of its own: the .wasm variant a program loads has subagents only when it imports this module ('resumable-agent/core'
// does not export it).
import { need } from './load.js';
import { SUBAGENT } from './internal.js';
import './api.js';

need('subagents');

/**
 * A tool whose call runs a child agent: `agentTool({ name, description?, agent, input?, needsApproval?, onExpire? })`.
 * `agent` is an agent (from `agent()`) or its config. The input is `{ task: string }` (the child's prompt) unless
 * `input` gives another schema (the child's prompt is then the input as JSON text); the result is the child's final
 * text, or its structured output. A child's interrupts surface in the parent's result with ids
 * `<call id>/<child's id>` and `path`; decisions by those ids reach the child; its run is kept in the parent's
 * checkpoint. Its events reach the parent's `onEvent` with `path`.
 */
export const agentTool = (def) => SUBAGENT.make(def);
