// The smallest app in a runtime (Node, Deno, Bun): prints its outcome.
import { smallest } from './smallest.js';

console.log(await smallest());
