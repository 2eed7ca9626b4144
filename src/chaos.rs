//! Fault injection as plain Rust: what can be injected, how a console spells it,
//! and seeded random sequences of injections (the same seed gives the same
//! sequence, on any machine), for soak tests and for `gpuChaos(seed, count)`.
//!
//! The browser side ([`crate::web::inject`]) carries injections out.

use std::fmt;

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
    /// One invalid object outside every scope: the net's case.
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

    /// Parses `kind` or `kind:n` (`storm:rate:ms`), as [`fmt::Display`] writes it.
    pub fn parse(spec: &str) -> Result<Injection, String> {
        let mut parts = spec.split(':');
        let kind = parts.next().unwrap_or_default();
        let mut number = |default: u32| -> Result<u32, String> {
            match parts.next() {
                None => Ok(default),
                Some(text) => text
                    .parse::<u32>()
                    .map_err(|_| format!("\"{text}\" is not a whole number in \"{spec}\"")),
            }
        };
        let injection = match kind {
            "lose" => Injection::LoseNow,
            "lose-after-frames" => Injection::LoseAfterFrames(number(3)?),
            "lose-in-build" => Injection::LoseDuringRebuild(number(2)?),
            "oom-in-build" => Injection::OutOfMemoryInRebuild(number(0)?),
            "throw-in-build" => Injection::ThrowInRebuild(number(0)?),
            "storm" => Injection::Storm {
                per_second: number(1000)?,
                for_ms: number(500)?,
            },
            "bad-shader" => Injection::BadShader,
            "uncaptured" => Injection::Uncaptured,
            other => {
                return Err(format!(
                    "unknown injection \"{other}\": use one of {}",
                    Injection::KINDS.join(", ")
                ))
            }
        };
        if parts.next().is_some() {
            return Err(format!("too many parts in \"{spec}\""));
        }
        Ok(injection)
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
/// use webgpu_guard::chaos::{ChaosPlan, Injection};
/// let steps: Vec<Injection> = ChaosPlan::new(2026, 30).take(3).collect();
/// assert_eq!(steps, ChaosPlan::new(2026, 30).take(3).collect::<Vec<_>>());
/// assert_eq!(Injection::parse(&steps[0].to_string()), Ok(steps[0]));
/// ```
#[derive(Clone, Debug)]
pub struct ChaosPlan {
    state: u64,
    /// How many creations a build makes at most (bounds the Nth-creation faults).
    creations: u32,
}

impl ChaosPlan {
    /// A plan from `seed`, for an application whose build makes up to
    /// `creations` tracked creations.
    pub fn new(seed: u64, creations: u32) -> Self {
        ChaosPlan {
            state: seed,
            creations: creations.max(1),
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

    /// The next injection.
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
        assert!(Injection::parse("meltdown")
            .unwrap_err()
            .contains("use one of"));
        assert!(Injection::parse("oom-in-build:x").is_err());
        assert!(Injection::parse("lose:1:2").is_err());
    }
}
