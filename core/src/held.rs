//! The runtime's own state, in cells that lend it only to a closure, and the
//! record of the bugs that would break that rule.
//!
//! A [`Held`] value is reached through [`Held::with`] alone: no borrow guard
//! ever leaves this module, so none can be kept across an await, a callback or
//! code the library does not own, and none is left taken when such code
//! throws. [`foreign`] is the one door to that code (the application's
//! `build`, `frame`, `resize` and `Drop`, hooks, sinks): it finds nothing held,
//! or records the bug with its place. A `with` that finds its cell lent (a
//! closure that reached back into the runtime) does nothing and records the
//! bug, once per place: [`take_bugs`] hands them to the fault path (the
//! record is the page's: with two runtimes, the first to look reports it).

// The browser layer is its user; on the host only its tests run.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

use std::cell::{Cell, RefCell};
use std::panic::Location;

thread_local! {
    /// How many `with` closures run now.
    static LENT: Cell<u32> = const { Cell::new(0) };
    /// Bugs seen and not yet reported, and every place ever recorded (each is
    /// reported once).
    static BUGS: RefCell<(Vec<String>, Vec<&'static Location<'static>>)> =
        const { RefCell::new((Vec::new(), Vec::new())) };
    /// Bugs recorded so far.
    static BUG_COUNT: Cell<u32> = const { Cell::new(0) };
    /// Cleared after a crash: a trap inside a lend leaves the count wrong.
    static CHECKING: Cell<bool> = const { Cell::new(true) };
}

/// Stops every check (after a crash, when a trap may have struck inside a
/// lend and nothing of the module's state can be trusted).
pub fn stop_checking() {
    CHECKING.with(|c| c.set(false));
}

/// A value of the runtime, lent to one closure at a time.
pub struct Held<T>(RefCell<T>);

impl<T> std::fmt::Debug for Held<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.try_borrow_mut().is_ok() {
            "Held"
        } else {
            "Held (lent)"
        })
    }
}

impl<T: Default> Default for Held<T> {
    fn default() -> Self {
        Held(RefCell::new(T::default()))
    }
}

impl<T> Held<T> {
    /// Holds `value`.
    pub fn new(value: T) -> Self {
        Held(RefCell::new(value))
    }

    /// Lends the value to `f`; `None` (the bug recorded with the caller's
    /// place) when it is lent already.
    #[track_caller]
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        let place = Location::caller();
        let Ok(mut value) = self.0.try_borrow_mut() else {
            record(
                place,
                "runtime state reached while it was lent (a closure reached back into the runtime)",
            );
            return None;
        };
        LENT.with(|n| n.set(n.get() + 1));
        let result = f(&mut value);
        LENT.with(|n| n.set(n.get().saturating_sub(1)));
        Some(result)
    }

    /// Replaces the value, returning the old one.
    #[track_caller]
    pub fn replace(&self, value: T) -> Option<T> {
        self.with(|held| std::mem::replace(held, value))
    }
}

impl<T: Default> Held<T> {
    /// Takes the value, leaving the default.
    #[track_caller]
    pub fn take(&self) -> Option<T> {
        self.with(std::mem::take)
    }
}

impl<T: Clone> Held<T> {
    /// A copy of the value.
    #[track_caller]
    pub fn get(&self) -> Option<T> {
        self.with(|held| held.clone())
    }
}

/// Checks, before code the library does not own runs, that nothing of the
/// runtime is lent; records the bug with the caller's place otherwise.
#[track_caller]
pub fn foreign() {
    if LENT.with(Cell::get) > 0 {
        record(
            Location::caller(),
            "code the library does not own called while runtime state was lent",
        );
    }
}

fn record(place: &'static Location<'static>, what: &str) {
    if !CHECKING.with(Cell::get) {
        return;
    }
    BUG_COUNT.with(|n| n.set(n.get() + 1));
    BUGS.with(|bugs| {
        let Ok(mut bugs) = bugs.try_borrow_mut() else {
            return;
        };
        let (pending, seen) = &mut *bugs;
        if seen.contains(&place) {
            return;
        }
        seen.push(place);
        pending.push(format!(
            "webgpu-guard bug: {what}, at {}:{}",
            place.file(),
            place.line()
        ));
    });
}

/// The bugs recorded since the last call, each place once.
pub fn take_bugs() -> Vec<String> {
    BUGS.with(|bugs| {
        bugs.try_borrow_mut()
            .map(|mut b| std::mem::take(&mut b.0))
            .unwrap_or_default()
    })
}

/// Bugs recorded so far (every occurrence).
pub fn bug_count() -> u32 {
    BUG_COUNT.with(Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_reached_while_lent_does_nothing_and_records_its_place_once() {
        let cell = Held::new(1);
        let before = bug_count();
        let _ = take_bugs();
        for _ in 0..3 {
            let inner = cell.with(|outer| {
                *outer += 1;
                // Reaching back into the same cell: refused, recorded.
                cell.with(|v| *v += 100)
            });
            assert_eq!(inner, Some(None));
        }
        assert_eq!(cell.get(), Some(4));
        assert_eq!(bug_count() - before, 3);
        let bugs = take_bugs();
        assert_eq!(bugs.len(), 1, "{bugs:?}");
        assert!(bugs[0].contains("src/held.rs:"), "{bugs:?}");
        assert!(take_bugs().is_empty());
    }

    #[test]
    fn foreign_code_called_while_a_cell_is_lent_is_a_recorded_bug() {
        let cell = Held::new(());
        let _ = take_bugs();
        foreign();
        assert!(take_bugs().is_empty(), "nothing lent: no bug");
        cell.with(|_| foreign());
        let bugs = take_bugs();
        assert_eq!(bugs.len(), 1, "{bugs:?}");
        assert!(bugs[0].contains("not own"), "{bugs:?}");
        foreign();
        assert!(take_bugs().is_empty(), "the lend ended with the closure");
    }
}
