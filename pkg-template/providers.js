// The providers: model functions over the providers' HTTP APIs, implemented in the core (Rust). A capability of its
// own: the .wasm variant a program loads has the providers only when it imports this module.
import { need } from './load.js';
import { BUILTIN_MODELS, Later, calls, optionsText, withLater } from './internal.js';

need('providers');

const wasm = calls({ async: ['modelComplete'], sync: ['providerSpec'] });

/** A model the core implements, as a function; `spec` is what the core made of its options. */
function builtinModel(spec) {
  const model = (request) => withLater(spec, (s) => wasm.modelComplete(s, request));
  BUILTIN_MODELS.set(model, spec);
  return model;
}

/** A provider's options as the core reads them; its AbortSignal stays here. */
function providerModel(kind, options) {
  const text = optionsText(options, `${kind}(options)`);
  const signal = options?.signal;
  return builtinModel(new Later(() => wasm.providerSpec(kind, text, signal)));
}

/** The Anthropic Messages API over fetch. */
export const anthropic = (options) => providerModel('anthropic', options);

/** OpenAI Chat Completions (and compatible servers) over fetch. */
export const openai = (options) => providerModel('openai', options);

/** The OpenAI Responses API (and Open Responses servers) over fetch; stateless by default (store: false). */
export const openaiResponses = (options) => providerModel('openai-responses', options);

/** The Gemini API over fetch; each thought signature is kept in the checkpoint on its part. */
export const gemini = (options) => providerModel('gemini', options);

/** Workers AI through its binding. */
export function workersAI(binding, options) {
  const text = optionsText(options, 'workersAI(binding, options)');
  return builtinModel(new Later(() => wasm.providerSpec('workers-ai', text, binding)));
}
