// Subagents: agentTool(), a tool whose call runs a child agent, its run nested in the parent's checkpoint. A capability
// of its own: the .wasm variant a program loads has subagents only when it imports this module, and a program that does
// not ships none of this code ('resumable-agent/core' does not export it).
import { ConfigError, describe } from './errors.js';
import { need, needFor } from './load.js';
import { SUBAGENT, HOST, hostValues, registerTool } from './internal.js';
import './api.js';

need('subagents');

const TASK_SCHEMA = Object.freeze({ type: 'object', properties: { task: { type: 'string', description: 'What the subagent is to do.' } }, required: ['task'] });

/**
 * A tool whose call runs a child agent: `agentTool({ name, description?, agent, input?, needsApproval?, onExpire? })`.
 * `agent` is an agent (from `agent()`) or its config. The input is `{ task: string }` (the child's prompt) unless
 * `input` gives another schema (the child's prompt is then the input as JSON text); the result is the child's final
 * text, or its structured output. A child's interrupts surface in the parent's result with ids
 * `<call id>/<child's id>` and `path`; decisions by those ids reach the child; its run is kept in the parent's
 * checkpoint. Its events reach the parent's `onEvent` with `path`.
 */
export function agentTool(def) {
  if (def === null || typeof def !== 'object' || Array.isArray(def)) {
    throw new ConfigError(`agentTool(def): expected { name, description?, agent, input? }, got ${describe(def)}`);
  }
  const { agent: given, input, ...rest } = def;
  for (const k of ['handle', 'schema', 'inputSchema']) {
    if (k in rest) throw new ConfigError(`agentTool(def).${k}: not an option of agentTool (its calls run the agent; give input for another input schema)`);
  }
  if (given === null || typeof given !== 'object') {
    throw new ConfigError(`agentTool(def).agent: expected an agent (from agent()) or its config, got ${describe(given)}`);
  }
  needFor('subagents', 'agentTool()');
  const p = SUBAGENT.parts;
  const child = p.agentOf(given);
  const { spec, text: config } = p.specOf(child);
  const inputSchema = input === undefined ? TASK_SCHEMA : p.compileSchema(input, 'agentTool(def).input');
  const rule = typeof rest.needsApproval === 'function' ? `${HOST}\n${p.sourceOf(rest.needsApproval)}` : rest.needsApproval;
  const text = p.withMember(JSON.stringify({ ...rest, needsApproval: rule, subagent: { config, task: input === undefined } }, hostValues), 'inputSchema', inputSchema);
  // Checked now where the wasm can be had now; on a page still loading it, by the agent that uses the tool.
  p.check(text, 'agentTool(def)');
  const { name, description = '', needsApproval, onExpire } = rest;
  const tool = Object.freeze({ name, description, inputSchema, needsApproval, onExpire, agent: child });
  registerTool(tool, text);
  SUBAGENT.specs.set(tool, spec);
  return tool;
}
