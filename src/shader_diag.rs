//! Shader diagnostics from `getCompilationInfo()`, formatted like a compiler:
//! `label:line:col type: message`, the source line, and a caret underline.
//!
//! WebGPU reports `linePos`, `offset` and `length` in UTF-16 code units. Columns
//! and carets here are in characters (Unicode scalar values), so they stay right
//! for accented letters, CJK and emoji in the source.

use std::fmt;

/// `GPUCompilationMessage.type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageType {
    /// Compilation failed.
    Error,
    /// A warning (uniformity, unused code...).
    Warning,
    /// Information.
    Info,
}

impl MessageType {
    /// The spec's string.
    pub fn as_str(self) -> &'static str {
        match self {
            MessageType::Error => "error",
            MessageType::Warning => "warning",
            MessageType::Info => "info",
        }
    }

    /// Parses the spec's string; anything unknown is `Info`.
    pub fn parse(text: &str) -> Self {
        match text {
            "error" => MessageType::Error,
            "warning" => MessageType::Warning,
            _ => MessageType::Info,
        }
    }
}

/// One compiler message, with positions as WebGPU reports them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompilationMessage {
    /// Error, warning or info.
    pub kind: MessageType,
    /// The compiler's text.
    pub message: String,
    /// Line, 1-based; 0 when the message has no position.
    pub line_num: u32,
    /// Position in the line, 1-based, in UTF-16 code units.
    pub line_pos: u32,
    /// Offset from the start of the source, in UTF-16 code units.
    pub offset: u32,
    /// Length of the span, in UTF-16 code units.
    pub length: u32,
}

/// A message's place in the source, in characters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location {
    /// Line, 1-based.
    pub line: u32,
    /// Column, 1-based, in characters.
    pub column: u32,
    /// Byte range of the line in the source (without its line break).
    pub line_bytes: (usize, usize),
    /// Underline width in characters (at least 1, clamped to the line).
    pub caret_len: usize,
}

/// Converts a UTF-16 offset into a byte index of `text` (clamped to its length).
pub fn utf16_to_byte(text: &str, utf16_offset: usize) -> usize {
    let mut units = 0usize;
    for (byte, c) in text.char_indices() {
        if units >= utf16_offset {
            return byte;
        }
        units += c.len_utf16();
    }
    text.len()
}

fn line_bounds(source: &str, byte: usize) -> (usize, usize) {
    let start = source[..byte].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let end = source[byte..]
        .find('\n')
        .map(|i| byte + i)
        .unwrap_or(source.len());
    let end = if end > start && source.as_bytes()[end - 1] == b'\r' {
        end - 1
    } else {
        end
    };
    (start, end.max(start))
}

/// Finds a message in `source`: by `offset` when it lands inside the source, else by
/// `line_num`/`line_pos`. `None` for messages without a position (line 0).
pub fn locate(source: &str, msg: &CompilationMessage) -> Option<Location> {
    if msg.line_num == 0 {
        return None;
    }
    let total_utf16: usize = source.chars().map(char::len_utf16).sum();
    let line_of = |byte: usize| source[..byte].matches('\n').count() as u32 + 1;
    let by_offset = if (msg.offset as usize) <= total_utf16 {
        let byte = utf16_to_byte(source, msg.offset as usize);
        (line_of(byte) == msg.line_num).then_some(byte)
    } else {
        None
    };
    let start_byte = match by_offset {
        Some(byte) => byte,
        None => {
            let mut line_start = 0usize;
            for _ in 1..msg.line_num {
                line_start = source[line_start..]
                    .find('\n')
                    .map(|i| line_start + i + 1)?;
            }
            let line_end = source[line_start..]
                .find('\n')
                .map(|i| line_start + i)
                .unwrap_or(source.len());
            let line = &source[line_start..line_end];
            line_start + utf16_to_byte(line, msg.line_pos.saturating_sub(1) as usize)
        }
    };
    let (line_start, line_end) = line_bounds(source, start_byte);
    let line = line_of(line_start);
    let column = source[line_start..start_byte].chars().count() as u32 + 1;
    let end_utf16 = source[..start_byte]
        .chars()
        .map(char::len_utf16)
        .sum::<usize>()
        + msg.length as usize;
    let end_byte = utf16_to_byte(source, end_utf16)
        .min(line_end)
        .max(start_byte);
    let caret_len = source[start_byte..end_byte].chars().count().max(1);
    Some(Location {
        line,
        column,
        line_bytes: (line_start, line_end),
        caret_len,
    })
}

/// Formats one message: header, source line, caret underline.
pub fn format_message(label: &str, source: &str, msg: &CompilationMessage) -> String {
    match locate(source, msg) {
        None => format!("{label}: {}: {}", msg.kind.as_str(), msg.message),
        Some(loc) => {
            let line_text = &source[loc.line_bytes.0..loc.line_bytes.1];
            let pad: String = line_text
                .chars()
                .take(loc.column as usize - 1)
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            format!(
                "{label}:{}:{} {}: {}\n  {}\n  {}{}",
                loc.line,
                loc.column,
                msg.kind.as_str(),
                msg.message,
                line_text,
                pad,
                "^".repeat(loc.caret_len)
            )
        }
    }
}

