// Calls `f`; returns what it threw, or `undefined` (a thrown `undefined` reads
// as `null`). A Rust panic is a WebAssembly trap: it arrives here as a
// `WebAssembly.RuntimeError`.
export function guard_call(f) {
  try {
    f();
    return undefined;
  } catch (e) {
    return e === undefined ? null : e;
  }
}

// Whether `e` is a WebAssembly trap (a panic, an `unreachable`) or a stack
// overflow, which engines report as their own errors: V8 a RangeError
// ("Maximum call stack size exceeded"), SpiderMonkey an InternalError ("too much
// recursion"). Either leaves the module's state mid-way.
export function is_trap(e) {
  if (typeof WebAssembly !== "undefined" && e instanceof WebAssembly.RuntimeError) return true;
  if (e === null || typeof e !== "object") return false;
  // Never throws, whatever was thrown (a `message` getter may throw).
  try {
    const message = String(e.message);
    return (e instanceof RangeError && /call stack/i.test(message))
      || (e.name === "InternalError" && /too much recursion/i.test(message));
  } catch (_) {
    return false;
  }
}
