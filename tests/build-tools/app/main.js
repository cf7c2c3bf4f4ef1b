// A page: the app's own code runs first (it says so), then the smallest app; the outcome, or the error's name and
// message, is the page's text. #checked says when a tool's bad definition was refused: at once where the package
// can compile its .wasm synchronously (inlined), or by the first call that needs it where the .wasm is fetched.
import { defineTool } from 'resumable-agent';
import { smallest } from './smallest.js';

const out = document.getElementById('out');
out.textContent = 'app started';
try {
  defineTool({ name: 'not a tool name!', handle: () => 1 });
  document.getElementById('checked').textContent = 'checked by the first call';
} catch (e) {
  document.getElementById('checked').textContent = `refused at once (${e.name})`;
}
smallest().then(
  (text) => { out.textContent = `result: ${text}`; },
  (e) => { out.textContent = `error: ${e?.name}: ${e?.message}`; },
);
