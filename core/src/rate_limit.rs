//! A sliding-window rate limiter: at most `limit` lines in any window of
//! `window_ms`, then one cut-off line (at most one per window), then silence,
//! counting what was held back. Any one-second interval holds at most 5 + 1 lines.

use std::collections::VecDeque;

/// What to do with one event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Write the event.
    Emit,
    /// Write the cut-off line instead of the event (at most once per window).
    CutOff,
    /// Hold the event back.
    Suppress,
}

/// Admits at most `limit` events in any window of `window_ms` milliseconds.
#[derive(Clone, Debug)]
pub struct RateLimiter {
    limit: u32,
    window_ms: f64,
    recent: VecDeque<f64>,
    last_cut_off: Option<f64>,
    last_seen: Option<f64>,
    emitted: u64,
    cut_offs: u64,
    suppressed: u64,
}

impl Default for RateLimiter {
    /// 5 a second.
    fn default() -> Self {
        RateLimiter::new(5, 1000.0)
    }
}

impl RateLimiter {
    /// A limiter admitting `limit` events per `window_ms` milliseconds.
    pub fn new(limit: u32, window_ms: f64) -> Self {
        RateLimiter {
            limit,
            window_ms,
            recent: VecDeque::with_capacity(limit as usize),
            last_cut_off: None,
            last_seen: None,
            emitted: 0,
            cut_offs: 0,
            suppressed: 0,
        }
    }

    /// The cut-off line written when the limit is passed.
    pub fn cut_off_line(&self) -> String {
        format!(
            "more than {} errors in a second, silencing the rest",
            self.limit
        )
    }

    /// Decides for one event at time `now_ms` (a monotonic clock; a clock that goes
    /// backwards starts afresh).
    pub fn admit(&mut self, now_ms: f64) -> Admission {
        if self.last_seen.is_some_and(|last| now_ms < last) {
            self.recent.clear();
            self.last_cut_off = None;
        }
        self.last_seen = Some(now_ms);
        while self
            .recent
            .front()
            .is_some_and(|&t| now_ms - t >= self.window_ms)
        {
            self.recent.pop_front();
        }
        if (self.recent.len() as u32) < self.limit {
            self.recent.push_back(now_ms);
            self.emitted += 1;
            return Admission::Emit;
        }
        self.suppressed += 1;
        if self
            .last_cut_off
            .is_none_or(|t| now_ms - t >= self.window_ms)
        {
            self.last_cut_off = Some(now_ms);
            self.cut_offs += 1;
            Admission::CutOff
        } else {
            Admission::Suppress
        }
    }

    /// The time until which every event is certain to be held back without a
    /// line (neither written nor the cause of a cut-off line), when the limiter is
    /// in that state now. An event at a time from the last one seen up to that
    /// time may be counted with [`Self::hold_back`] instead of going through
    /// [`Self::admit`]: the outcome is the same (an earlier time would reset the
    /// limiter).
    pub fn silent_until(&self) -> Option<f64> {
        if (self.recent.len() as u32) < self.limit {
            return None;
        }
        let reopens = self.recent.front()? + self.window_ms;
        let next_cut_off = self.last_cut_off? + self.window_ms;
        let until = reopens.min(next_cut_off);
        // A bound already past means the next refusal writes a cut-off line.
        (until > self.last_seen?).then_some(until)
    }

    /// Counts `n` events held back while silent (see [`Self::silent_until`]).
    pub fn hold_back(&mut self, n: u64) {
        self.suppressed += n;
    }

    /// Events written so far.
    pub fn emitted(&self) -> u64 {
        self.emitted
    }

    /// Cut-off lines written so far.
    pub fn cut_offs(&self) -> u64 {
        self.cut_offs
    }

