//! Fault injection as plain Rust: what can be injected, how a console spells it,
//! and seeded random sequences of injections (the same seed gives the same
//! sequence, on any machine), for soak tests and for `gpuChaos(seed, count)`.
//!
//! The browser side (`webgpu_guard::web::inject`) carries injections out.

use std::fmt;

/// The most frames `lose-after-frames:N` may wait: 600 frames is ten seconds
/// at 60 Hz, longer than any test or person waits for a loss to come, and the
/// wait is a counter that cannot freeze anything; the least is 1 (the next
/// frame; `lose` is the loss now).
pub const MAX_LOSS_FRAMES: u32 = 600;

/// The highest creation or call index (0-based) of `lose-in-build:N`,
/// `oom-in-build:N` and `throw-in-build:N`: a build makes tens of tracked
/// creations (the demo about 30), so 10 000 leaves room for any real scene,
/// while an index past the build's last creation only arms a fault that never
/// fires.
pub const MAX_BUILD_INDEX: u32 = 10_000;

/// The highest rate of `storm:RATE:MS`, in uncaptured errors a second (at least
/// 1): twice the 1000 a second that the fault sink is measured against, which already
/// makes the browser log and count thousands of errors. The injector makes
/// `RATE / 20` invalid calls every 50 ms on the page's thread: 100 a tick here,
/// where the 4 294 967 295 that used to be accepted meant 214 million calls in
/// one tick, a frozen tab.
pub const MAX_STORM_PER_SECOND: u32 = 2000;

/// The longest `storm:RATE:MS`, in milliseconds (at least 1): ten seconds, so a
/// storm typed in the console always ends by itself, and `gpuChaos`, which
/// waits out each storm, stays within a test's time.
pub const MAX_STORM_MS: u32 = 10_000;

/// The one-line usage of the console's `gpuInject(spec)`: every kind and the
/// bounds of its numbers. [`Injection::parse`] starts every error with it, and
/// the demo can show it as it is.
pub const INJECTION_USAGE: &str = "usage: gpuInject(\"lose\" | \"lose-after-frames:N\" (N 1..600) \
     | \"lose-in-build:N\" (N 0..10000) | \"oom-in-build:N\" (N 0..10000) \
     | \"throw-in-build:N\" (N 0..10000) \
     | \"storm:RATE:MS\" (RATE 1..2000 errors a second, MS 1..10000) | \"bad-shader\" | \"uncaptured\")";

/// The inclusive bounds of each number, as (least, most).
const FRAMES: (u32, u32) = (1, MAX_LOSS_FRAMES);
const BUILD_INDEX: (u32, u32) = (0, MAX_BUILD_INDEX);
const STORM_PER_SECOND: (u32, u32) = (1, MAX_STORM_PER_SECOND);
const STORM_MS: (u32, u32) = (1, MAX_STORM_MS);

/// A number written in decimal digits only, within `min..=max`; else why not
/// (`is not a whole number`, `is out of 1..600`).
fn whole_number(text: &str, min: u32, max: u32) -> Result<u32, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err("is not a whole number".into());
    }
    // Digits only: the one possible failure is a number too long for u64.
    match text.parse::<u64>() {
        Ok(n) if (u64::from(min)..=u64::from(max)).contains(&n) => Ok(n as u32),
        _ => Err(format!("is out of {min}..{max}")),
    }
}

/// One fault to inject.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Injection {
    /// Lose the device now, as the browser would (reason `unknown`).
    LoseNow,
    /// Lose the device after this many more frames.
    LoseAfterFrames(u32),
    /// Lose the device during the next build, after this many creations; a loss
    /// now starts that build.
    LoseDuringRebuild(u32),
    /// Fail the Nth allocation (0-based) of the next build as out-of-memory; a
    /// loss now starts that build.
    OutOfMemoryInRebuild(u32),
    /// Make the Nth call (0-based) of the next build throw; a loss now starts it.
    ThrowInRebuild(u32),
    /// Uncaptured errors at this rate (per second), each with its own message, for
    /// this long (milliseconds).
    Storm {
        /// Errors a second.
        per_second: u32,
        /// How long.
        for_ms: u32,
    },
    /// Compile a module whose WGSL is wrong.
    BadShader,
    /// One invalid object outside every scope: the fault sink's case.
    Uncaptured,
}

