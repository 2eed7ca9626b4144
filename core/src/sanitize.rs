//! Message truncation and sanitising for logs and telemetry.

use std::borrow::Cow;
use std::cell::Cell;

use crate::fault::Fault;
use crate::str_search::contains;

/// The longest message telemetry carries, in characters.
pub const TELEMETRY_MAX_CHARS: usize = 400;

/// A sanitising step an application sets for telemetry.
pub type Sanitizer = Box<dyn Fn(&str) -> String>;

/// A fault as telemetry may see it: its message, object label and phase (and
/// those of its related faults) passed through the application's sanitiser.
/// Made before the fault log is touched, so that the sanitiser, code the
/// library does not own, runs with nothing of the log lent; the fault log's
/// telemetry path takes only this type, so an unsanitised fault cannot reach
/// the application's sink through it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sanitized<'a>(Cow<'a, Fault>);

impl<'a> Sanitized<'a> {
    /// `fault` through `sanitize`; without one, the fault itself, borrowed
    /// (nothing is copied on the path every fault takes). The object label is
    /// the one telemetry groups by: the fault's own, or the one its message
    /// quotes, sanitised.
    pub fn new(fault: &'a Fault, sanitize: Option<&dyn Fn(&str) -> String>) -> Self {
        match sanitize {
            None => Sanitized(Cow::Borrowed(fault)),
            Some(sanitize) => {
                let mut clean = fault.clone();
                sanitize_in_place(&mut clean, sanitize);
                Sanitized(Cow::Owned(clean))
            }
        }
    }

    /// The sanitised fault.
    pub fn fault(&self) -> &Fault {
        &self.0
    }
}

/// What telemetry gets in place of a text that arrived from inside the
/// sanitiser nested [`SANITIZER_DEPTH`] deep (it is not run on it again).
pub const SANITIZER_REPORTED: &str = "[reported by the sanitiser]";

/// How deep runs of the sanitiser may nest (a fault it reports is sanitised
/// by it too, up to this depth).
pub const SANITIZER_DEPTH: u32 = 4;

/// `fault` through `sanitize`, which may report faults into the sink that
/// runs it, and so run again inside itself: `depth` counts the runs under
/// way (one per fault sink), and past [`SANITIZER_DEPTH`] a text reaches
/// telemetry as [`SANITIZER_REPORTED`] and the recursion ends.
pub fn sanitized_nested<'a>(
    fault: &'a Fault,
    sanitize: &dyn Fn(&str) -> String,
    depth: &Cell<u32>,
) -> Sanitized<'a> {
    Sanitized::new(
        fault,
        Some(&|text: &str| sanitized_text_nested(text, sanitize, depth)),
    )
}

/// `text` (a fault's message, an adapter's name) through `sanitize`, nested
/// as [`sanitized_nested`] says.
pub fn sanitized_text_nested(
    text: &str,
    sanitize: &dyn Fn(&str) -> String,
    depth: &Cell<u32>,
) -> String {
    let runs = depth.get();
    if runs >= SANITIZER_DEPTH {
        return SANITIZER_REPORTED.to_string();
    }
    depth.set(runs + 1);
    let clean = sanitize(text);
    depth.set(runs);
    clean
}

fn sanitize_in_place(fault: &mut Fault, sanitize: &dyn Fn(&str) -> String) {
    fault.origin.object = fault.object_label().map(|label| sanitize(&label));
    fault.origin.phase = fault.origin.phase.as_deref().map(sanitize);
    fault.message = sanitize(&fault.message);
    for other in &mut fault.related {
        sanitize_in_place(other, sanitize);
    }
}