    /// Events held back so far (the event that triggered a cut-off line included).
    pub fn suppressed(&self) -> u64 {
        self.suppressed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_then_one_cut_off_then_silence() {
        let mut r = RateLimiter::default();
        let got: Vec<Admission> = (0..100).map(|i| r.admit(i as f64)).collect();
        assert!(got[..5].iter().all(|a| *a == Admission::Emit));
        assert_eq!(got[5], Admission::CutOff);
        assert!(got[6..].iter().all(|a| *a == Admission::Suppress));
        assert_eq!(r.emitted(), 5);
        assert_eq!(r.cut_offs(), 1);
        assert_eq!(r.suppressed(), 95);
    }

    #[test]
    fn a_new_window_admits_again_and_cuts_off_once_more() {
        let mut r = RateLimiter::default();
        for i in 0..10 {
            r.admit(i as f64);
        }
        assert_eq!(r.admit(999.0), Admission::Suppress);
        assert_eq!(r.admit(1000.0), Admission::Emit);
        for i in 0..4 {
            assert_eq!(r.admit(1001.0 + i as f64), Admission::Emit);
        }
        assert_eq!(r.admit(1100.0), Admission::CutOff);
        assert_eq!(r.cut_offs(), 2);
        assert_eq!(r.emitted(), 10);
    }

    #[test]
    fn a_clock_going_backwards_starts_a_new_window() {
        let mut r = RateLimiter::new(1, 1000.0);
        assert_eq!(r.admit(5000.0), Admission::Emit);
        assert_eq!(r.admit(5001.0), Admission::CutOff);
        assert_eq!(r.admit(10.0), Admission::Emit);
    }

    #[test]
    fn no_second_of_a_long_storm_holds_more_than_six_lines() {
        let mut r = RateLimiter::default();
        let mut lines = Vec::new();
        // 1000 events a second for 10 seconds, at uneven times.
        for i in 0..10_000u32 {
            let t = i as f64 + (i % 7) as f64 * 0.1;
            if r.admit(t) != Admission::Suppress {
                lines.push(t);
            }
        }
        for (i, &start) in lines.iter().enumerate() {
            let in_window = lines[i..]
                .iter()
                .take_while(|&&t| t - start < 1000.0)
                .count();
            assert!(
                in_window <= 6,
                "{in_window} lines in the second from {start}"
            );
        }
        assert!(lines.len() <= 60, "{} lines in 10 s", lines.len());
        assert!(lines.len() >= 50);
    }

    #[test]
    fn every_event_before_silent_until_is_suppressed() {
        // Uneven bursts: whenever the limiter says it is silent until T, an event at
        // any time before T is suppressed, and one at T is not always.
        let mut next = crate::test_uniform(7);
        let mut r = RateLimiter::default();
        let mut now = 0.0;
        let mut silent_seen = 0;
        let mut reopened_at_the_bound = 0;
        for _ in 0..20_000 {
            now += if next() < 0.9 {
                next() * 5.0
            } else {
                next() * 900.0
            };
            r.admit(now);
            if let Some(until) = r.silent_until() {
                silent_seen += 1;
                assert!(until > now, "silent until {until}, now {now}");
                let probe_at = now + (until - now) * next() * 0.999;
                let mut copy = r.clone();
                assert_eq!(
                    copy.admit(probe_at),
                    Admission::Suppress,
                    "at {probe_at} < {until}"
                );
                let mut copy = r.clone();
                if copy.admit(until) != Admission::Suppress {
                    reopened_at_the_bound += 1;
                }
            }
        }
        assert!(silent_seen > 1000, "{silent_seen}");
        assert!(reopened_at_the_bound > 100, "{reopened_at_the_bound}");
    }

    #[test]
    fn not_silent_while_lines_are_admitted_or_a_cut_off_is_due() {
        let mut r = RateLimiter::default();
        for i in 0..5 {
            assert_eq!(r.silent_until(), None);
            r.admit(i as f64);
        }
        // Full, but the next refusal writes the cut-off line.
        assert_eq!(r.silent_until(), None);
        assert_eq!(r.admit(10.0), Admission::CutOff);
        assert_eq!(r.silent_until(), Some(1000.0));
        r.hold_back(3);
        assert_eq!(r.suppressed(), 4);
    }

    #[test]
    fn cut_off_line_names_the_limit() {
        assert_eq!(
            RateLimiter::default().cut_off_line(),
            "more than 5 errors in a second, silencing the rest"
        );
    }
}
