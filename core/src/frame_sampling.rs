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
//! repeats; errors that keep coming from outside the frames start fewer hunts
//! (see [`Hunt`]). The per-call level scopes every frame, and so does a net
//! installed on no device.

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

    /// Frames scoped one after another once the fault sink has caught an error.
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
/// scope catches starts one or renews it. An error only the fault sink saw (outside
/// any scope) starts one but never renews it: while every frame is scoped, such
/// an error did not come from a frame. Once a hunt has ended without a single
/// catch in a frame's scope while the fault sink's errors kept coming, those errors
/// are taken to come from outside the frames (a timer, an event handler): they
/// start no new hunt for [`Hunt::MUTE_FRAMES`] frames, which would cost a scope
/// round trip every frame and name nothing. The mute ends early when a frame's
/// scope catches an error (the sampled frames keep looking) or when the fault sink has
/// seen none for [`FrameSampling::HUNT_FRAMES`] frames; when it runs out, the
/// next error starts a hunt again, so an error in frames the sampling never
/// scopes (every odd frame, say) is still caught by a frame's scope within
/// `MUTE_FRAMES` plus a hunt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[doc(hidden)]
pub struct Hunt {
    /// The frames of the current or last hunt, first and last.
    window: Option<(u64, u64)>,
    /// Whether a frame's own scope caught an error during that hunt.
    caught_in_frames: bool,
    /// Whether that hunt has been judged fruitless already (it mutes once).
    judged: bool,
    /// The frame from which errors the fault sink sees start no hunt, while muted.
    muted_since: Option<u64>,
    /// The frame of the last error the fault sink saw.
    last_uncaptured: Option<u64>,
}

impl Hunt {
    /// How long the fault sink's errors start no hunt after a fruitless one: eight
    /// hunts' length, so that errors from outside the frames keep at most one
    /// frame in nine scoped.
    pub const MUTE_FRAMES: u64 = 8 * FrameSampling::HUNT_FRAMES;

    /// Whether frame `frame` is hunted.
    pub fn is_on(&self, frame: u64) -> bool {
        self.window
            .is_some_and(|(first, last)| frame >= first && frame <= last)
    }

    /// Whether errors the fault sink sees start no hunt now.
    pub fn is_muted(&self) -> bool {
        self.muted_since.is_some()
    }

    /// The fault sink saw an error outside any scope, during frame `frame`.
    pub fn uncaptured(&mut self, frame: u64) {
        let quiet = self
            .last_uncaptured
            .is_none_or(|last| frame < last || frame - last > FrameSampling::HUNT_FRAMES);
        self.last_uncaptured = Some(frame);
        let mute_over = self
            .muted_since
            .is_some_and(|since| frame < since || frame - since >= Self::MUTE_FRAMES);
        if quiet || mute_over {
            self.muted_since = None;
        }
        if self.is_on(frame) || self.is_muted() {
            return;
        }
        if !quiet && self.window.is_some() && !self.caught_in_frames && !self.judged {
            self.judged = true;
            self.muted_since = Some(frame);
            return;
        }
        self.start(frame);
    }

    /// A frame's own scope caught an error in frame `frame` (a catch reported
    /// late, for a frame before the hunt's first, widens it; frame numbers that
    /// restarted start a new one).
    pub fn caught_in_frame(&mut self, frame: u64) {
        let horizon = frame + FrameSampling::HUNT_FRAMES;
        self.window = Some(match self.window {
            Some((first, last)) if frame <= last && horizon >= first => {
                (first.min(frame), last.max(horizon))
            }
            _ => (frame, horizon),
        });
        self.caught_in_frames = true;
        self.judged = false;
        self.muted_since = None;
    }

    fn start(&mut self, frame: u64) {
        self.window = Some((frame, frame + FrameSampling::HUNT_FRAMES));
        self.caught_in_frames = false;
        self.judged = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUIET: Hunt = Hunt {
        window: None,
        caught_in_frames: false,
        judged: false,
        muted_since: None,
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
        // A frame's scope catches an error: hunting again, and the fault sink's errors
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

    /// Runs frames `frames`: an error in every frame `fails` says, caught by the
    /// frame's scope when the frame is scoped, else seen by the fault sink; returns the
    /// frames whose scope caught it.
    fn run(hunt: &mut Hunt, frames: std::ops::Range<u64>, fails: impl Fn(u64) -> bool) -> Vec<u64> {
        let sampling = FrameSampling::default();
        let mut caught = Vec::new();
        for frame in frames {
            if !fails(frame) {
                continue;
            }
            if sampling.scoped(frame, false, hunt) {
                hunt.caught_in_frame(frame);
                caught.push(frame);
            } else {
                hunt.uncaptured(frame);
            }
        }
        caught
    }

    #[test]
    fn an_error_in_frames_the_sampling_never_scopes_is_caught_despite_a_mute() {
        // Errors from outside the frames mute the fault sink; then a bug fails every
        // odd frame, which one frame in 32 never scopes: the mute runs out, a
        // hunt starts, and from then on every failing frame is caught.
        let mut hunt = QUIET;
        hunt.uncaptured(10);
        hunt.uncaptured(100);
        hunt.uncaptured(135);
        assert!(hunt.is_muted());
        let caught = run(&mut hunt, 141..3000, |f| f % 2 == 1);
        let first = caught.first().copied().expect("caught at last");
        assert!(
            first <= 135 + Hunt::MUTE_FRAMES + 2,
            "first caught at {first}"
        );
        let after: Vec<u64> = (first..3000).filter(|f| f % 2 == 1).collect();
        assert_eq!(caught, after, "every failing frame from then on");
    }

    #[test]
    fn errors_from_outside_the_frames_keep_few_frames_scoped() {
        // A timer fails every frame for 10 000 frames, never in a frame: one
        // hunt, then one in every `MUTE_FRAMES` plus a hunt.
        let mut hunt = QUIET;
        let mut hunted = 0;
        for frame in 1..10_000 {
            if hunt.is_on(frame) {
                hunted += 1;
            }
            hunt.uncaptured(frame);
        }
        let cycle = Hunt::MUTE_FRAMES + FrameSampling::HUNT_FRAMES + 1;
        let hunts = 10_000 / cycle + 1;
        assert!(
            hunted <= hunts * (FrameSampling::HUNT_FRAMES + 1),
            "{hunted} frames hunted"
        );
        assert!(hunted >= (hunts - 1) * FrameSampling::HUNT_FRAMES);
    }

    #[test]
    fn a_late_catch_widens_the_hunt_and_restarted_numbers_start_a_new_one() {
        let mut hunt = hunt_from_net(100);
        hunt.caught_in_frame(98);
        assert!(hunt.is_on(98) && hunt.is_on(220), "widened, not cut short");
        // Frame numbers that started again (a recovery) make a new hunt.
        let mut hunt = hunt_from_net(1000);
        hunt.caught_in_frame(3);
        assert!(hunt.is_on(3) && hunt.is_on(123));
        assert!(!hunt.is_on(124) && !hunt.is_on(1000));
        let mut hunt = hunt_from_net(5000);
        hunt.uncaptured(4);
        assert!(
            hunt.is_on(4) && !hunt.is_muted(),
            "restarted numbers are news"
        );
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
