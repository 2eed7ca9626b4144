//! Shader diagnostics from `getCompilationInfo()`, formatted like a compiler:
//! `label:line:col type: message`, the source line, and a caret underline.
//!
//! WebGPU reports `linePos`, `offset` and `length` in UTF-16 code units. The
//! column in the header is in characters (Unicode scalar values), 1-based; the
//! underline is in display columns (Unicode width, as a monospace console shows
//! text: two for CJK and emoji, none for a combining mark), so the carets sit
//! under the span whatever the source holds. A tab before the span stays a tab
//! in the underline's padding, so the carets line up whatever the tab width.

use std::fmt;

use crate::str_search::{
    count_byte, find, find_byte, from, number, part, rfind_byte, split_at_byte,
};
use crate::text_width::columns;

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
    /// Underline width in display columns (at least 1, clamped to the line): a
    /// CJK character or an emoji in the span takes two carets, a combining mark
    /// none.
    pub caret_len: usize,
}

/// How many columns a monospace console gives `text` (Unicode width: CJK and
/// emoji 2, combining marks and other zero-width characters 0, a control
/// character such as a tab 1); the caret length of a span, at least 1.
fn caret_columns(text: &str) -> usize {
    columns(text).max(1)
}

/// Pushes `count` copies of `c` onto `out`.
fn push_repeated(out: &mut String, c: char, count: usize) {
    for _ in 0..count {
        out.push(c);
    }
}

/// The padding that puts a caret under the column just after `before` (the
/// line up to the span): one space per display column, and each tab kept as a
/// tab.
fn caret_padding(before: &str) -> String {
    let mut pad = String::new();
    let mut rest = Some(before);
    while let Some(text) = rest {
        let (run, after) = split_at_byte(text, b'\t');
        push_repeated(&mut pad, ' ', columns(run));
        if after.is_some() {
            pad.push('\t');
        }
        rest = after;
    }
    pad
}

/// Whether `c` can be part of a WGSL token the caret underlines: an ASCII
/// letter, digit or `_`, or anything beyond ASCII but WGSL's blank spaces.
fn in_token(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || (!c.is_ascii() && !is_wgsl_blank(c))
}

/// The blank-space characters WGSL admits beyond ASCII.
fn is_wgsl_blank(c: char) -> bool {
    matches!(
        c,
        '\u{85}' | '\u{200E}' | '\u{200F}' | '\u{2028}' | '\u{2029}'
    )
}

/// Converts a UTF-16 offset into a byte index of `text` (clamped to its length).
#[doc(hidden)]
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
    let start = rfind_byte(part(source, 0, byte), b'\n').map_or(0, |i| i + 1);
    let end = find_byte(from(source, byte), b'\n').map_or(source.len(), |i| byte + i);
    (start, without_cr(source, start, end).max(start))
}

/// The end of the line `start..end` of `source` without the `\r` of a CRLF
/// line break.
fn without_cr(source: &str, start: usize, end: usize) -> usize {
    match source.as_bytes().get(end.wrapping_sub(1)) {
        Some(b'\r') if end > start => end - 1,
        _ => end,
    }
}

/// The position a compiler wrote into its message text (naga, in Firefox:
/// `┌─ wgsl:LINE:COLUMN`), as (line, character column), 1-based.
#[doc(hidden)]
pub fn position_in_text(message: &str) -> Option<(u32, u32)> {
    let mut rest = message;
    while let Some(at) = find(rest, "wgsl:") {
        let after = from(rest, at + 5);
        // `LINE:COLUMN`, the column's digits perhaps followed by more text.
        let (line, column) = match split_at_byte(after, b':') {
            (line, Some(rest)) => {
                let (column, _) = split_at_byte(rest, b':');
                let digits = column.bytes().take_while(u8::is_ascii_digit).count();
                (number(line), number(part(column, 0, digits)))
            }
            (_, None) => (None, None),
        };
        if let (Some(line), Some(column)) = (line, column) {
            if line > 0 && column > 0 {
                return Some((line, column));
            }
        }
        rest = after;
    }
    None
}

/// Whether the structured fields are the placeholder some engines give (line 1,
/// column 1, offset 0, length 0) while the text names another position.
fn placeholder_position(msg: &CompilationMessage) -> Option<(u32, u32)> {
    let placeholder = msg.line_num <= 1 && msg.line_pos <= 1 && msg.offset == 0 && msg.length == 0;
    position_in_text(&msg.message).filter(|_| placeholder)
}

