//! What a throw abandons, undone by the trampoline that stopped it.
//!
//! A JavaScript exception thrown through WebAssembly skips the `Drop` of every
//! frame it crosses, and a future whose poll threw is leaked rather than dropped
//! (its state is half-updated). The library's guards that application code can
//! hold (a [`ScopeSet`](crate::web::scope::ScopeSet), a
//! [`FrameScope`](crate::web::FrameScope)) therefore register here what their
//! `Drop` would do, under the trampoline call (a `Context`) running when they
//! were made. When that call throws, the trampoline itself runs what each left
//! undone, newest first, before anything else runs on the device: no entry of
//! application code (a frame, a phase, `build`, `resize`, `track`, `with_live`,
//! a hook, a `Drop`) can forget it.
//!
//! A guard made outside every trampoline registers nothing: no throw there is
//! stopped by the library. A guard that outlives the call that made it (moved
//! out of it) is handed to the enclosing call when the call ends normally; one
//! moved into state that outlives a throwing call is undone all the same, and
//! its later `Drop` does nothing.

use std::cell::{Cell, RefCell};

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

/// Every registration and context of the thread. Lent only inside this module,
/// never across a call out of it.
#[derive(Default)]
struct State {
    last_id: u64,
    /// Live contexts and the context each was first entered from (0: none).
    contexts: Vec<(u64, u64)>,
    /// The contexts running now, innermost last.
    running: Vec<u64>,
    /// Registrations in the order they were made.
    entries: Vec<Entry>,
}

struct Entry {
    id: u64,
    owner: u64,
    undo: Box<dyn FnOnce()>,
}

impl State {
    fn next_id(&mut self) -> u64 {
        self.last_id += 1;
        self.last_id
    }

    fn parent_of(&self, context: u64) -> u64 {
        self.contexts
            .iter()
            .find(|(id, _)| *id == context)
            .map_or(0, |(_, parent)| *parent)
    }

    /// Whether `context` is `ancestor` or runs inside it.
    fn descends_from(&self, mut context: u64, ancestor: u64) -> bool {
        // Bounded by the number of contexts: a cycle cannot hang it.
        for _ in 0..=self.contexts.len() {
            if context == ancestor {
                return true;
            }
            if context == 0 {
                return false;
            }
            context = self.parent_of(context);
        }
        false
    }
}

fn with_state<R>(f: impl FnOnce(&mut State) -> R) -> Option<R> {
    STATE
        .try_with(|state| state.try_borrow_mut().ok().map(|mut state| f(&mut state)))
        .ok()
        .flatten()
}

/// What a guard registered: released by its `Drop` (or its closing method).
#[derive(Debug, Default)]
pub(crate) struct Registration(u64);

impl Registration {
    /// Registers `undo`, what the guard's `Drop` would do, under the context
    /// running now; nothing when none runs.
    pub(crate) fn new(undo: Box<dyn FnOnce()>) -> Self {
        let id = with_state(|state| {
            let owner = *state.running.last()?;
            let id = state.next_id();
            state.entries.push(Entry { id, owner, undo });
            Some(id)
        })
        .flatten();
        Registration(id.unwrap_or(0))
    }

    /// Releases the registration: `true` when the guard is still the one to
    /// undo its work, `false` when a throw abandoned it and the trampoline
    /// undid it already.
    pub(crate) fn release(&mut self) -> bool {
        let id = std::mem::take(&mut self.0);
        if id == 0 {
            return true;
        }
        // Dropped outside the lend: an `undo` may own values with a `Drop`.
        let removed = with_state(|state| {
            let index = state.entries.iter().position(|e| e.id == id)?;
            Some(state.entries.remove(index))
        })
        .flatten();
        removed.is_some()
    }
}

/// One trampoline call, or every poll of one trampolined future: what the
/// guards made inside it registered is undone when it throws.
#[derive(Debug, Default)]
pub(crate) struct Context {
    id: Cell<u64>,
}

impl Context {
    /// A context, known to the registry from its first [`enter`](Self::enter).
    pub(crate) fn new() -> Self {
        Context::default()
    }

    /// Makes this context the one running until the returned guard drops.
    pub(crate) fn enter(&self) -> Running {
        let id = self.id.get();
        let entered = with_state(|state| {
            let id = if id == 0 {
                let id = state.next_id();
                let parent = state.running.last().copied().unwrap_or(0);
                state.contexts.push((id, parent));
                id
            } else {
                id
            };
            state.running.push(id);
            id
        });
        if let Some(entered) = entered {
            self.id.set(entered);
        }
        Running(entered.unwrap_or(0))
    }

    /// Undoes, newest first, what every guard made inside this context (or a
    /// context entered from it) and still registered left undone: the call
    /// threw. Those contexts are forgotten.
    pub(crate) fn abandon(&self) {
        let id = self.id.get();
        if id == 0 {
            return;
        }
        let undone = with_state(|state| {
            let inside: Vec<u64> = state
                .contexts
                .iter()
                .map(|(c, _)| *c)
                .filter(|c| state.descends_from(*c, id))
                .collect();
            let (undone, kept) = std::mem::take(&mut state.entries)
                .into_iter()
                .partition::<Vec<_>, _>(|e| inside.contains(&e.owner));
            state.entries = kept;
            // The context itself is forgotten by its own `Drop`.
            state
                .contexts
                .retain(|(c, _)| *c == id || !inside.contains(c));
            undone
        })
        .unwrap_or_default();
        for entry in undone.into_iter().rev() {
            (entry.undo)();
        }
    }
}

impl Drop for Context {
    /// The context ended without a throw (or its throw was undone): what is
    /// still registered under it belongs to the context it was entered from.
    fn drop(&mut self) {
        let id = self.id.get();
        if id == 0 {
            return;
        }
        with_state(|state| {
            let parent = state.parent_of(id);
            state.contexts.retain(|(c, _)| *c != id);
            for (_, p) in state.contexts.iter_mut() {
                if *p == id {
                    *p = parent;
                }
            }
            for entry in state.entries.iter_mut() {
                if entry.owner == id {
                    entry.owner = parent;
                }
            }
        });
    }
}

/// A context running: leaves it when dropped.
#[derive(Debug)]
pub(crate) struct Running(u64);

impl Drop for Running {
    fn drop(&mut self) {
        let id = self.0;
        with_state(|state| {
            if let Some(index) = state.running.iter().rposition(|r| *r == id) {
                state.running.truncate(index);
            }
        });
    }
}

/// How many registrations are held now (for tests of the library).
#[doc(hidden)]
pub fn registered() -> usize {
    with_state(|state| state.entries.len()).unwrap_or(0)
}
