//! Which frames get error scopes.
//!
//! A frame scope costs six WebGPU calls (three pushes, three pops), a fixed cost
//! that is a visible share of a short frame. By default one frame in
//! [`FrameSampling::DEFAULT_EVERY`] is scoped; the others are left to the
//! uncaptured-error net, which still catches every error and tags it with the
//! frame during which it arrived. As soon as an error is seen in a frame (by the
//! net or by a frame's own scope), every frame is scoped for
//! [`FrameSampling::HUNT_FRAMES`] frames, so that an error that repeats is caught
//! by a scope and named with its exact frame for as long as it repeats. The
//! per-call level scopes every frame, and so does a net installed on no device.

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
    /// level, or no net listening); `last_error_frame` is the last frame in which
    /// an error was seen, if any.
    pub fn scoped(self, frame: u64, all_frames: bool, last_error_frame: Option<u64>) -> bool {
        if all_frames || frame.is_multiple_of(u64::from(self.every)) {
            return true;
        }
        match last_error_frame {
            Some(seen) => frame >= seen && frame - seen <= Self::HUNT_FRAMES,
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_frame_in_thirty_two_by_default() {
        let sampling = FrameSampling::default();
        let scoped: Vec<u64> = (1..=128)
            .filter(|&f| sampling.scoped(f, false, None))
            .collect();
        assert_eq!(scoped, vec![32, 64, 96, 128]);
    }

    #[test]
    fn every_frame_at_the_per_call_level_or_with_an_interval_of_one() {
        assert!((1..100).all(|f| FrameSampling::default().scoped(f, true, None)));
        assert!((1..100).all(|f| FrameSampling::every(1).scoped(f, false, None)));
        assert!((1..100).all(|f| FrameSampling::every(0).scoped(f, false, None)));
        assert_eq!(FrameSampling::every(0).interval(), 1);
    }

    #[test]
    fn every_frame_for_a_while_after_the_net_caught_an_error() {
        let sampling = FrameSampling::default();
        let seen = Some(13);
        assert!(!sampling.scoped(12, false, seen));
        for frame in 13..=13 + FrameSampling::HUNT_FRAMES {
            assert!(sampling.scoped(frame, false, seen), "frame {frame}");
        }
        let after = 13 + FrameSampling::HUNT_FRAMES + 1;
        assert_eq!(
            sampling.scoped(after, false, seen),
            after.is_multiple_of(32),
            "back to one in thirty-two"
        );
    }

    #[test]
    fn frame_numbers_restarting_after_a_recovery_do_not_wrap() {
        // A record from a later frame than the current one (numbers never go back
        // in the runtime, but a caller may restart them) does not underflow.
        assert!(!FrameSampling::default().scoped(3, false, Some(500)));
    }
}
