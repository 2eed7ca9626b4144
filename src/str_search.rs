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
pub(crate) fn find(haystack: &str, needle: &str) -> Option<usize> {
    let (hay, pin) = (haystack.as_bytes(), needle.as_bytes());
    if pin.is_empty() {
        return Some(0);
    }
    // A match of whole UTF-8 text starts on a character boundary by itself.
    hay.windows(pin.len()).position(|window| window == pin)
}

/// Whether `needle` occurs in `haystack`.
pub(crate) fn contains(haystack: &str, needle: &str) -> bool {
    find(haystack, needle).is_some()
}

/// `text[start..end]`, or `""` when the range is reversed, out of bounds or
/// not on character boundaries.
pub(crate) fn part(text: &str, start: usize, end: usize) -> &str {
    text.get(start..end).unwrap_or("")
}

/// `text[start..]`, or `""` when `start` is past the end or inside a character.
pub(crate) fn from(text: &str, start: usize) -> &str {
    text.get(start..).unwrap_or("")
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
