// Cloudflare Workers (wrangler, workerd, Miniflare): the .wasm imported as a compiled WebAssembly.Module (how
// Workers take WebAssembly: they do not compile bytes at run time), instantiated by the first call that needs it.
import wasmModule from './resumable_agent_bg.wasm';
import { setSource } from './load.js';

setSource({
  sync: () => wasmModule,
  where: () => 'the resumable_agent_bg.wasm module of the Worker',
  fix: () => 'bundle the Worker with wrangler (it uploads .wasm imports as modules); with another bundler keep `import ... from "./resumable_agent_bg.wasm"` as a module import',
});

export * from './api.js';