/// Cuts `text` to at most `max_chars` characters (never inside a character),
/// ending with `…` when something was cut.
#[doc(hidden)]
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
#[doc(hidden)]
pub fn first_line_only(text: &str) -> String {
    let first = crate::str_search::first_line(text);
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

/// Replaces every credential, URL and word that looks like user data with `…`:
///
/// * the value of every `key=value` whose key names a credential (`token`,
///   `sig`, `signature`, `key`, `secret`, `password`, `auth`, `session`,
///   `jsessionid`, `code` and the like, in any case and inside longer keys such
///   as `api_key` or `X-Amz-Signature`), wherever it stands; the value runs to
///   whitespace, a quote or `&`;
/// * every URL (a run holding `://`, a `www.` host, or a `?` query with an
///   `=`), whole: a URL runs to whitespace or a quote, whatever punctuation it
///   holds (`,` and `;` included), its query with it;
/// * every word (split on whitespace, quotes, brackets, `,`, `;`, `:` and `=`,
///   which are kept) holding an address with `@`, a path with `/` or `\\`, a
///   host or IP (two dots or more) or a run of four or more digits.
pub fn redact_user_data(text: &str) -> String {
    redact_words(&redact_urls(&redact_credentials(text)))
}

/// Parts of a key that name a credential.
const CREDENTIAL_KEYS: [&str; 14] = [
    "token",
    "sig",
    "key",
    "secret",
    "passw",
    "pwd",
    "auth",
    "session",
    "sid",
    "code",
    "credential",
    "cookie",
    "bearer",
    "jwt",
];

/// Whether `c` ends a credential's value.
fn ends_a_value(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '&')
}

/// Whether `c` may be part of a key (`api_key`, `X-Amz-Signature`, `p.token`).
fn in_a_key(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// The value of every `key=value` whose key names a credential replaced with
/// `…` (see [`redact_user_data`]).
fn redact_credentials(text: &str) -> String {
    if !text.contains('=') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut key_start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        out.push(c);
        if c != '=' {
            if !in_a_key(c) {
                key_start = at + c.len_utf8();
            }
            continue;
        }
        let key = text[key_start..at].to_ascii_lowercase();
        key_start = at + 1;
        if key.is_empty() || !CREDENTIAL_KEYS.iter().any(|part| key.contains(part)) {
            continue;
        }
        let mut redacted = false;
        while let Some(&(_, next)) = chars.peek() {
            if ends_a_value(next) {
                break;
            }
            redacted = true;
            chars.next();
        }
        if redacted {
            out.push('…');
        }
    }
    out
}

/// Replaces every URL (a run without whitespace or quotes that holds a scheme,
/// a query or a `www.` host) with `…`, its query with it.
fn redact_urls(text: &str) -> String {
    if !contains(text, "://") && !text.contains('?') && !contains(text, "www.") {
        return text.to_string();
    }
    replace_words(text, "\"'`", |word| {
        contains(word, "://")
            || (word.contains('?') && word.contains('='))
            || contains(word, "www.")
    })
}

/// The word by word pass of [`redact_user_data`].
fn redact_words(text: &str) -> String {
    replace_words(text, "\"'`[](){}<>,;:=", |word| {
        let mut digits = 0;
        let mut longest = 0;
        for c in word.chars() {
            if c.is_ascii_digit() {
                digits += 1;
                longest = longest.max(digits);
            } else {
                digits = 0;
            }
        }
        let total: usize = word.chars().filter(char::is_ascii_digit).count();
        // An address (also URL-encoded), a path, a host or an IP (two dots or
        // more), a long number, or one cut by dots and dashes (a phone number,
        // a UUID).
        word.contains('@')
            || contains(word, "%40")
            || word.contains('/')
            || word.contains('\\')
            || crate::str_search::count_byte(word, b'.') >= 2
            || longest >= 4
            || total >= 6
    })
}

