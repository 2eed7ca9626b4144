//! Binary payloads for instance and vertex data: a 16-byte header stating the record
//! count and a stride that is a multiple of 16, checked before any GPU call.
//!
//! Layout (little-endian):
//!
//! | bytes  | field                         |
//! |--------|-------------------------------|
//! | 0..4   | magic `b"WGPL"`               |
//! | 4..6   | version, `1`                  |
//! | 6..8   | reserved, `0`                 |
//! | 8..12  | record count (> 0)            |
//! | 12..16 | stride in bytes (16 x k, > 0) |
//! | 16..   | `count x stride` bytes, exactly |

use std::fmt;

/// The magic number.
pub const MAGIC: [u8; 4] = *b"WGPL";
/// The only version this reader accepts.
pub const VERSION: u16 = 1;
/// Header length in bytes.
pub const HEADER_LEN: usize = 16;
/// Strides must be a multiple of this.
pub const STRIDE_ALIGN: u32 = 16;

/// What is wrong with a payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PayloadProblem {
    /// Fewer bytes than a header.
    TooShortForHeader {
        /// Bytes present.
        len: usize,
    },
    /// The magic number is not `WGPL`.
    BadMagic {
        /// What was found.
        found: [u8; 4],
    },
    /// An unsupported version.
    UnsupportedVersion {
        /// What was found.
        found: u16,
    },
    /// The reserved field is not zero.
    ReservedNotZero {
        /// What was found.
        found: u16,
    },
    /// The header declares no records.
    ZeroCount,
    /// The stride is zero or not a multiple of 16.
    BadStride {
        /// The stride declared.
        stride: u32,
    },
    /// The stride is smaller than the record the reader expects.
    StrideTooSmall {
        /// The stride declared.
        stride: u32,
        /// The record size the reader needs.
        needed: u32,
    },
    /// `count x stride` is more than the body holds (or overflows).
    Truncated {
        /// Records declared.
        count: u32,
        /// Stride declared.
        stride: u32,
        /// Body bytes expected (saturating).
        expected: u64,
        /// Body bytes present.
        actual: u64,
    },
    /// The body has bytes beyond `count x stride`.
    TrailingBytes {
        /// Body bytes expected.
        expected: u64,
        /// Body bytes present.
        actual: u64,
    },
}

impl fmt::Display for PayloadProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PayloadProblem::TooShortForHeader { len } => {
                write!(f, "{len} bytes is shorter than the {HEADER_LEN}-byte header")
            }
            PayloadProblem::BadMagic { found } => {
                write!(f, "bad magic {found:02x?}, expected \"WGPL\"")
            }
            PayloadProblem::UnsupportedVersion { found } => {
                write!(f, "version {found} is not supported (expected {VERSION})")
            }
            PayloadProblem::ReservedNotZero { found } => {
                write!(f, "reserved header field is {found}, expected 0")
            }
            PayloadProblem::ZeroCount => write!(f, "the header declares 0 records"),
            PayloadProblem::BadStride { stride } => write!(
                f,
                "stride {stride} is not a non-zero multiple of {STRIDE_ALIGN} bytes"
            ),
            PayloadProblem::StrideTooSmall { stride, needed } => write!(
                f,
                "stride {stride} is smaller than the {needed}-byte record the reader expects"
            ),
            PayloadProblem::Truncated {
                count,
                stride,
                expected,
                actual,
            } => write!(
                f,
                "{count} records x {stride} bytes = {expected} bytes, but the body has {actual}: truncated"
            ),
            PayloadProblem::TrailingBytes { expected, actual } => write!(
                f,
                "the body has {actual} bytes but count x stride is {expected}: {} unexpected trailing bytes",
                actual - expected
            ),
        }
    }
}

/// A payload that failed to load, named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PayloadError {
    /// The payload's name (file or URL).
    pub payload: String,
    /// What is wrong.
    pub problem: PayloadProblem,
}

impl fmt::Display for PayloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "payload \"{}\": {}", self.payload, self.problem)
    }
}

impl std::error::Error for PayloadError {}

/// A checked payload: `count` records of `stride` bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Payload {
    /// The payload's name.
    pub name: String,
    /// Record count.
    pub count: u32,
    /// Stride in bytes (a multiple of 16).
    pub stride: u32,
    /// The records, `count x stride` bytes.
    pub body: Vec<u8>,
}

