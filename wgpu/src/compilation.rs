//! wgpu's compilation messages in the core's terms. wgpu reports a message's
//! place in UTF-8 bytes (its WebGPU backend converts the browser's UTF-16
//! units); the core's carets count UTF-16 units, as WebGPU does. Plain Rust:
//! tested on the host.

use webgpu_guard_core::shader_diag::{CompilationMessage, MessageType};
use webgpu_guard_core::str_search::{part, rfind_byte};

/// A place in the source as wgpu gives it: 1-based line, and the span's byte
/// offset and byte length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteSpan {
    /// Line, 1-based.
    pub line_number: u32,
    /// Offset of the span from the start of the source, in bytes.
    pub offset: u32,
    /// Length of the span, in bytes.
    pub length: u32,
}

/// The core's message for wgpu's `message` of `kind` at `span` (`None`: no
/// place) in `source`. A span outside the source, or cutting a character,
/// is clamped to the nearest character boundary before it.
pub fn message_in_utf16(
    source: &str,
    kind: MessageType,
    message: &str,
    span: Option<ByteSpan>,
) -> CompilationMessage {
    let Some(span) = span else {
        return CompilationMessage {
            kind,
            message: message.to_string(),
            line_num: 0,
            line_pos: 0,
            offset: 0,
            length: 0,
        };
    };
    let start = floor_boundary(source, span.offset as usize);
    let end = floor_boundary(source, start.saturating_add(span.length as usize));
    let before = part(source, 0, start);
    let line_start = rfind_byte(before, b'\n').map_or(0, |i| i + 1);
    CompilationMessage {
        kind,
        message: message.to_string(),
        line_num: span.line_number,
        line_pos: utf16_len(part(source, line_start, start)) + 1,
        offset: utf16_len(before),
        length: utf16_len(part(source, start, end)),
    }
}

/// How many UTF-16 units `text` takes.
fn utf16_len(text: &str) -> u32 {
    text.encode_utf16().count() as u32
}

/// The largest character boundary of `text` at or before `index`.
fn floor_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;
    use webgpu_guard_core::shader_diag::format_message;

    #[test]
    fn a_caret_after_wide_characters_lands_under_the_token() {
        // "中文" is 6 bytes and 2 UTF-16 units; `oops` starts at byte 13 of line 2.
        let source = "fn main() {\n// 中文\nlet x = oops;\n}";
        let offset = source.find("oops").unwrap() as u32;
        let message = message_in_utf16(
            source,
            MessageType::Error,
            "unresolved identifier",
            Some(ByteSpan {
                line_number: 3,
                offset,
                length: 4,
            }),
        );
        assert_eq!(message.line_pos, 9);
        assert_eq!(message.length, 4);
        let text = format_message("shader", source, &message);
        assert!(text.contains("shader:3:9"), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        let source_line = lines
            .iter()
            .position(|l| l.contains("let x = oops;"))
            .unwrap();
        let caret = lines[source_line + 1];
        let column = caret.find('^').unwrap() - (lines[source_line].find("let").unwrap());
        assert_eq!(column, 8, "{text}");
    }

    #[test]
    fn a_span_on_a_line_with_wide_characters_before_it_counts_units_not_bytes() {
        let source = "let é = 1; let 中 = oops;";
        let offset = source.find("oops").unwrap() as u32;
        let message = message_in_utf16(
            source,
            MessageType::Error,
            "x",
            Some(ByteSpan {
                line_number: 1,
                offset,
                length: 4,
            }),
        );
        // 19 characters before `oops`, each one UTF-16 unit (22 bytes).
        assert_eq!(message.offset, 19);
        assert_eq!(message.line_pos, 20);
    }

    #[test]
    fn a_span_past_the_end_or_inside_a_character_is_clamped() {
        let source = "中";
        let inside = message_in_utf16(
            source,
            MessageType::Warning,
            "x",
            Some(ByteSpan {
                line_number: 1,
                offset: 1,
                length: 99,
            }),
        );
        assert_eq!((inside.offset, inside.length), (0, 1));
        let none = message_in_utf16(source, MessageType::Info, "x", None);
        assert_eq!(none.line_num, 0);
    }
}
