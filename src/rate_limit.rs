//! A fixed-window rate limiter: `limit` lines per window, then one cut-off line,
//! then silence until the window ends, counting what was held back.

/// What to do with one event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Write the event.
    Emit,
    /// Write the cut-off line instead of the event (once per window).
    CutOff,
    /// Hold the event back.
    Suppress,
}

/// Counts events per window of `window_ms` and admits at most `limit` of them.
#[derive(Clone, Debug)]
pub struct RateLimiter {
    limit: u32,
    window_ms: f64,
    window_start: Option<f64>,
    in_window: u32,
    emitted: u64,
    cut_offs: u64,
    suppressed: u64,
    suppressed_in_window: u64,
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
            window_start: None,
            in_window: 0,
            emitted: 0,
            cut_offs: 0,
            suppressed: 0,
            suppressed_in_window: 0,
        }
    }

    /// The cut-off line written when the limit is passed.
    pub fn cut_off_line(&self) -> String {
        format!(
            "more than {} errors in a second, silencing the rest",
            self.limit
        )
    }

    /// Decides for one event at time `now_ms` (a monotonic clock).
    pub fn admit(&mut self, now_ms: f64) -> Admission {
        let expired = match self.window_start {
            None => true,
            Some(start) => now_ms - start >= self.window_ms || now_ms < start,
        };
        if expired {
            self.window_start = Some(now_ms);
            self.in_window = 0;
            self.suppressed_in_window = 0;
        }
        self.in_window = self.in_window.saturating_add(1);
        if self.in_window <= self.limit {
            self.emitted += 1;
            Admission::Emit
        } else if self.in_window == self.limit + 1 {
            self.cut_offs += 1;
            self.suppressed += 1;
            self.suppressed_in_window += 1;
            Admission::CutOff
        } else {
            self.suppressed += 1;
            self.suppressed_in_window += 1;
            Admission::Suppress
        }
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

    /// Events held back in the current window.
    pub fn suppressed_in_window(&self) -> u64 {
        self.suppressed_in_window
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
        assert_eq!(r.suppressed_in_window(), 95);
    }

    #[test]
    fn a_new_window_admits_again_and_cuts_off_once_more() {
        let mut r = RateLimiter::default();
        for i in 0..10 {
            r.admit(i as f64);
        }
        assert_eq!(r.admit(999.0), Admission::Suppress);
        assert_eq!(r.admit(1000.0), Admission::Emit);
        assert_eq!(r.suppressed_in_window(), 0);
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
    fn cut_off_line_names_the_limit() {
        assert_eq!(
            RateLimiter::default().cut_off_line(),
            "more than 5 errors in a second, silencing the rest"
        );
    }
}