/// `text` with every word (split on whitespace and `separators`, which are
/// kept) for which `private` holds replaced by `…`.
fn replace_words(text: &str, separators: &str, private: impl Fn(&str) -> bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if private(word) {
            out.push('…');
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in text.chars() {
        if c.is_whitespace() || separators.contains(c) {
            flush(&mut word, &mut out);
            out.push(c);
        } else {
            word.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// The strict sanitiser: first line only, labels and WGSL fragments redacted, and
/// whatever looks like user data (addresses, paths, long numbers) redacted.
/// Applied to labels too, it keeps a label's shape and drops its private parts.
pub fn strict(text: &str) -> String {
    redact_user_data(&redact_quoted(&first_line_only(text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sanitiser_that_runs_itself_again_ends_in_the_placeholder() {
        use crate::FaultKind;
        let depth = Cell::new(0);
        let runs = Cell::new(0);
        // Each run sanitises another fault (as a sanitiser that reports into
        // its own sink makes its sink do).
        fn again(depth: &Cell<u32>, runs: &Cell<u32>) -> String {
            runs.set(runs.get() + 1);
            assert!(runs.get() < 100, "no end to the recursion");
            let inner = Fault::new(FaultKind::Validation, "inside");
            let clean = sanitized_nested(&inner, &|_| again(depth, runs), depth);
            clean.fault().message.clone()
        }
        let outer = Fault::new(FaultKind::Validation, "outside");
        let clean = sanitized_nested(&outer, &|_| again(&depth, &runs), &depth);
        assert_eq!(clean.fault().message, SANITIZER_REPORTED);
        assert_eq!(depth.get(), 0, "every run ended");
        assert!(runs.get() <= SANITIZER_DEPTH * 4, "{} runs", runs.get());
    }

    #[test]
    fn a_sanitized_fault_carries_no_raw_text_of_its_own_or_its_related() {
        use crate::FaultKind;
        let shout = |text: &str| text.to_uppercase();
        let fault = Fault::new(FaultKind::Validation, "[Buffer \"ana\"] is bad")
            .in_phase("upload")
            .with_related(vec![
                Fault::new(FaultKind::OutOfMemory, "no room").on_object("photo")
            ]);
        let clean = Sanitized::new(&fault, Some(&shout));
        let seen = clean.fault();
        // The label quoted in the message becomes the object label, sanitised.
        assert_eq!(seen.origin.object.as_deref(), Some("ANA"));
        assert_eq!(seen.origin.phase.as_deref(), Some("UPLOAD"));
        assert_eq!(seen.message, "[BUFFER \"ANA\"] IS BAD");
        assert_eq!(seen.related[0].message, "NO ROOM");
        assert_eq!(seen.related[0].origin.object.as_deref(), Some("PHOTO"));
        assert_eq!(seen.kind, fault.kind);
        // The fault itself is left as it was, for the console.
        assert_eq!(fault.origin.object, None);
        assert_eq!(Sanitized::new(&fault, None).fault(), &fault);
    }

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
    fn user_data_is_redacted_from_labels_and_messages() {
        assert_eq!(redact_user_data("upload:/home/ana/photo.png"), "upload:…");
        assert_eq!(redact_user_data("avatar ana@example.com"), "avatar …");
        assert_eq!(redact_user_data("order-20261130 tile-3"), "… tile-3");
        assert_eq!(redact_user_data("shadow-map 4096x4096"), "shadow-map …");
        assert_eq!(
            redact_user_data("avatar https://cdn.example.com/u?token=abc, (again)"),
            "avatar … (again)"
        );
        assert_eq!(
            redact_user_data("[Texture \"ws://h:9/x?k=v\"]"),
            "[Texture \"…\"]"
        );
        assert_eq!(strict("tex https://x.io/a"), "tex …");
        assert_eq!(
            redact_user_data("from cdn.example.com?token=abc now"),
            "from … now"
        );
        assert_eq!(
            redact_user_data("host 10.0.0.12 id 3f2a9c1e-77b0-4d2e"),
            "host … id …"
        );
        assert_eq!(
            redact_user_data("call 555-867-530 or ana%40mail"),
            "call … or …"
        );
        assert_eq!(
            redact_user_data("mip-3 of shadow.wgsl at 0.5"),
            "mip-3 of shadow.wgsl at 0.5"
        );
        assert_eq!(strict("globals"), "globals");
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