/// Every message of one shader module, formatted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShaderDiagnostics {
    /// The module's label.
    pub label: String,
    /// The raw messages.
    pub messages: Vec<CompilationMessage>,
    /// The formatted messages, one per raw message.
    pub formatted: Vec<String>,
}

impl ShaderDiagnostics {
    /// Formats `messages` reported for the module `label` compiled from `source`.
    pub fn new(label: &str, source: &str, messages: Vec<CompilationMessage>) -> Self {
        let formatted = messages
            .iter()
            .map(|m| format_message(label, source, m))
            .collect();
        ShaderDiagnostics {
            label: label.to_string(),
            messages,
            formatted,
        }
    }

    /// Number of messages of `kind`.
    pub fn count(&self, kind: MessageType) -> usize {
        self.messages.iter().filter(|m| m.kind == kind).count()
    }

    /// Whether compilation failed.
    pub fn has_errors(&self) -> bool {
        self.count(MessageType::Error) > 0
    }

    /// Whether there is nothing to report.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }
}

impl fmt::Display for ShaderDiagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.formatted.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(kind: MessageType, line: u32, pos: u32, offset: u32, length: u32) -> CompilationMessage {
        CompilationMessage {
            kind,
            message: "something".into(),
            line_num: line,
            line_pos: pos,
            offset,
            length,
        }
    }

    #[test]
    fn ascii_error_gets_line_column_and_caret() {
        let src = "fn main() {\n  let x = foo;\n}\n";
        // "foo" is at line 2, column 11; offset 12 + 10 = 22.
        let text = format_message("scene", src, &msg(MessageType::Error, 2, 11, 22, 3));
        assert_eq!(
            text,
            "scene:2:11 error: something\n    let x = foo;\n            ^^^"
        );
    }

    #[test]
    fn non_ascii_columns_and_carets_count_characters_not_utf16_units() {
        // "é" is 1 UTF-16 unit, "😀" is 2: the identifier after them starts at UTF-16
        // position 15 but character column 14.
        let src = "// é😀 comment\nlet é😀 = bad;\n";
        let line2_start_utf16 = "// é😀 comment\n".encode_utf16().count() as u32;
        let bad_pos_utf16 = "let é😀 = ".encode_utf16().count() as u32; // 10
        let m = msg(
            MessageType::Error,
            2,
            bad_pos_utf16 + 1,
            line2_start_utf16 + bad_pos_utf16,
            3,
        );
        let loc = locate(src, &m).unwrap();
        assert_eq!(loc.line, 2);
        assert_eq!(loc.column, 10);
        assert_eq!(loc.caret_len, 3);
        let text = format_message("m", src, &m);
        assert_eq!(
            text,
            "m:2:10 error: something\n  let é😀 = bad;\n           ^^^"
        );
    }

    #[test]
    fn span_over_an_emoji_is_one_caret_per_character() {
        let src = "x 😀 y";
        // the emoji: offset 2, length 2 UTF-16 units, one character.
        let loc = locate(src, &msg(MessageType::Warning, 1, 3, 2, 2)).unwrap();
        assert_eq!((loc.column, loc.caret_len), (3, 1));
    }

    #[test]
    fn falls_back_to_line_and_position_when_offset_is_out_of_range() {
        let src = "a\nbé c\n";
        let m = msg(MessageType::Warning, 2, 4, 999, 1);
        let loc = locate(src, &m).unwrap();
        assert_eq!((loc.line, loc.column, loc.caret_len), (2, 4, 1));
    }

    #[test]
    fn line_zero_messages_have_no_source_line() {
        let m = msg(MessageType::Info, 0, 0, 0, 0);
        assert_eq!(format_message("lbl", "code", &m), "lbl: info: something");
    }

    #[test]
    fn zero_length_gets_one_caret_and_long_spans_stop_at_line_end() {
        let src = "abc\ndef";
        let loc = locate(src, &msg(MessageType::Error, 1, 2, 1, 0)).unwrap();
        assert_eq!(loc.caret_len, 1);
        let loc = locate(src, &msg(MessageType::Error, 1, 2, 1, 50)).unwrap();
        assert_eq!(loc.caret_len, 2);
    }

    #[test]
    fn tabs_are_kept_in_the_caret_padding() {
        let src = "\tlet y = z;";
        let text = format_message("t", src, &msg(MessageType::Error, 1, 10, 9, 1));
        assert!(text.ends_with("\n  \t        ^"), "{text:?}");
    }

    #[test]
    fn multi_message_diagnostics_count_by_kind() {
        let src = "a\nb\nc";
        let d = ShaderDiagnostics::new(
            "multi",
            src,
            vec![
                msg(MessageType::Warning, 1, 1, 0, 1),
                msg(MessageType::Error, 3, 1, 4, 1),
                msg(MessageType::Info, 0, 0, 0, 0),
            ],
        );
        assert!(d.has_errors());
        assert_eq!(d.count(MessageType::Warning), 1);
        assert_eq!(d.formatted.len(), 3);
        assert!(d.formatted[1].starts_with("multi:3:1 error"));
        assert_eq!(d.to_string().lines().count(), 3 + 3 + 1);
    }

    #[test]
    fn crlf_lines_do_not_show_the_carriage_return() {
        let src = "ab\r\ncd\r\n";
        let text = format_message("w", src, &msg(MessageType::Error, 2, 2, 5, 1));
        assert_eq!(text, "w:2:2 error: something\n  cd\n   ^");
    }
}
