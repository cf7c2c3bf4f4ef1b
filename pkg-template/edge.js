// Edge runtimes of frameworks (Next.js edge routes and middleware, Vercel Edge Functions: the `edge-light`
// condition): the .wasm imported as a compiled module (`?module`), since edge runtimes do not compile bytes at run
// time; instantiated by the first call that needs it.
import wasmModule from './resumable_agent_bg.wasm?module';
import { setSource } from './load.js';

setSource({
  sync: () => wasmModule,
  where: () => 'the resumable_agent_bg.wasm?module import',
  fix: () => 'build the edge route with Next.js (webpack or Turbopack), which compiles `.wasm?module` imports; elsewhere use the Node runtime',
});

export * from './api.js';