impl Injection {
    /// The kind, as the console and the reports name it.
    pub fn kind(&self) -> &'static str {
        match self {
            Injection::LoseNow => "lose",
            Injection::LoseAfterFrames(_) => "lose-after-frames",
            Injection::LoseDuringRebuild(_) => "lose-in-build",
            Injection::OutOfMemoryInRebuild(_) => "oom-in-build",
            Injection::ThrowInRebuild(_) => "throw-in-build",
            Injection::Storm { .. } => "storm",
            Injection::BadShader => "bad-shader",
            Injection::Uncaptured => "uncaptured",
        }
    }

    /// Every kind, in a stable order.
    pub const KINDS: [&'static str; 8] = [
        "lose",
        "lose-after-frames",
        "lose-in-build",
        "oom-in-build",
        "throw-in-build",
        "storm",
        "bad-shader",
        "uncaptured",
    ];

    /// Parses `kind` or `kind:n` (`storm:rate:ms`), as [`fmt::Display`] writes it;
    /// a number left out takes its default (`lose-after-frames:3`,
    /// `lose-in-build:2`, `oom-in-build:0`, `throw-in-build:0`, `storm:1000:500`).
    ///
    /// Every number must be written in decimal digits only (no sign, no point, no
    /// exponent, not empty) and lie within its bounds (see [`INJECTION_USAGE`]);
    /// anything else is refused with an error that starts with
    /// [`INJECTION_USAGE`] and names what was wrong, on one line.
    pub fn parse(spec: &str) -> Result<Injection, String> {
        let mut parts = spec.split(':');
        let kind = parts.next().unwrap_or_default();
        let refuse = |detail: String| format!("{INJECTION_USAGE}; {detail} in \"{spec}\"");
        let mut number = |name: &str, (min, max): (u32, u32), default: u32| match parts.next() {
            None => Ok(default),
            Some(text) => whole_number(text, min, max)
                .map_err(|why| refuse(format!("{name} \"{text}\" {why}"))),
        };
        let injection = match kind {
            "lose" => Injection::LoseNow,
            "lose-after-frames" => Injection::LoseAfterFrames(number("N", FRAMES, 3)?),
            "lose-in-build" => Injection::LoseDuringRebuild(number("N", BUILD_INDEX, 2)?),
            "oom-in-build" => Injection::OutOfMemoryInRebuild(number("N", BUILD_INDEX, 0)?),
            "throw-in-build" => Injection::ThrowInRebuild(number("N", BUILD_INDEX, 0)?),
            "storm" => Injection::Storm {
                per_second: number("RATE", STORM_PER_SECOND, 1000)?,
                for_ms: number("MS", STORM_MS, 500)?,
            },
            "bad-shader" => Injection::BadShader,
            "uncaptured" => Injection::Uncaptured,
            other => return Err(refuse(format!("unknown kind \"{other}\""))),
        };
        if parts.next().is_some() {
            return Err(refuse("too many parts".into()));
        }
        Ok(injection)
    }

    /// Whether every number of the injection lies within the bounds that
    /// [`Injection::parse`] accepts (see [`INJECTION_USAGE`]). [`ChaosPlan`] only
    /// generates injections for which this holds.
    pub fn in_bounds(&self) -> bool {
        let within = |n: u32, (min, max): (u32, u32)| (min..=max).contains(&n);
        match *self {
            Injection::LoseAfterFrames(n) => within(n, FRAMES),
            Injection::LoseDuringRebuild(n)
            | Injection::OutOfMemoryInRebuild(n)
            | Injection::ThrowInRebuild(n) => within(n, BUILD_INDEX),
            Injection::Storm { per_second, for_ms } => {
                within(per_second, STORM_PER_SECOND) && within(for_ms, STORM_MS)
            }
            Injection::LoseNow | Injection::BadShader | Injection::Uncaptured => true,
        }
    }

    /// Whether the injection ends the current device.
    pub fn loses_the_device(&self) -> bool {
        matches!(
            self,
            Injection::LoseNow
                | Injection::LoseAfterFrames(_)
                | Injection::LoseDuringRebuild(_)
                | Injection::OutOfMemoryInRebuild(_)
                | Injection::ThrowInRebuild(_)
        )
    }
}

impl fmt::Display for Injection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Injection::LoseAfterFrames(n)
            | Injection::LoseDuringRebuild(n)
            | Injection::OutOfMemoryInRebuild(n)
            | Injection::ThrowInRebuild(n) => write!(f, "{}:{n}", self.kind()),
            Injection::Storm { per_second, for_ms } => {
                write!(f, "storm:{per_second}:{for_ms}")
            }
            _ => f.write_str(self.kind()),
        }
    }
}

/// A seeded random sequence of injections (SplitMix64: the same seed gives the
/// same sequence everywhere).
///
/// ```
/// use webgpu_guard_core::chaos::{ChaosPlan, Injection};
/// let steps: Vec<Injection> = ChaosPlan::new(2026, 30).take(3).collect();
/// assert_eq!(steps, ChaosPlan::new(2026, 30).take(3).collect::<Vec<_>>());
/// assert_eq!(Injection::parse(&steps[0].to_string()), Ok(steps[0]));
/// ```
#[derive(Clone, Debug)]
pub struct ChaosPlan {
    state: u64,
    /// How many creations a build makes at most (bounds the Nth-creation faults),
    /// 1..=[`MAX_BUILD_INDEX`]` + 1`.
    creations: u32,
}

