// A page whose .wasm is nowhere (loadWasm points at a file that does not exist): the app's own code still runs, and
// the first call rejects with WasmLoadError naming the URL, its status and the fix.
import { agent, scriptedModel, loadWasm, WasmLoadError } from 'resumable-agent';

const out = document.getElementById('out');
out.textContent = 'app started';
loadWasm(new URL('./no-such.wasm', document.baseURI)).catch(() => {});
agent({ model: scriptedModel(['never']) }).prompt('hi').then(
  (r) => { out.textContent = `result: ${r.text}`; },
  (e) => { out.textContent = `error: ${e instanceof WasmLoadError ? 'typed ' : ''}${e?.name}: status ${e?.status}: ${e?.message}`; },
);
