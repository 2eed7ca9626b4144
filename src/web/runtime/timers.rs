//! The supervisor's timers (a backoff wait and an attempt's deadline at most),
//! by token. Dropping one cancels it.

use gloo_timers::callback::Timeout;

use crate::held::Held;

/// The scheduled timers.
#[derive(Default)]
pub(super) struct Timers(Held<Vec<(u64, Timeout)>>);

impl Timers {
    /// Keeps `timeout` as timer `token` (replacing one of the same token).
    pub(super) fn keep(&self, token: u64, timeout: Timeout) {
        let replaced = self.0.with(|timers| {
            let at = timers.iter().position(|(t, _)| *t == token);
            let replaced = at.map(|at| timers.swap_remove(at));
            timers.push((token, timeout));
            replaced
        });
        drop(replaced);
    }

    /// Cancels timer `token`.
    pub(super) fn cancel(&self, token: u64) {
        // Dropped outside the lend: a `Timeout`'s drop is the browser's only.
        let cancelled = self.0.with(|timers| {
            let at = timers.iter().position(|(t, _)| *t == token);
            at.map(|at| timers.swap_remove(at))
        });
        drop(cancelled);
    }

    /// Timer `token` fired: dropped once its closure (running now) has
    /// returned, in a microtask, so that no fired timer is leaked.
    pub(super) fn fired(&self, token: u64) {
        let fired = self.0.with(|timers| {
            let at = timers.iter().position(|(t, _)| *t == token);
            at.map(|at| timers.swap_remove(at).1)
        });
        if let Some(Some(fired)) = fired {
            wasm_bindgen_futures::spawn_local(async move { drop(fired) });
        }
    }

    /// Cancels every timer.
    pub(super) fn clear(&self) {
        drop(self.0.take());
    }
}