impl ChaosPlan {
    /// A plan from `seed`, for an application whose build makes up to
    /// `creations` tracked creations (taken as 1 when 0, and as
    /// [`MAX_BUILD_INDEX`]` + 1` when more, so that every injection it generates
    /// is [`Injection::in_bounds`]).
    pub fn new(seed: u64, creations: u32) -> Self {
        ChaosPlan {
            state: seed,
            creations: creations.clamp(1, MAX_BUILD_INDEX + 1),
        }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u32) -> u32 {
        (self.next_u64() % u64::from(n.max(1))) as u32
    }

    /// The next injection, always [`Injection::in_bounds`]: frames 1..=10,
    /// indices below the plan's creations, storms of 200..=1000 errors a second
    /// for 200..=500 ms.
    pub fn next_injection(&mut self) -> Injection {
        match self.below(8) {
            0 => Injection::LoseNow,
            1 => Injection::LoseAfterFrames(1 + self.below(10)),
            2 => Injection::LoseDuringRebuild(self.below(self.creations)),
            3 => Injection::OutOfMemoryInRebuild(self.below(self.creations)),
            4 => Injection::ThrowInRebuild(self.below(self.creations)),
            5 => Injection::Storm {
                per_second: 200 + 100 * self.below(9),
                for_ms: 200 + 50 * self.below(7),
            },
            6 => Injection::BadShader,
            _ => Injection::Uncaptured,
        }
    }
}

