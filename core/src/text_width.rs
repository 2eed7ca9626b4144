//! Display columns of text in a monospace console, for the caret underline of
//! shader diagnostics: a CJK character, a Hangul syllable, a fullwidth form or
//! an emoji takes two; a combining mark, a zero-width character or a variation
//! selector none; anything else (a control character such as a tab included)
//! one. An emoji sequence joined by U+200D takes two in all, and U+FE0F makes
//! the character before it two wide.
//!
//! A compact table of the ranges that matter in source code (East Asian Wide
//! and Fullwidth, emoji presentation, the common combining blocks) instead of
//! the whole Unicode width database, whose tables cost about 4 KB of the
//! gzipped module. The host test compares it with the `unicode-width` crate on
//! every character of ASCII, Latin, the combining diacritics, Hangul, the CJK
//! blocks, the fullwidth forms and the emoji blocks; elsewhere (the combining
//! marks of Indic and other scripts, say) a mark may count one column.

/// Characters two columns wide (inclusive ranges, sorted).
const WIDE: &[(u32, u32)] = &[
    (0x1100, 0x115F),
    (0x231A, 0x231B),
    (0x2329, 0x232A),
    (0x23E9, 0x23EC),
    (0x23F0, 0x23F0),
    (0x23F3, 0x23F3),
    (0x25FD, 0x25FE),
    (0x2614, 0x2615),
    (0x2648, 0x2653),
    (0x267F, 0x267F),
    (0x2693, 0x2693),
    (0x26A1, 0x26A1),
    (0x26AA, 0x26AB),
    (0x26BD, 0x26BE),
    (0x26C4, 0x26C5),
    (0x26CE, 0x26CE),
    (0x26D4, 0x26D4),
    (0x26EA, 0x26EA),
    (0x26F2, 0x26F3),
    (0x26F5, 0x26F5),
    (0x26FA, 0x26FA),
    (0x26FD, 0x26FD),
    (0x2705, 0x2705),
    (0x270A, 0x270B),
    (0x2728, 0x2728),
    (0x274C, 0x274C),
    (0x274E, 0x274E),
    (0x2753, 0x2755),
    (0x2757, 0x2757),
    (0x2795, 0x2797),
    (0x27B0, 0x27B0),
    (0x27BF, 0x27BF),
    (0x2B1B, 0x2B1C),
    (0x2B50, 0x2B50),
    (0x2B55, 0x2B55),
    (0x2E80, 0x2E99),
    (0x2E9B, 0x2EF3),
    (0x2F00, 0x2FD5),
    (0x2FF0, 0x3029),
    (0x3030, 0x303E),
    (0x3041, 0x3096),
    (0x309B, 0x3247),
    (0x3250, 0x4DBF),
    (0x4E00, 0xA4CF),
    (0xA960, 0xA97C),
    (0xAC00, 0xD7A3),
    (0xF900, 0xFAFF),
    (0xFE10, 0xFE19),
    (0xFE30, 0xFE6B),
    (0xFF01, 0xFF60),
    (0xFFE0, 0xFFE6),
    (0x1F004, 0x1F004),
    (0x1F0CF, 0x1F0CF),
    (0x1F18E, 0x1F18E),
    (0x1F191, 0x1F19A),
    (0x1F200, 0x1F202),
    (0x1F210, 0x1F23B),
    (0x1F240, 0x1F248),
    (0x1F250, 0x1F251),
    (0x1F300, 0x1F320),
    (0x1F32D, 0x1F335),
    (0x1F337, 0x1F37C),
    (0x1F37E, 0x1F393),
    (0x1F3A0, 0x1F3CA),
    (0x1F3CF, 0x1F3D3),
    (0x1F3E0, 0x1F3F0),
    (0x1F3F4, 0x1F3F4),
    (0x1F3F8, 0x1F43E),
    (0x1F440, 0x1F440),
    (0x1F442, 0x1F4FC),
    (0x1F4FF, 0x1F53D),
    (0x1F54B, 0x1F54E),
    (0x1F550, 0x1F567),
    (0x1F57A, 0x1F57A),
    (0x1F595, 0x1F596),
    (0x1F5A4, 0x1F5A4),
    (0x1F5FB, 0x1F64F),
    (0x1F680, 0x1F6C5),
    (0x1F6CC, 0x1F6CC),
    (0x1F6D0, 0x1F6D2),
    (0x1F6D5, 0x1F6D7),
    (0x1F6DC, 0x1F6DF),
    (0x1F6EB, 0x1F6EC),
    (0x1F6F4, 0x1F6FC),
    (0x1F7E0, 0x1F7EB),
    (0x1F7F0, 0x1F7F0),
    (0x1F90C, 0x1F93A),
    (0x1F93C, 0x1F945),
    (0x1F947, 0x1F9FF),
    (0x1FA70, 0x1FAFF),
    (0x20000, 0x2FFFD),
    (0x30000, 0x3FFFD),
];

