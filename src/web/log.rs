//! Console output, prefixed so the library's lines are easy to find.

/// The prefix of every line the library writes.
pub const PREFIX: &str = "[webgpu-guard]";

/// Writes an error line.
pub fn error(line: &str) {
    web_sys::console::error_1(&format!("{PREFIX} {line}").into());
}

/// Writes a warning line.
pub fn warn(line: &str) {
    web_sys::console::warn_1(&format!("{PREFIX} {line}").into());
}

/// Writes an information line.
pub fn info(line: &str) {
    web_sys::console::info_1(&format!("{PREFIX} {line}").into());
}
