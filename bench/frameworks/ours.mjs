// resumable-agent as a program imports it: 'resumable-agent' (W(n): ours-with.mjs).
import { agent, defineTool, InterruptError, isInterrupted, loadWasm, memoryUsage } from 'resumable-agent';
import { oursWith } from './ours-with.mjs';

export const label = 'ours (resumable-agent)';
export const { pauseW, runW } = oursWith({ agent, defineTool, InterruptError, isInterrupted });
export { loadWasm, memoryUsage };
