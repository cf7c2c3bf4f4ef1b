// Browsers and bundlers: fetch the .wasm next to this module (top-level await, so importers need no init call).
import init from './resumable_agent.js';

await init({ module_or_path: new URL('./resumable_agent_bg.wasm', import.meta.url) });

export * from './api.js';
