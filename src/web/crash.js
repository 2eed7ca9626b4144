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

// Whether `e` is a WebAssembly trap (a panic, an `unreachable`, a stack overflow).
export function is_trap(e) {
  return typeof WebAssembly !== "undefined" && e instanceof WebAssembly.RuntimeError;
}