/// The byte range of line `line` (1-based) of `source`, without its line break.
fn line_range(source: &str, line: u32) -> Option<(usize, usize)> {
    let mut line_start = 0usize;
    for _ in 1..line {
        line_start = find_byte(from(source, line_start), b'\n').map(|i| line_start + i + 1)?;
    }
    let line_end =
        find_byte(from(source, line_start), b'\n').map_or(source.len(), |i| line_start + i);
    Some((line_start, without_cr(source, line_start, line_end)))
}

/// Locates a (line, character column) position: the byte where it starts.
fn byte_of_char_position(source: &str, line: u32, column: u32) -> Option<usize> {
    let (line_start, line_end) = line_range(source, line)?;
    let offset = part(source, line_start, line_end)
        .char_indices()
        .nth(column.saturating_sub(1) as usize)
        .map(|(i, _)| i)
        .unwrap_or(line_end - line_start);
    Some(line_start + offset)
}

/// Finds a message in `source`: by `offset` when it lands inside the source, else by
/// `line_num`/`line_pos`, else (when the structured fields are only a placeholder)
/// by the position written in the message text. `None` for messages without a
/// position (line 0).
#[doc(hidden)]
pub fn locate(source: &str, msg: &CompilationMessage) -> Option<Location> {
    if let Some((line, column)) = placeholder_position(msg) {
        let start_byte = byte_of_char_position(source, line, column)?;
        let (line_start, line_end) = line_bounds(source, start_byte);
        let rest = part(source, start_byte, line_end);
        // Beyond ASCII, WGSL admits identifier characters, comments and a few
        // blank-space characters (U+0085, U+200E, U+200F, U+2028, U+2029): all
        // but those count as part of the token.
        let token_bytes = rest.find(|c: char| !in_token(c)).unwrap_or(rest.len());
        // A position on no token (an operator, the line's end) underlines one
        // character.
        let token_bytes = match token_bytes {
            0 => rest.chars().next().map_or(0, char::len_utf8),
            n => n,
        };
        return Some(Location {
            line,
            column: part(source, line_start, start_byte).chars().count() as u32 + 1,
            line_bytes: (line_start, line_end),
            caret_len: caret_columns(part(rest, 0, token_bytes)),
        });
    }
    if msg.line_num == 0 {
        return None;
    }
    let total_utf16: usize = source.chars().map(char::len_utf16).sum();
    let line_of = |byte: usize| count_byte(part(source, 0, byte), b'\n') as u32 + 1;
    let by_offset = if (msg.offset as usize) <= total_utf16 {
        let byte = utf16_to_byte(source, msg.offset as usize);
        (line_of(byte) == msg.line_num).then_some(byte)
    } else {
        None
    };
    let start_byte = match by_offset {
        Some(byte) => byte,
        None => {
            let (line_start, line_end) = line_range(source, msg.line_num)?;
            let line = part(source, line_start, line_end);
            line_start + utf16_to_byte(line, msg.line_pos.saturating_sub(1) as usize)
        }
    };
    let (line_start, line_end) = line_bounds(source, start_byte);
    let line = line_of(line_start);
    let column = part(source, line_start, start_byte).chars().count() as u32 + 1;
    let end_utf16 = part(source, 0, start_byte)
        .chars()
        .map(char::len_utf16)
        .sum::<usize>()
        .saturating_add(msg.length as usize);
    let end_byte = utf16_to_byte(source, end_utf16)
        .min(line_end)
        .max(start_byte);
    let caret_len = caret_columns(part(source, start_byte, end_byte));
    Some(Location {
        line,
        column,
        line_bytes: (line_start, line_end),
        caret_len,
    })
}

/// The first non-empty line of a compiler message: naga (Firefox) starts with a
/// line break and appends its own source excerpt, which the caret replaces.
#[doc(hidden)]
pub fn headline(message: &str) -> &str {
    let mut rest = Some(message);
    while let Some(text) = rest {
        let (line, after) = split_at_byte(text, b'\n');
        let line = line.trim();
        if !line.is_empty() {
            return line;
        }
        rest = after;
    }
    ""
}

