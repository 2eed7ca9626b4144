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
// recursion"). Either leaves the module's state mid-way. Never throws, whatever
// was thrown: `instanceof` on a revoked Proxy throws, and so may a `message`
// getter; a value that cannot be read is no trap (a trap is the engine's own
// error object).
export function is_trap(e) {
  try {
    if (typeof WebAssembly !== "undefined" && e instanceof WebAssembly.RuntimeError) return true;
    if (e === null || typeof e !== "object") return false;
    const message = String(e.message);
    return (e instanceof RangeError && /call stack/i.test(message))
      || (e.name === "InternalError" && /too much recursion/i.test(message));
  } catch (_) {
    return false;
  }
}

// The text of a thrown value: `name: message` for errors, a string as it is,
// else its string form. Never throws (a revoked Proxy, getters or a
// `toString` that throw): what cannot be read says so.
export function describe_value(e) {
  const read = (f) => { try { return String(f()); } catch (_) { return "?"; } };
  let isError = false;
  try { isError = e instanceof Error; } catch (_) { return "a value that cannot be read (a revoked Proxy?)"; }
  if (isError) return read(() => e.name) + ": " + read(() => e.message);
  if (typeof e === "string") return e;
  try { return String(e); } catch (_) {}
  try { return Object.prototype.toString.call(e); } catch (_) {}
  return "a value that cannot be read";
}
