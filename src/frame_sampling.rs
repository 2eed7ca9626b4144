//! Which frames get error scopes.
//!
//! A frame scope costs six WebGPU calls (three pushes, three pops), a fixed cost
//! that is a visible share of a short frame. By default one frame in
//! [`FrameSampling::DEFAULT_EVERY`] is scoped; the others are left to the
//! uncaptured-error net, which still catches every error and tags it with the
//! frame during which it arrived. As soon as an error is seen in a frame (by the
//! net or by a frame's own scope), every frame is scoped for
//! [`FrameSampling::HUNT_FRAMES`] frames (the [`Hunt`]), so that an error that
//! repeats is caught by a scope and named with its exact frame for as long as it
//! repeats. The per-call level scopes every frame, and so does a net installed
//! on no device.

/// The policy: scope one frame in `every`, and every frame for a while after the
/// net caught an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameSampling {
    every: u32,
}

impl Default for FrameSampling {
    fn default() -> Self {
        FrameSampling {
            every: Self::DEFAULT_EVERY,
        }
    }
}

impl FrameSampling {
    /// One frame in 32 is scoped by default (about twice a second at 60 frames a
    /// second): the scope's fixed cost, about 0.1 ms a scoped frame on a software
    /// GPU in Chromium and in Firefox, spread over 32 frames stays near 1 % of a
    /// 0.3 ms frame.
    pub const DEFAULT_EVERY: u32 = 32;

    /// Frames scoped one after another once the net has caught an error.
    pub const HUNT_FRAMES: u64 = 120;

    /// Scopes one frame in `every` (`0` and `1` both mean every frame).
    pub fn every(every: u32) -> Self {
        FrameSampling {
            every: every.max(1),
        }
    }

    /// One frame in how many is scoped when nothing is wrong.
    pub fn interval(self) -> u32 {
        self.every
    }

    /// Whether frame `frame` gets scopes. `all_frames` forces them (the per-call
    /// level, or no net listening); `hunt` says whether every frame is being
    /// scoped after an error.
    pub fn scoped(self, frame: u64, all_frames: bool, hunt: &Hunt) -> bool {
        all_frames || frame.is_multiple_of(u64::from(self.every)) || hunt.is_on(frame)
    }
}

/// When every frame is scoped after an error, so that an error that repeats is
/// named with its exact frame.
///
/// A hunt runs for [`FrameSampling::HUNT_FRAMES`] frames. An error a frame's own
/// scope catches starts one or renews it. An error only the net saw (outside
/// any scope) starts one but never renews it: while every frame is scoped, such
/// an error did not come from a frame. And once a hunt has ended without a
/// single catch in a frame's scope, the net's errors are known to come from
/// outside the frames (a timer, an event handler): they start no new hunt, which
/// would cost a scope round trip every frame and name nothing, until a frame's
/// scope catches an error again (the sampled frames keep looking) or the net
/// has seen none for [`FrameSampling::HUNT_FRAMES`] frames.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hunt {
    /// The frames of the current or last hunt, first and last.
    window: Option<(u64, u64)>,
    /// Whether a frame's own scope caught an error during that hunt.
    caught_in_frames: bool,
    /// Whether errors the net sees start no hunt.
    muted: bool,
    /// The frame of the last error the net saw.
    last_uncaptured: Option<u64>,
}

impl Hunt {
    /// Whether frame `frame` is hunted.
    pub fn is_on(&self, frame: u64) -> bool {
        self.window
            .is_some_and(|(first, last)| frame >= first && frame <= last)
    }

    /// Whether errors the net sees start no hunt now.
    pub fn is_muted(&self) -> bool {
        self.muted
    }

    /// The net saw an error outside any scope, during frame `frame`.
    pub fn uncaptured(&mut self, frame: u64) {
        let quiet = self
            .last_uncaptured
            .is_none_or(|last| frame < last || frame - last > FrameSampling::HUNT_FRAMES);
        self.last_uncaptured = Some(frame);
        if quiet {
            self.muted = false;
        }
        if self.is_on(frame) {
            return;
        }
        if !quiet && self.window.is_some() && !self.caught_in_frames {
            self.muted = true;
        }
        if !self.muted {
            self.start(frame);
        }
    }

    /// A frame's own scope caught an error in frame `frame`.
    pub fn caught_in_frame(&mut self, frame: u64) {
        match self.window {
            Some((first, last)) if frame >= first && frame <= last => {
                self.window = Some((first, frame + FrameSampling::HUNT_FRAMES));
            }
            _ => self.start(frame),
        }
        self.caught_in_frames = true;
        self.muted = false;
    }

