#!/usr/bin/env python3
"""Makes the generated glue (pkg/resumable_agent.js) survive a trapped WebAssembly instance.

A trap (out of memory, in practice) poisons the instance. wasm-bindgen-futures polls every future from a
microtask; a trap there escapes as an uncaught exception (Node exits) and no promise settles. This script:

1. runs that microtask callback inside a guard that hands a trap to the handler the package's front
   registers (`__raSetTrapHandler`), which rejects every call in flight and replaces the instance;
2. makes a closure of a replaced instance do nothing instead of throwing (a late `fetch` or timer of the old
   instance would otherwise end as an unhandled rejection);
3. lets `__wbg_reset_state` work for a module without a start function;
4. drops the default `new URL('resumable_agent_bg.wasm', import.meta.url)`: each entry of the package says
   where the .wasm is (pkg-template/load.js), and a bundler seeing that pattern in the glue that every entry
   imports would ship the file (or warn about `import.meta`) for entries that never fetch it;
5. takes a compiled module from another realm as one (an edge runtime's sandbox, as in Next.js, hands the
   package a `WebAssembly.Module` made outside it: `instanceof` fails, the instance is made all the same).

Each edit must match exactly once, so a wasm-bindgen upgrade that changes the glue fails the build instead
of silently dropping the guard.
"""
import re
import sys

EDITS = [
    ("queueMicrotask(getObject(arg0));", "queueMicrotask(__raGuarded(getObject(arg0)));"),
    ("throw new Error('Cannot invoke closure from previous WASM instance');", "return undefined;"),
    ("wasm.__wbindgen_start();", "wasm.__wbindgen_start?.();"),
    ("    if (!(module instanceof WebAssembly.Module)) {",
     "    if (!(module instanceof WebAssembly.Module) && Object.prototype.toString.call(module) !== '[object WebAssembly.Module]') {"),
]

# The default URL of the variant's .wasm (`resumable_agent_<variant>_bg.wasm`), dropped: see 4. above.
DEFAULT_URL = re.compile(r"module_or_path = new URL\('resumable_agent_\w+_bg\.wasm', import\.meta\.url\);")

APPENDIX = """
// ---- added by scripts/guard-glue.py ----
let __raOnTrap = null;
/** Registers what to do when the instance traps: `handler(error)`. */
export function __raSetTrapHandler(handler) { __raOnTrap = handler; }
function __raGuarded(run) {
    return () => {
        try {
            run();
        } catch (e) {
            if (__raOnTrap === null) throw e;
            __raOnTrap(e);
        }
    };
}
"""


def main(path):
    text = open(path, encoding="utf-8").read()
    for old, new in EDITS:
        n = text.count(old)
        if n != 1:
            sys.exit(f"guard-glue: expected exactly one {old!r} in {path}, found {n}")
        text = text.replace(old, new)
    text, n = DEFAULT_URL.subn("throw new Error('resumable-agent: the glue was started without its .wasm (load.js gives it)');", text)
    if n != 1:
        sys.exit(f"guard-glue: expected exactly one default .wasm URL in {path}, found {n}")
    if "export function __wbg_reset_state" not in text:
        sys.exit(f"guard-glue: {path} has no __wbg_reset_state (wasm-bindgen run without the flag?)")
    open(path, "w", encoding="utf-8").write(text + APPENDIX)


if __name__ == "__main__":
    main(sys.argv[1])
