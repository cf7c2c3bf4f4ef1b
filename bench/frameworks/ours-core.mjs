// resumable-agent through 'resumable-agent/core' (the core's .wasm alone; W(n): ours-with.mjs).
import { agent, defineTool, InterruptError, isInterrupted, loadWasm, memoryUsage } from 'resumable-agent/core';
import { oursWith } from './ours-with.mjs';

export const label = "ours (resumable-agent/core)";
export const { pauseW, runW } = oursWith({ agent, defineTool, InterruptError, isInterrupted });
export { loadWasm, memoryUsage };
