//! Substring search and slicing that cannot panic, for text the browser hands
//! over (error messages, compiler positions, user agents).
//!
//! A byte range taken from a browser's numbers may fall outside the text or
//! inside a character: [`part`] answers the empty string there instead of
//! panicking. [`find`] is a plain scan: the texts are a few hundred bytes, and
//! the standard library's two-way searcher with its slicing checks costs about
//! 4 KB of wasm for no measurable gain at that size.

/// The byte index of the first `needle` in `haystack`, or `None`. An empty
/// needle is found at 0.
pub fn find(haystack: &str, needle: &str) -> Option<usize> {
    let (hay, pin) = (haystack.as_bytes(), needle.as_bytes());
    if pin.is_empty() {
        return Some(0);
    }
    // A match of whole UTF-8 text starts on a character boundary by itself.
    hay.windows(pin.len()).position(|window| window == pin)
}

/// Whether `needle` occurs in `haystack`.
pub fn contains(haystack: &str, needle: &str) -> bool {
    find(haystack, needle).is_some()
}

/// `text[start..end]`, or `""` when the range is reversed, out of bounds or
/// not on character boundaries.
pub fn part(text: &str, start: usize, end: usize) -> &str {
    text.get(start..end).unwrap_or("")
}

/// `text[start..]`, or `""` when `start` is past the end or inside a character.
pub fn from(text: &str, start: usize) -> &str {
    text.get(start..).unwrap_or("")
}

/// The byte index of the first `byte` (an ASCII character) in `text`: a byte
/// scan, where a `char` pattern would link the standard library's searcher.
pub fn find_byte(text: &str, byte: u8) -> Option<usize> {
    text.bytes().position(|b| b == byte)
}

/// The byte index of the last `byte` (an ASCII character) in `text`.
pub fn rfind_byte(text: &str, byte: u8) -> Option<usize> {
    text.bytes().rposition(|b| b == byte)
}

/// How many times `byte` (an ASCII character) occurs in `text`.
pub fn count_byte(text: &str, byte: u8) -> usize {
    text.bytes().filter(|&b| b == byte).count()
}

/// The text before the first `byte` (an ASCII character), and the text after
/// it (`None` when there is none).
pub fn split_at_byte(text: &str, byte: u8) -> (&str, Option<&str>) {
    match find_byte(text, byte) {
        Some(at) => (part(text, 0, at), Some(from(text, at + 1))),
        None => (text, None),
    }
}

/// The first line of `text`, without its line break (`\n` or `\r\n`).
pub fn first_line(text: &str) -> &str {
    let line = split_at_byte(text, b'\n').0;
    line.strip_suffix('\r').unwrap_or(line)
}

/// The number `digits` writes in ASCII digits (at least one, nothing else),
/// or `None`, also past `u32::MAX`.
pub fn number(digits: &str) -> Option<u32> {
    if digits.is_empty() {
        return None;
    }
    digits.bytes().try_fold(0u32, |n, b| {
        let digit = b.checked_sub(b'0').filter(|d| *d <= 9)?;
        n.checked_mul(10)?.checked_add(u32::from(digit))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_the_standard_library_finds() {
        let texts = ["", "a", "abc", "aaab", "día día", "x://y", "漢字かな漢字"];
        let needles = ["", "a", "ab", "aab", "día", "://", "漢字", "字か", "zz"];
        for text in texts {
            for needle in needles {
                assert_eq!(find(text, needle), text.find(needle), "{text} / {needle}");
                assert_eq!(contains(text, needle), text.contains(needle));
            }
        }
    }

    #[test]
    fn byte_scans_answer_as_the_standard_library_does() {
        let texts = [
            "",
            "a\nb",
            "\n",
            "día:12:3",
            "漢\r\n字\n",
            "a:b:c",
            "no break",
        ];
        for text in texts {
            for byte in [b'\n', b':', b'.'] {
                let c = byte as char;
                assert_eq!(find_byte(text, byte), text.find(c), "{text:?}");
                assert_eq!(rfind_byte(text, byte), text.rfind(c), "{text:?}");
                assert_eq!(count_byte(text, byte), text.matches(c).count());
                let mut split = text.splitn(2, c);
                assert_eq!(
                    split_at_byte(text, byte),
                    (split.next().unwrap_or(""), split.next())
                );
            }
            assert_eq!(
                first_line(text),
                text.lines().next().unwrap_or(""),
                "{text:?}"
            );
        }
        for digits in [
            "0",
            "12",
            "4294967295",
            "4294967296",
            "",
            "+1",
            "1a",
            " 1",
            "٣",
        ] {
            assert_eq!(
                number(digits),
                digits
                    .parse::<u32>()
                    .ok()
                    .filter(|_| !digits.starts_with('+')),
                "{digits}"
            );
        }
    }

    #[test]
    fn a_range_the_text_does_not_have_is_empty() {
        assert_eq!(part("héllo", 0, 2), "");
        assert_eq!(part("héllo", 0, 3), "hé");
        assert_eq!(part("abc", 2, 1), "");
        assert_eq!(part("abc", 1, 9), "");
        assert_eq!(from("abc", 4), "");
        assert_eq!(from("abc", 1), "bc");
        assert_eq!(from("é", 1), "");
    }
}