impl Payload {
    /// Parses and checks `bytes`. `min_record` is the record size the reader needs
    /// (0 to accept any stride).
    pub fn parse(name: &str, bytes: &[u8], min_record: u32) -> Result<Payload, PayloadError> {
        let fail = |problem| PayloadError {
            payload: name.to_string(),
            problem,
        };
        if bytes.len() < HEADER_LEN {
            return Err(fail(PayloadProblem::TooShortForHeader { len: bytes.len() }));
        }
        let u16_at = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]);
        let u32_at =
            |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        let magic = [bytes[0], bytes[1], bytes[2], bytes[3]];
        if magic != MAGIC {
            return Err(fail(PayloadProblem::BadMagic { found: magic }));
        }
        let version = u16_at(4);
        if version != VERSION {
            return Err(fail(PayloadProblem::UnsupportedVersion { found: version }));
        }
        let reserved = u16_at(6);
        if reserved != 0 {
            return Err(fail(PayloadProblem::ReservedNotZero { found: reserved }));
        }
        let count = u32_at(8);
        let stride = u32_at(12);
        if count == 0 {
            return Err(fail(PayloadProblem::ZeroCount));
        }
        if stride == 0 || !stride.is_multiple_of(STRIDE_ALIGN) {
            return Err(fail(PayloadProblem::BadStride { stride }));
        }
        if stride < min_record {
            return Err(fail(PayloadProblem::StrideTooSmall {
                stride,
                needed: min_record,
            }));
        }
        let expected = u64::from(count) * u64::from(stride);
        let actual = (bytes.len() - HEADER_LEN) as u64;
        if actual < expected {
            return Err(fail(PayloadProblem::Truncated {
                count,
                stride,
                expected,
                actual,
            }));
        }
        if actual > expected {
            return Err(fail(PayloadProblem::TrailingBytes { expected, actual }));
        }
        Ok(Payload {
            name: name.to_string(),
            count,
            stride,
            body: bytes[HEADER_LEN..].to_vec(),
        })
    }

    /// Encodes records into a payload. Every record is padded with zeros to `stride`.
    /// Panics if `stride` is not a non-zero multiple of 16 or a record is longer.
    pub fn encode(stride: u32, records: &[Vec<u8>]) -> Vec<u8> {
        assert!(
            stride > 0 && stride.is_multiple_of(STRIDE_ALIGN),
            "stride must be 16 x k"
        );
        let mut out = Vec::with_capacity(HEADER_LEN + records.len() * stride as usize);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(&(records.len() as u32).to_le_bytes());
        out.extend_from_slice(&stride.to_le_bytes());
        for record in records {
            assert!(record.len() <= stride as usize, "record longer than stride");
            out.extend_from_slice(record);
            out.resize(out.len() + stride as usize - record.len(), 0);
        }
        out
    }

    /// Record `index` as bytes.
    pub fn record(&self, index: u32) -> Option<&[u8]> {
        if index >= self.count {
            return None;
        }
        let start = index as usize * self.stride as usize;
        self.body.get(start..start + self.stride as usize)
    }

    /// Record `index` read as little-endian `f32`s (the whole stride).
    pub fn record_f32(&self, index: u32) -> Option<Vec<f32>> {
        Some(
            self.record(index)?
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        )
    }
}

/// Little-endian bytes of `values`.
pub fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        Payload::encode(32, &[f32_bytes(&[1.0, 2.0, 3.0]), f32_bytes(&[4.0; 8])])
    }

    #[test]
    fn round_trip() {
        let p = Payload::parse("scene.bin", &sample(), 16).unwrap();
        assert_eq!((p.count, p.stride), (2, 32));
        assert_eq!(&p.record_f32(0).unwrap()[..4], &[1.0, 2.0, 3.0, 0.0]);
        assert_eq!(p.record_f32(1).unwrap(), vec![4.0; 8]);
        assert!(p.record(2).is_none());
    }

    #[test]
    fn truncated_body_names_the_payload_and_the_numbers() {
        let mut bytes = sample();
        bytes.truncate(bytes.len() - 1);
        let err = Payload::parse("scene.bin", &bytes, 0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "payload \"scene.bin\": 2 records x 32 bytes = 64 bytes, but the body has 63: truncated"
        );
    }

    #[test]
    fn extra_bytes_are_refused() {
        let mut bytes = sample();
        bytes.extend_from_slice(&[0; 16]);
        let err = Payload::parse("p", &bytes, 0).unwrap_err();
        assert_eq!(
            err.problem,
            PayloadProblem::TrailingBytes {
                expected: 64,
                actual: 80
            }
        );
        assert!(err.to_string().contains("16 unexpected trailing bytes"));
    }

    #[test]
    fn wrong_stride_zero_count_and_bad_magic() {
        let mut bytes = sample();
        bytes[12..16].copy_from_slice(&24u32.to_le_bytes());
        assert_eq!(
            Payload::parse("p", &bytes, 0).unwrap_err().problem,
            PayloadProblem::BadStride { stride: 24 }
        );
        let mut bytes = sample();
        bytes[8..12].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(
            Payload::parse("p", &bytes, 0).unwrap_err().problem,
            PayloadProblem::ZeroCount
        );
        let mut bytes = sample();
        bytes[0] = b'X';
        assert!(matches!(
            Payload::parse("p", &bytes, 0).unwrap_err().problem,
            PayloadProblem::BadMagic { .. }
        ));
        let mut bytes = sample();
        bytes[4] = 9;
        assert_eq!(
            Payload::parse("p", &bytes, 0).unwrap_err().problem,
            PayloadProblem::UnsupportedVersion { found: 9 }
        );
        assert_eq!(
            Payload::parse("p", &sample(), 48).unwrap_err().problem,
            PayloadProblem::StrideTooSmall {
                stride: 32,
                needed: 48
            }
        );
        assert_eq!(
            Payload::parse("p", &[0; 5], 0).unwrap_err().problem,
            PayloadProblem::TooShortForHeader { len: 5 }
        );
    }

    #[test]
    fn huge_count_does_not_overflow() {
        let mut bytes = sample();
        bytes[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        bytes[12..16].copy_from_slice(&(u32::MAX - 15).to_le_bytes());
        match Payload::parse("p", &bytes, 0).unwrap_err().problem {
            PayloadProblem::Truncated {
                expected, actual, ..
            } => {
                assert_eq!(expected, u64::from(u32::MAX) * u64::from(u32::MAX - 15));
                assert_eq!(actual, 64);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}
