//! Message truncation and sanitising for logs and telemetry.

/// The longest message telemetry carries, in characters.
pub const TELEMETRY_MAX_CHARS: usize = 400;

/// A sanitising step an application sets for telemetry.
pub type Sanitizer = Box<dyn Fn(&str) -> String>;

/// Cuts `text` to at most `max_chars` characters (never inside a character),
/// ending with `…` when something was cut.
pub fn truncate_chars(text: &str, max_chars: usize) -> String {
    if max_chars == 0 {
        return String::new();
    }
    match text.char_indices().nth(max_chars) {
        None => text.to_string(),
        Some(_) => {
            let keep: String = text.chars().take(max_chars - 1).collect();
            keep + "…"
        }
    }
}

/// Keeps the first line only: WebGPU implementations append WGSL source excerpts
/// and call stacks on the following lines.
pub fn first_line_only(text: &str) -> String {
    let first = text.lines().next().unwrap_or("");
    if text.trim_end().contains('\n') {
        format!("{first} […]")
    } else {
        first.to_string()
    }
}

/// Replaces every double-quoted span (object labels, in Dawn's messages) and every
/// backtick-quoted span (WGSL fragments) with `"…"` / `` `…` ``.
pub fn redact_quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut open: Option<char> = None;
    for c in text.chars() {
        match open {
            Some(q) if c == q => {
                out.push('…');
                out.push(c);
                open = None;
            }
            Some(_) => {}
            None if c == '"' || c == '`' => {
                out.push(c);
                open = Some(c);
            }
            None => out.push(c),
        }
    }
    if open.is_some() {
        out.push('…');
    }
    out
}

/// The strict sanitiser: first line only, labels and WGSL fragments redacted.
pub fn strict(text: &str) -> String {
    redact_quoted(&first_line_only(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_respects_characters_and_marks_the_cut() {
        assert_eq!(truncate_chars("short", 400), "short");
        let long = "é".repeat(500);
        let cut = truncate_chars(&long, 400);
        assert_eq!(cut.chars().count(), 400);
        assert!(cut.ends_with('…'));
        assert_eq!(truncate_chars("abc", 0), "");
        assert_eq!(truncate_chars("abc", 3), "abc");
        assert_eq!(truncate_chars("abcd", 3), "ab…");
    }

    #[test]
    fn redaction_hides_labels_and_code() {
        assert_eq!(
            redact_quoted("[Buffer \"user-42-secret\"] used `let x = secret;`"),
            "[Buffer \"…\"] used `…`"
        );
        assert_eq!(redact_quoted("unterminated \"abc"), "unterminated \"…");
    }

    #[test]
    fn first_line_drops_source_excerpts() {
        assert_eq!(
            first_line_only("error: bad\n  let x = 1;\n      ^"),
            "error: bad […]"
        );
        assert_eq!(first_line_only("one line"), "one line");
        assert_eq!(
            strict("[Texture \"t\"] bad\ncode"),
            "[Texture \"…\"] bad […]"
        );
    }
}
