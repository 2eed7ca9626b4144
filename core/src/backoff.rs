//! Exponential backoff with a cap on attempts: `base x 2^n` for attempt `n`.

/// The longest delay a browser timer can wait, in milliseconds (2^31 - 1, about
/// 24.8 days): `setTimeout` reads its delay as a signed 32-bit integer, and a
/// longer one wraps to "now". Every delay of a [`Backoff`] is bounded by it.
pub const MAX_DELAY_MS: u32 = i32::MAX as u32;

/// A backoff schedule: attempt `n` (0-based) waits `base_ms x 2^n`, up to
/// `max_attempts` attempts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Backoff {
    /// Delay before the first attempt, in milliseconds.
    pub base_ms: u32,
    /// How many attempts are made before giving up.
    pub max_attempts: u32,
}

impl Default for Backoff {
    /// 300 ms x 2^n, at most 4 attempts (300, 600, 1200, 2400 ms).
    fn default() -> Self {
        Backoff {
            base_ms: 300,
            max_attempts: 4,
        }
    }
}

impl Backoff {
    /// The delay before attempt `attempt` (0-based), or `None` when the cap is
    /// reached; at most [`MAX_DELAY_MS`].
    pub fn delay_ms(&self, attempt: u32) -> Option<u32> {
        if attempt >= self.max_attempts {
            return None;
        }
        let factor = 1u32.checked_shl(attempt).unwrap_or(u32::MAX);
        Some(self.base_ms.saturating_mul(factor).min(MAX_DELAY_MS))
    }

    /// Every delay of the schedule, in order.
    pub fn schedule(&self) -> Vec<u32> {
        (0..self.max_attempts)
            .filter_map(|n| self.delay_ms(n))
            .collect()
    }

    /// The total time spent waiting when every attempt fails.
    pub fn total_ms(&self) -> u64 {
        self.schedule().iter().map(|&d| u64::from(d)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_schedule_doubles_from_300_and_stops_after_four() {
        let b = Backoff::default();
        assert_eq!(b.schedule(), vec![300, 600, 1200, 2400]);
        assert_eq!(b.delay_ms(4), None);
        assert_eq!(b.total_ms(), 4500);
    }

    #[test]
    fn large_attempts_saturate_instead_of_overflowing() {
        let b = Backoff {
            base_ms: 1000,
            max_attempts: 64,
        };
        // Bounded by what a browser timer can wait: a longer delay would wrap
        // to "now" in `setTimeout`.
        assert_eq!(b.delay_ms(30), Some(MAX_DELAY_MS));
        assert_eq!(b.delay_ms(40), Some(MAX_DELAY_MS));
        assert_eq!(b.delay_ms(63), Some(MAX_DELAY_MS));
        let huge = Backoff {
            base_ms: u32::MAX,
            max_attempts: 1,
        };
        assert_eq!(huge.delay_ms(0), Some(MAX_DELAY_MS));
        assert_eq!(b.delay_ms(64), None);
    }

    #[test]
    fn zero_attempts_means_no_retry() {
        let b = Backoff {
            base_ms: 300,
            max_attempts: 0,
        };
        assert!(b.schedule().is_empty());
        assert_eq!(b.delay_ms(0), None);
    }
}
