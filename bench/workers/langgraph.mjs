// Minimal Worker for the bundle-size and cold-start figures: each request runs W(1) with langgraph —
// prompt, pause on ask_user, checkpoint to a string, resume a fresh graph from it, final answer.
//
// Under the workerd/browser conditions `@langchain/langgraph` resolves to its web build, which (unlike its
// Node entry) does not set up AsyncLocalStorage; `interrupt()` needs it ("Called interrupt() outside the
// context of a graph" otherwise). LangChain's documented fix for Workers is to install one from
// node:async_hooks, which Workers provide under the nodejs_compat flag.
import { AsyncLocalStorage } from 'node:async_hooks';
import { AsyncLocalStorageProviderSingleton } from '@langchain/core/singletons';
import { runW } from '../frameworks/langgraph.mjs';
import { verifyRun } from '../lib/workload.mjs';
import { workerFor } from '../lib/worker.mjs';

AsyncLocalStorageProviderSingleton.initializeGlobalInstance(new AsyncLocalStorage());

const { step, worker } = workerFor(runW, verifyRun);
export { step };
export default worker;