/// Formats one message: header, source line, caret underline.
#[doc(hidden)]
pub fn format_message(label: &str, source: &str, msg: &CompilationMessage) -> String {
    let text = headline(&msg.message);
    match locate(source, msg) {
        None => format!("{label}: {}: {}", msg.kind.as_str(), text),
        Some(loc) => {
            let line_text = part(source, loc.line_bytes.0, loc.line_bytes.1);
            let before = line_text
                .char_indices()
                .nth(loc.column as usize - 1)
                .map_or(line_text, |(byte, _)| part(line_text, 0, byte));
            let mut underline = caret_padding(before);
            push_repeated(&mut underline, '^', loc.caret_len);
            format!(
                "{label}:{}:{} {}: {}\n  {}\n  {}",
                loc.line,
                loc.column,
                msg.kind.as_str(),
                text,
                line_text,
                underline
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
        for (index, message) in self.formatted.iter().enumerate() {
            if index > 0 {
                f.write_str("\n")?;
            }
            f.write_str(message)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real messages for `let x: f32 = ;` on line 3 (column 16 in characters).
    const SOURCE: &str = "@compute @workgroup_size(1)\nfn main() {\n  let x: f32 = ;\n}\n";
    /// Firefox 153 (naga): the text repeats the position and an excerpt.
    const NAGA: &str = "\nShader 'm' parsing error: expected expression, found \";\"\n  ┌─ wgsl:3:16\n  │\n3 │   let x: f32 = ;\n  │                ^ expected expression\n\n";
    /// Chromium 156 (Tint).
    const TINT: &str = "missing initializer for 'let' declaration";

    fn message(text: &str, line: u32, pos: u32, offset: u32, length: u32) -> CompilationMessage {
        CompilationMessage {
            kind: MessageType::Error,
            message: text.into(),
            line_num: line,
            line_pos: pos,
            offset,
            length,
        }
    }

    #[test]
    fn both_engines_messages_point_at_the_same_character() {
        let tint = format_message("m", SOURCE, &message(TINT, 3, 16, 55, 1));
        let naga = format_message("m", SOURCE, &message(NAGA, 3, 16, 55, 1));
        // Naga's placeholder fields: the position comes from its text.
        let placeholder = format_message("m", SOURCE, &message(NAGA, 1, 1, 0, 0));
        for text in [&tint, &naga, &placeholder] {
            let lines: Vec<&str> = text.lines().collect();
            assert!(lines[0].starts_with("m:3:16 error: "), "{text}");
            assert_eq!(lines[1], "    let x: f32 = ;");
            assert_eq!(lines[2], "                 ^");
            assert_eq!(lines.len(), 3, "{text}");
        }
        assert!(naga
            .lines()
            .next()
            .unwrap()
            .ends_with("expected expression, found \";\""));
        assert_eq!(position_in_text(NAGA), Some((3, 16)));
        assert_eq!(position_in_text(TINT), None);
        assert_eq!(position_in_text("wgsl:0:0 and wgsl:x:1"), None);
    }

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
    fn a_crlf_line_reads_as_its_lf_twin_and_a_huge_length_does_not_overflow() {
        for (kind, m) in [
            (
                "line_pos past the end",
                msg(MessageType::Error, 1, 4, 99, 1),
            ),
            ("offset on the break", msg(MessageType::Error, 1, 3, 2, 1)),
        ] {
            let crlf = format_message("w", "ab\r\ncd\r\n", &m);
            let lf = format_message("w", "ab\ncd\n", &m);
            assert_eq!(crlf.lines().next(), lf.lines().next(), "{kind}: {crlf:?}");
        }
        let huge = msg(MessageType::Error, 2, 2, 4, u32::MAX);
        let text = format_message("w", "ab\ncd\n", &huge);
        assert!(text.starts_with("w:2:2 error"), "{text}");
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
    fn non_ascii_columns_count_characters_not_utf16_units() {
        // "é" is 1 UTF-16 unit, "😀" is 2: the identifier after them starts at UTF-16
        // position 11 but character column 10, and display column 11 (the emoji
        // is two columns wide).
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
            "m:2:10 error: something\n  let é😀 = bad;\n            ^^^"
        );
    }

    #[test]
    fn span_over_an_emoji_is_one_caret_per_column() {
        let src = "x 😀 y";
        // the emoji: offset 2, length 2 UTF-16 units, one character, two columns.
        let loc = locate(src, &msg(MessageType::Warning, 1, 3, 2, 2)).unwrap();
        assert_eq!((loc.column, loc.caret_len), (3, 2));
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

    /// A message for the span of `token` at its first place in the one-line
    /// `src`, with positions as WebGPU gives them (UTF-16).
    fn at(src: &str, token: &str) -> CompilationMessage {
        let before = &src[..src.find(token).unwrap()];
        let offset = before.encode_utf16().count() as u32;
        let length = token.encode_utf16().count() as u32;
        msg(MessageType::Error, 1, offset + 1, offset, length)
    }

    /// The source line and caret underline of a formatted message, without the
    /// two spaces of indent.
    fn underline(label: &str, src: &str, m: &CompilationMessage) -> (String, String, String) {
        let text = format_message(label, src, m);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text:?}");
        (
            lines[0].to_string(),
            lines[1].strip_prefix("  ").unwrap().to_string(),
            lines[2].strip_prefix("  ").unwrap().to_string(),
        )
    }

    #[test]
    fn cjk_before_the_error_pads_two_columns_each() {
        let src = "let 名前 = bad;";
        let (header, line, carets) = underline("m", src, &at(src, "bad"));
        // The header keeps the character column: "bad" is the 10th character.
        assert!(header.starts_with("m:1:10 error: "), "{header}");
        assert_eq!(line, src);
        // "let " 4 + "名前" 4 + " = " 3 columns.
        assert_eq!(carets, format!("{}^^^", " ".repeat(11)));
    }

    #[test]
    fn an_emoji_before_the_error_pads_two_columns() {
        let src = "let 😀 = bad;";
        let (header, _, carets) = underline("m", src, &at(src, "bad"));
        assert!(header.starts_with("m:1:9 error: "), "{header}");
        assert_eq!(carets, format!("{}^^^", " ".repeat(9)));
    }

    #[test]
    fn a_combining_mark_before_the_error_pads_nothing() {
        // "e" and U+0301 COMBINING ACUTE ACCENT: two characters, one column.
        let src = "let e\u{301} = bad;";
        let (header, _, carets) = underline("m", src, &at(src, "bad"));
        assert!(header.starts_with("m:1:10 error: "), "{header}");
        assert_eq!(carets, format!("{}^^^", " ".repeat(8)));
    }

    #[test]
    fn a_wide_token_gets_one_caret_per_column() {
        let src = "let x = 名前;";
        let m = at(src, "名前");
        let (header, _, carets) = underline("m", src, &m);
        assert!(header.starts_with("m:1:9 error: "), "{header}");
        assert_eq!(carets, format!("{}^^^^", " ".repeat(8)));
        assert_eq!(locate(src, &m).unwrap().caret_len, 4);
        // The same token found by the position naga writes in its text, with the
        // structured fields left as placeholders.
        let naga = CompilationMessage {
            message: "\nexpected expression\n  ┌─ wgsl:1:9\n".into(),
            ..msg(MessageType::Error, 1, 1, 0, 0)
        };
        let (header, _, carets) = underline("m", src, &naga);
        assert_eq!(header, "m:1:9 error: expected expression");
        assert_eq!(carets, format!("{}^^^^", " ".repeat(8)));
        // A token that is only a combining mark still gets one caret.
        let src = "x = e\u{301};";
        let m = at(src, "\u{301}");
        assert_eq!(underline("m", src, &m).2, format!("{}^", " ".repeat(5)));
    }

    #[test]
    fn a_blank_space_beyond_ascii_ends_the_token() {
        assert!(in_token('名') && in_token('_') && in_token('a'));
        for blank in [
            '\u{85}', '\u{200E}', '\u{200F}', '\u{2028}', '\u{2029}', ' ', ';',
        ] {
            assert!(!in_token(blank), "{:X}", blank as u32);
        }
    }

    #[test]
    fn tabs_stay_tabs_between_wide_characters() {
        let src = "\t名 = z;\t😀\tw";
        let (header, _, carets) = underline("t", src, &at(src, "z"));
        assert!(header.starts_with("t:1:6 error: "), "{header}");
        assert_eq!(carets, "\t     ^");
        let (header, _, carets) = underline("t", src, &at(src, "w"));
        assert!(header.starts_with("t:1:11 error: "), "{header}");
        // "名 = z;" is 7 columns, the emoji 2.
        assert_eq!(carets, "\t       \t  \t^");
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