/// Characters of no width (inclusive ranges, sorted).
const ZERO: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),
    (0x0300, 0x036F),
    (0x0483, 0x0489),
    (0x0591, 0x05BD),
    (0x0610, 0x061A),
    (0x064B, 0x065F),
    (0x1AB0, 0x1AFF),
    (0x1DC0, 0x1DFF),
    (0x200B, 0x200F),
    (0x20D0, 0x20FF),
    (0x302A, 0x302F),
    (0x3099, 0x309A),
    (0xFE00, 0xFE0F),
    (0xFE20, 0xFE2F),
    (0xFEFF, 0xFEFF),
    (0xE0000, 0xE0FFF),
];

fn within(table: &[(u32, u32)], c: u32) -> bool {
    table
        .binary_search_by(|&(low, high)| {
            if high < c {
                std::cmp::Ordering::Less
            } else if low > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// Columns of one character on its own.
fn char_columns(c: char) -> usize {
    let c = u32::from(c);
    if within(ZERO, c) {
        0
    } else if within(WIDE, c) {
        2
    } else {
        1
    }
}

/// Columns of `text`.
pub fn columns(text: &str) -> usize {
    let mut total = 0;
    let mut previous: Option<char> = None;
    for c in text.chars() {
        total += match (previous, c) {
            // What a joiner joins to an emoji before it takes no more room.
            (Some('\u{200D}'), _) => 0,
            // Emoji presentation widens the narrow character before it.
            (Some(before), '\u{FE0F}') if char_columns(before) == 1 && u32::from(before) > 0x7F => {
                1
            }
            _ => char_columns(c),
        };
        previous = Some(c);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use unicode_width::UnicodeWidthStr;

    #[test]
    fn every_character_of_the_ranges_that_matter_is_as_wide_as_unicode_says() {
        let ranges = [
            (0x20, 0x7E),
            (0xA0, 0x17F),
            (0x300, 0x36F),
            (0x1100, 0x115F),
            (0x2E80, 0x303E),
            (0x3041, 0x30FF),
            (0x4E00, 0x9FFF),
            (0xAC00, 0xD7A3),
            (0xFF01, 0xFF60),
            (0x1F300, 0x1F64F),
            (0x1F680, 0x1F6C5),
            (0x1F90C, 0x1F9FF),
            (0x20000, 0x2A6DF),
        ];
        let mut checked = 0;
        for (low, high) in ranges {
            for code in low..=high {
                let Some(c) = char::from_u32(code) else {
                    continue;
                };
                let text = c.to_string();
                assert_eq!(columns(&text), text.width(), "U+{code:04X} {text:?}");
                checked += 1;
            }
        }
        assert!(checked > 40_000, "{checked}");
    }

    #[test]
    fn sequences_are_as_wide_as_unicode_says() {
        for text in [
            "let x = 名前;",
            "\t名 = z;\t😀\tw",
            "e\u{301}",
            "❤\u{FE0F}",
            "👩\u{200D}💻",
            "👨\u{200D}👩\u{200D}👧",
            "é😀 = bad;",
            "ｗｉｄｅ",
        ] {
            assert_eq!(columns(text), text.width(), "{text:?}");
        }
    }
}