impl Iterator for ChaosPlan {
    type Item = Injection;
    fn next(&mut self) -> Option<Injection> {
        Some(self.next_injection())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_replays_the_same_sequence() {
        let a: Vec<Injection> = ChaosPlan::new(42, 20).take(200).collect();
        let b: Vec<Injection> = ChaosPlan::new(42, 20).take(200).collect();
        let c: Vec<Injection> = ChaosPlan::new(43, 20).take(200).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        for kind in Injection::KINDS {
            assert!(a.iter().any(|i| i.kind() == kind), "{kind} never drawn");
        }
        for injection in &a {
            if let Injection::OutOfMemoryInRebuild(n) | Injection::ThrowInRebuild(n) = injection {
                assert!(*n < 20);
            }
        }
    }

    #[test]
    fn every_injection_reads_back_from_its_text() {
        for injection in ChaosPlan::new(7, 30).take(100) {
            assert_eq!(Injection::parse(&injection.to_string()), Ok(injection));
        }
        assert_eq!(
            Injection::parse("storm:50:100"),
            Ok(Injection::Storm {
                per_second: 50,
                for_ms: 100
            })
        );
        assert_eq!(
            Injection::parse("meltdown"),
            Err(format!(
                "{INJECTION_USAGE}; unknown kind \"meltdown\" in \"meltdown\""
            ))
        );
        assert!(Injection::parse("oom-in-build:x").is_err());
        assert!(Injection::parse("lose:1:2").is_err());
    }

    /// What the console refuses: a number out of its bounds, zero where a rate or
    /// a duration is meant, anything that is not written as a whole number.
    const OUT_OF_BOUNDS: [&str; 24] = [
        "storm:4294967295:1000",
        "storm:1e9:1e9",
        "storm:1000:1e9",
        "storm:2001:100",
        "storm:100:10001",
        "storm:0:100",
        "storm:100:0",
        "storm:1.5:100",
        "storm:-3:100",
        "storm:+3:100",
        "storm::100",
        "storm:100:",
        "storm: 100:100",
        "lose-after-frames:0",
        "lose-after-frames:601",
        "lose-after-frames:",
        "lose-after-frames:4294967296",
        "lose-in-build:10001",
        "lose-in-build:-1",
        "oom-in-build:99999999999999999999",
        "oom-in-build:1.0",
        "throw-in-build:10001",
        "meltdown",
        "",
    ];

    #[test]
    fn out_of_bounds_or_broken_numbers_get_the_usage_line() {
        for spec in OUT_OF_BOUNDS {
            let error = match Injection::parse(spec) {
                Ok(injection) => panic!("\"{spec}\" was accepted as {injection:?}"),
                Err(error) => error,
            };
            assert!(error.starts_with(INJECTION_USAGE), "\"{spec}\": {error}");
            assert!(!error.contains('\n'), "\"{spec}\": {error}");
            assert!(
                error.contains(&format!("\"{spec}\"")),
                "\"{spec}\": {error}"
            );
        }
    }

    #[test]
    fn the_bounds_themselves_are_accepted() {
        for (spec, injection) in [
            ("lose-after-frames:1", Injection::LoseAfterFrames(1)),
            ("lose-after-frames:600", Injection::LoseAfterFrames(600)),
            ("lose-in-build:0", Injection::LoseDuringRebuild(0)),
            ("lose-in-build:10000", Injection::LoseDuringRebuild(10_000)),
            (
                "oom-in-build:10000",
                Injection::OutOfMemoryInRebuild(10_000),
            ),
            ("throw-in-build:10000", Injection::ThrowInRebuild(10_000)),
            ("throw-in-build:007", Injection::ThrowInRebuild(7)),
            (
                "storm:1:1",
                Injection::Storm {
                    per_second: 1,
                    for_ms: 1,
                },
            ),
            (
                "storm:2000:10000",
                Injection::Storm {
                    per_second: 2000,
                    for_ms: 10_000,
                },
            ),
            // The defaults, for a kind written without its numbers.
            ("lose-after-frames", Injection::LoseAfterFrames(3)),
            (
                "storm",
                Injection::Storm {
                    per_second: 1000,
                    for_ms: 500,
                },
            ),
            (
                "storm:50",
                Injection::Storm {
                    per_second: 50,
                    for_ms: 500,
                },
            ),
        ] {
            assert_eq!(Injection::parse(spec), Ok(injection), "{spec}");
        }
    }

    #[test]
    fn errors_say_which_number_is_wrong_and_why() {
        for (spec, detail) in [
            (
                "storm:4294967295:1000",
                "RATE \"4294967295\" is out of 1..2000",
            ),
            ("storm:1e9:1e9", "RATE \"1e9\" is not a whole number"),
            ("storm:100:0", "MS \"0\" is out of 1..10000"),
            ("lose-after-frames:601", "N \"601\" is out of 1..600"),
            ("oom-in-build:", "N \"\" is not a whole number"),
            ("lose:1", "too many parts"),
        ] {
            assert_eq!(
                Injection::parse(spec),
                Err(format!("{INJECTION_USAGE}; {detail} in \"{spec}\"")),
            );
        }
    }

    #[test]
    fn the_usage_line_names_every_kind_and_its_bounds() {
        assert!(!INJECTION_USAGE.contains('\n'));
        assert!(!INJECTION_USAGE.contains("  "), "{INJECTION_USAGE}");
        for kind in Injection::KINDS {
            assert!(INJECTION_USAGE.contains(&format!("\"{kind}")), "{kind}");
        }
        for bound in [
            format!("(N 1..{MAX_LOSS_FRAMES})"),
            format!("\"lose-in-build:N\" (N 0..{MAX_BUILD_INDEX})"),
            format!("\"oom-in-build:N\" (N 0..{MAX_BUILD_INDEX})"),
            format!("\"throw-in-build:N\" (N 0..{MAX_BUILD_INDEX})"),
            format!("RATE 1..{MAX_STORM_PER_SECOND} "),
            format!("MS 1..{MAX_STORM_MS})"),
        ] {
            assert!(
                INJECTION_USAGE.contains(&bound),
                "{bound}: {INJECTION_USAGE}"
            );
        }
        // in_bounds agrees with what parse accepts, past each bound.
        for injection in [
            Injection::LoseAfterFrames(0),
            Injection::LoseAfterFrames(MAX_LOSS_FRAMES + 1),
            Injection::ThrowInRebuild(MAX_BUILD_INDEX + 1),
            Injection::Storm {
                per_second: MAX_STORM_PER_SECOND + 1,
                for_ms: 1,
            },
            Injection::Storm {
                per_second: 1,
                for_ms: 0,
            },
        ] {
            assert!(!injection.in_bounds(), "{injection:?}");
            assert!(Injection::parse(&injection.to_string()).is_err());
        }
    }

    /// Whether every number of `injection` is within the console's bounds.
    fn in_bounds(injection: Injection) -> bool {
        match injection {
            Injection::LoseAfterFrames(n) => (1..=600).contains(&n),
            Injection::LoseDuringRebuild(n)
            | Injection::OutOfMemoryInRebuild(n)
            | Injection::ThrowInRebuild(n) => n <= 10_000,
            Injection::Storm { per_second, for_ms } => {
                (1..=2000).contains(&per_second) && (1..=10_000).contains(&for_ms)
            }
            Injection::LoseNow | Injection::BadShader | Injection::Uncaptured => true,
        }
    }

    #[test]
    fn every_generated_injection_is_in_bounds_and_reads_back() {
        for (seed, creations) in [(1, 1), (7, 30), (2026, 10_001), (99, u32::MAX)] {
            for injection in ChaosPlan::new(seed, creations).take(3000) {
                assert!(
                    in_bounds(injection),
                    "{injection:?} (creations {creations})"
                );
                assert!(injection.in_bounds(), "{injection:?}");
                assert_eq!(Injection::parse(&injection.to_string()), Ok(injection));
            }
        }
    }
}
