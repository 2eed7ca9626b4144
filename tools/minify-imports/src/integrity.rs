//! Subresource integrity: the page's hashes of a file that was rewritten.

use base64::Engine;
use sha2::{Digest, Sha256, Sha384, Sha512};

/// The integrity values `bytes` may have on a page, one per algorithm a page
/// may name (`sha256-...`, `sha384-...`, `sha512-...`).
pub(crate) fn digests(bytes: &[u8]) -> [String; 3] {
    let b64 = |digest: &[u8]| base64::engine::general_purpose::STANDARD.encode(digest);
    [
        format!("sha256-{}", b64(&Sha256::digest(bytes))),
        format!("sha384-{}", b64(&Sha384::digest(bytes))),
        format!("sha512-{}", b64(&Sha512::digest(bytes))),
    ]
}

/// What a page's integrity values of a rewritten file become: each
/// algorithm's value of the old bytes, and of the new. Worked out once per
/// file, whatever the number of pages.
pub struct Rehash {
    pairs: [(String, String); 3],
}

impl Rehash {
    /// The values of `old` and of `new`.
    pub fn new(old: &[u8], new: &[u8]) -> Self {
        let [a, b, c] = digests(old);
        let [x, y, z] = digests(new);
        Rehash {
            pairs: [(a, x), (b, y), (c, z)],
        }
    }

    /// `html` with every integrity value of the old bytes (whatever the
    /// algorithm, quoted or not) made the same algorithm's value of the new,
    /// and how many there were (none when the page asks for no integrity, or
    /// does not load the file).
    pub fn apply(&self, html: &str) -> (String, usize) {
        let mut html = html.to_owned();
        let mut count = 0;
        for (from, to) in &self.pairs {
            let found = html.matches(from.as_str()).count();
            if found > 0 {
                count += found;
                html = html.replace(from.as_str(), to);
            }
        }
        (html, count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hashes_are_those_of_the_standard() {
        // "abc" (FIPS 180-2, appendices B, C and D).
        let [sha256, sha384, sha512] = digests(b"abc");
        assert_eq!(
            sha256,
            "sha256-ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0="
        );
        assert_eq!(
            sha384,
            "sha384-ywB1P0WjXou1oD1pmsZQBycsMqsO3tFjGotgWkP/W+2AhgcroefMI1i67KE0yCWn"
        );
        assert!(sha512.starts_with("sha512-3a81oZNherrMQXNJriBBMRLm+k6JqX6iCp7u5ktV05ohkpkqJ0/BqDa6PCOj/uu9RU1EI2Q86A4qmslPpUyknw=="));
    }

    #[test]
    fn every_form_of_the_old_hash_is_replaced_and_nothing_else() {
        let [old256, old384, _] = digests(b"old");
        let [new256, new384, _] = digests(b"new");
        let [other, ..] = digests(b"other");
        let html = format!(
            r#"<link href=a.js integrity="{old384}"><link href=a.js integrity={old384}><link href=b.js integrity="{other}"><link integrity='{old256}'>"#
        );
        let (out, count) = Rehash::new(b"old", b"new").apply(&html);
        assert_eq!(count, 3);
        assert_eq!(
            out,
            format!(
                r#"<link href=a.js integrity="{new384}"><link href=a.js integrity={new384}><link href=b.js integrity="{other}"><link integrity='{new256}'>"#
            )
        );
        assert_eq!(Rehash::new(b"absent", b"x").apply(&html).1, 0);
    }
}
