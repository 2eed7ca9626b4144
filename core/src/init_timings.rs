//! How long each device's init took, step by step, and from its trigger (a
//! start, a loss, a request) to its first frame: what `gpuStatus()` reports
//! as `coldStart` and `lastInit` on every front, and the smoothed frame time
//! (`frameMs`). The fronts read their platform's clock and hand the times in;
//! the arithmetic is here once.

use std::cell::Cell;

/// How long one init took, step by step (milliseconds).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct InitTimings {
    /// From the trigger (start, loss, request) to the attempt's start: the wait.
    pub wait_ms: f64,
    /// The adapter's request.
    pub adapter_ms: f64,
    /// The device's request.
    pub device_ms: f64,
    /// The canvas's (or the surface's) configuration.
    pub configure_ms: f64,
    /// The application's `build` (resources and pipelines).
    pub resources_ms: f64,
    /// From the attempt's start to the first frame submitted.
    pub to_first_frame_ms: f64,
    /// From the trigger to the first frame submitted (the wait included).
    pub to_picture_ms: f64,
    /// When the first frame was submitted, on the platform's clock
    /// (`performance.now()` in the browser), in milliseconds.
    pub first_frame_at_ms: f64,
    /// Whether this was a recovery (not the first start).
    pub recovery: bool,
}

/// The moments one attempt's steps ended, on the platform's clock
/// (milliseconds): the attempt's start, then the adapter, the device, the
/// configuration and `build`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AttemptSteps {
    /// The attempt began.
    pub started: f64,
    /// The adapter arrived.
    pub adapter: f64,
    /// The device arrived.
    pub device: f64,
    /// The canvas or surface was configured.
    pub configured: f64,
    /// `build` returned.
    pub built: f64,
}

/// The timings of a runtime's inits: when the last trigger came, the init
/// whose first frame is awaited, the first start's and the last init's.
#[derive(Debug, Default)]
pub struct InitClock {
    trigger_ms: Cell<f64>,
    cold_start: Cell<Option<InitTimings>>,
    last_init: Cell<Option<InitTimings>>,
    /// The timings of the init whose first frame has not come yet, and when
    /// its attempt started.
    pending: Cell<Option<(InitTimings, f64)>>,
}

impl InitClock {
    /// A start, a loss or a request came at `now`.
    pub fn triggered(&self, now: f64) {
        self.trigger_ms.set(now);
    }

    /// An attempt finished its steps (`recovery`: not the first start); its
    /// first frame completes the timings.
    pub fn init_done(&self, steps: AttemptSteps, recovery: bool) {
        let timings = InitTimings {
            wait_ms: (steps.started - self.trigger_ms.get()).max(0.0),
            adapter_ms: steps.adapter - steps.started,
            device_ms: steps.device - steps.adapter,
            configure_ms: steps.configured - steps.device,
            resources_ms: steps.built - steps.configured,
            recovery,
            ..InitTimings::default()
        };
        self.pending.set(Some((timings, steps.started)));
    }

    /// The first frame of the init that finished was submitted at `now`.
    pub fn first_frame(&self, now: f64) {
        if let Some((mut timings, started)) = self.pending.take() {
            timings.to_first_frame_ms = now - started;
            timings.to_picture_ms = now - self.trigger_ms.get();
            timings.first_frame_at_ms = now;
            // The first start's only: a start after a stop, or starting over
            // after a fallback, finds the browser warm.
            if !timings.recovery && self.cold_start.get().is_none() {
                self.cold_start.set(Some(timings));
            }
            self.last_init.set(Some(timings));
        }
    }

    /// The first start's timings, once its first frame came.
    pub fn cold_start(&self) -> Option<InitTimings> {
        self.cold_start.get()
    }

    /// The last init's timings, once its first frame came.
    pub fn last_init(&self) -> Option<InitTimings> {
        self.last_init.get()
    }
}

/// A frame time `elapsed` smoothed into `smoothed` (0: none yet), as both
/// fronts report `frameMs`.
pub fn smoothed(smoothed: f64, elapsed: f64) -> f64 {
    if smoothed == 0.0 {
        elapsed
    } else {
        smoothed * 0.9 + elapsed * 0.1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(started: f64) -> AttemptSteps {
        AttemptSteps {
            started,
            adapter: started + 1.0,
            device: started + 3.0,
            configured: started + 4.0,
            built: started + 10.0,
        }
    }

    #[test]
    fn a_cold_start_and_a_recovery_are_timed_from_their_triggers() {
        let clock = InitClock::default();
        clock.triggered(100.0);
        clock.init_done(steps(100.0), false);
        assert_eq!(clock.cold_start(), None, "no first frame yet");
        clock.first_frame(120.0);
        let cold = clock.cold_start().unwrap();
        assert_eq!(
            (
                cold.wait_ms,
                cold.adapter_ms,
                cold.device_ms,
                cold.configure_ms,
                cold.resources_ms
            ),
            (0.0, 1.0, 2.0, 1.0, 6.0)
        );
        assert_eq!((cold.to_first_frame_ms, cold.to_picture_ms), (20.0, 20.0));
        assert_eq!(cold.first_frame_at_ms, 120.0);
        assert!(!cold.recovery);

        // A loss at 500; the attempt waits for its backoff and starts at 700.
        clock.triggered(500.0);
        clock.init_done(steps(700.0), true);
        clock.first_frame(730.0);
        let last = clock.last_init().unwrap();
        assert_eq!(last.wait_ms, 200.0);
        assert_eq!((last.to_first_frame_ms, last.to_picture_ms), (30.0, 230.0));
        assert!(last.recovery);
        assert_eq!(clock.cold_start(), Some(cold), "the cold start is kept");
    }

    #[test]
    fn a_start_after_a_stop_is_no_cold_start() {
        let clock = InitClock::default();
        clock.triggered(0.0);
        clock.init_done(steps(0.0), false);
        clock.first_frame(20.0);
        // Stopped, then started again at 1000: not a recovery, not cold.
        clock.triggered(1000.0);
        clock.init_done(steps(1000.0), false);
        clock.first_frame(1015.0);
        assert_eq!(clock.cold_start().unwrap().first_frame_at_ms, 20.0);
        assert_eq!(clock.last_init().unwrap().first_frame_at_ms, 1015.0);
    }

    #[test]
    fn a_second_frame_changes_nothing() {
        let clock = InitClock::default();
        clock.triggered(0.0);
        clock.init_done(steps(0.0), false);
        clock.first_frame(20.0);
        clock.first_frame(40.0);
        assert_eq!(clock.last_init().unwrap().first_frame_at_ms, 20.0);
    }
}
