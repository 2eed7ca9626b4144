// The JavaScript half of log.rs: one console line, written so that nothing
// thrown reaches WebAssembly. A page may replace console methods with hooks,
// and a hook that throws must not stop the library's caller half-way: the
// line is lost, nothing else.
export function write_line(level, prefix, line) {
  try {
    console[level](prefix + " " + line);
  } catch (_) {
    // The console threw (a hook, or no such method): the line is dropped.
  }
}
