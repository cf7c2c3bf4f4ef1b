// Node (>= 18): read the .wasm next to this file and instantiate it synchronously on import.
import { readFileSync } from 'node:fs';
import { initSync } from './resumable_agent.js';

initSync({ module: readFileSync(new URL('./resumable_agent_bg.wasm', import.meta.url)) });

export * from './api.js';
export { fileSaver } from './file-saver.js';
