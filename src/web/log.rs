//! Console output, prefixed so the library's lines are easy to find. A console
//! method that throws (a page's hook gone wrong) loses its line and nothing
//! else: the call never throws through WebAssembly (`log.js`).

use wasm_bindgen::prelude::wasm_bindgen;

#[wasm_bindgen(module = "/src/web/log.js")]
extern "C" {
    fn write_line(level: &str, prefix: &str, line: &str);
}

/// The prefix of every line the library writes.
pub const PREFIX: &str = "[webgpu-guard]";

/// Writes an error line.
pub fn error(line: &str) {
    write_line("error", PREFIX, line);
}

/// Writes a warning line.
pub fn warn(line: &str) {
    write_line("warn", PREFIX, line);
}

/// Writes an information line.
pub fn info(line: &str) {
    write_line("info", PREFIX, line);
}

/// Writes a verbose line (`console.debug`, hidden by default in developer
/// tools).
pub fn debug(line: &str) {
    write_line("debug", PREFIX, line);
}