    fn start(&mut self, frame: u64) {
        self.window = Some((frame, frame + FrameSampling::HUNT_FRAMES));
        self.caught_in_frames = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUIET: Hunt = Hunt {
        window: None,
        caught_in_frames: false,
        muted: false,
        last_uncaptured: None,
    };

    fn hunt_from_net(frame: u64) -> Hunt {
        let mut hunt = QUIET;
        hunt.uncaptured(frame);
        hunt
    }

    #[test]
    fn one_frame_in_thirty_two_by_default() {
        let sampling = FrameSampling::default();
        let scoped: Vec<u64> = (1..=128)
            .filter(|&f| sampling.scoped(f, false, &QUIET))
            .collect();
        assert_eq!(scoped, vec![32, 64, 96, 128]);
    }

    #[test]
    fn every_frame_at_the_per_call_level_or_with_an_interval_of_one() {
        assert!((1..100).all(|f| FrameSampling::default().scoped(f, true, &QUIET)));
        assert!((1..100).all(|f| FrameSampling::every(1).scoped(f, false, &QUIET)));
        assert!((1..100).all(|f| FrameSampling::every(0).scoped(f, false, &QUIET)));
        assert_eq!(FrameSampling::every(0).interval(), 1);
    }

    #[test]
    fn every_frame_for_a_while_after_the_net_caught_an_error() {
        let sampling = FrameSampling::default();
        let seen = hunt_from_net(13);
        assert!(!sampling.scoped(12, false, &seen));
        for frame in 13..=13 + FrameSampling::HUNT_FRAMES {
            assert!(sampling.scoped(frame, false, &seen), "frame {frame}");
        }
        let after = 13 + FrameSampling::HUNT_FRAMES + 1;
        assert_eq!(
            sampling.scoped(after, false, &seen),
            after.is_multiple_of(32),
            "back to one in thirty-two"
        );
    }

    #[test]
    fn frame_numbers_restarting_after_a_recovery_do_not_wrap() {
        // A record from a later frame than the current one (numbers never go back
        // in the runtime, but a caller may restart them) does not underflow.
        assert!(!FrameSampling::default().scoped(3, false, &hunt_from_net(500)));
    }

    #[test]
    fn a_frame_catch_renews_the_hunt_and_a_net_error_does_not() {
        let mut hunt = hunt_from_net(10);
        hunt.uncaptured(100);
        assert!(
            !hunt.is_on(10 + FrameSampling::HUNT_FRAMES + 1),
            "not renewed"
        );
        hunt.caught_in_frame(100);
        assert!(hunt.is_on(100 + FrameSampling::HUNT_FRAMES));
        assert!(!hunt.is_on(101 + FrameSampling::HUNT_FRAMES));
        // A catch in a sampled frame, with no hunt on, starts one.
        let mut hunt = QUIET;
        hunt.caught_in_frame(64);
        assert!((64..=64 + FrameSampling::HUNT_FRAMES).all(|f| hunt.is_on(f)));
    }

    #[test]
    fn errors_from_outside_the_frames_stop_starting_hunts() {
        // A timer fails every frame from frame 10 on: one hunt, in which no
        // frame's scope catches anything, then none while the timer goes on.
        let mut hunt = QUIET;
        let mut hunted = Vec::new();
        for frame in 10..1000 {
            hunt.uncaptured(frame);
            if hunt.is_on(frame) {
                hunted.push(frame);
            }
        }
        let first_hunt: Vec<u64> = (10..=10 + FrameSampling::HUNT_FRAMES).collect();
        assert_eq!(hunted, first_hunt);
        assert!(hunt.is_muted());
        // A frame's scope catches an error: hunting again, and the net's errors
        // count again once that hunt caught something.
        hunt.caught_in_frame(1024);
        assert!(hunt.is_on(1100) && !hunt.is_muted());
        for frame in 1025..1400 {
            hunt.uncaptured(frame);
        }
        // That hunt caught something, so the timer started one more, which
        // caught nothing: muted again.
        assert!(!hunt.is_on(1399));
        assert!(hunt.is_muted());
    }

    #[test]
    fn a_quiet_spell_lets_the_net_start_hunts_again() {
        let mut hunt = QUIET;
        for frame in 10..400 {
            hunt.uncaptured(frame);
        }
        assert!(hunt.is_muted());
        // Nothing for more than a hunt's length: the next error is news.
        let news = 400 + FrameSampling::HUNT_FRAMES + 1;
        hunt.uncaptured(news);
        assert!(!hunt.is_muted());
        assert!(hunt.is_on(news) && hunt.is_on(news + FrameSampling::HUNT_FRAMES));
        // Errors no further apart than a hunt's length, past a hunt that caught
        // nothing: the same stream, and it starts nothing.
        let mut hunt = hunt_from_net(10);
        hunt.uncaptured(100);
        let after = 10 + FrameSampling::HUNT_FRAMES + 5;
        hunt.uncaptured(after);
        assert!(!hunt.is_on(after) && hunt.is_muted());
        // One error long after a single one is news.
        let mut hunt = hunt_from_net(10);
        hunt.uncaptured(after);
        assert!(hunt.is_on(after));
    }
}
