//! What a runtime is made of: each part a module's own type, reached through
//! its methods. This is the composition root; no part reaches into another's
//! fields.

use std::rc::Rc;

use web_sys::HtmlCanvasElement;

use super::driver::Driver;
use super::fallback_view::FallbackShow;
use super::frame::FrameStats;
use super::frame_loop::FrameLoop;
use super::slot::GenerationSlot;
use super::status::Timings;
use super::timers::Timers;
use super::watchers::Watchers;
use super::{App, RuntimeOptions};
use crate::held::Held;
use crate::supervisor::{Event, RecoveryAnswer};
use crate::web::crash;
use crate::web::session::Session;

pub(super) struct Inner<A: App> {
    pub(super) app: Rc<A>,
    pub(super) canvas: HtmlCanvasElement,
    pub(super) options: RuntimeOptions,
    /// The guard's shared context: ledger, level, frame counter, the fault sink.
    pub(super) session: Session,
    /// The supervisor and the events waiting for it.
    pub(super) driver: Driver<A::Resources>,
    /// The device of the current generation, initialising or live.
    pub(super) slot: GenerationSlot<A::Resources>,
    pub(super) timers: Timers,
    pub(super) frame_loop: FrameLoop,
    pub(super) frames: FrameStats,
    pub(super) timings: Timings,
    pub(super) watchers: Watchers,
    pub(super) fallback: FallbackShow,
    /// Set by `start`, cleared by `stop`: a started runtime keeps itself alive,
    /// so that dropping every handle cannot stop it silently. (After a crash it
    /// is never cleared: nothing of the crashed state may be dropped.)
    pub(super) keep_alive: Held<Option<Rc<Inner<A>>>>,
}

impl<A: App> Inner<A> {
    pub(super) fn new(app: Rc<A>, canvas: HtmlCanvasElement, options: RuntimeOptions) -> Self {
        Inner {
            app,
            canvas,
            driver: Driver::new(options.supervisor),
            options,
            session: Session::default(),
            slot: GenerationSlot::default(),
            timers: Timers::default(),
            frame_loop: FrameLoop::new(),
            frames: FrameStats::default(),
            timings: Timings::default(),
            watchers: Watchers::default(),
            fallback: FallbackShow::default(),
            keep_alive: Held::default(),
        }
    }

    /// `Runtime::start`: the runtime keeps itself alive, the default fallback
    /// goes, the watchers are set, and the supervisor hears `Start`.
    pub(super) fn start(this: &Rc<Self>) {
        Inner::prepare_to_run(this);
        this.timings.triggered_now();
        Inner::dispatch(this, Event::Start);
    }

    /// What a start sets up before the supervisor hears of it.
    fn prepare_to_run(this: &Rc<Self>) {
        if !crash::crashed() {
            this.keep_alive.replace(Some(this.clone()));
            // The default fallback goes (a started runtime shows its canvas).
            this.fallback.remove_view();
        }
        Inner::watch_visibility(this);
        // A crashed runtime refuses the start: nothing ticks for it.
        if !crash::crashed() {
            Inner::watch_the_clock(this);
        }
        Inner::watch_the_size(this);
    }

    /// `Runtime::force_recovery`: what the supervisor will do is said on the
    /// console and returned; after a fallback the runtime starts over.
    pub(super) fn request_recovery(this: &Rc<Self>) -> RecoveryAnswer {
        let answer = this
            .driver
            .read(|s| s.recovery_answer())
            .unwrap_or(RecoveryAnswer::AlreadyUnderWay);
        if answer == RecoveryAnswer::StartingOver {
            Inner::prepare_to_run(this);
        }
        this.session.faults().note(answer.message());
        // A request that starts nothing (one under way, or the page hidden)
        // moves no init's clock.
        if answer.starts_now() {
            this.timings.triggered_now();
        }
        Inner::dispatch(this, Event::RequestRecovery);
        answer
    }

    /// Drops the runtime's hold on itself (after a stop), later: the
    /// caller may be the runtime's own code, which must not free it mid-call.
    pub(super) fn let_go(this: &Rc<Self>) {
        if crash::crashed() {
            // Nothing of the crashed state may be dropped.
            return;
        }
        if let Some(Some(held)) = this.keep_alive.take() {
            wasm_bindgen_futures::spawn_local(async move { drop(held) });
        }
    }
}

impl<A: App> Drop for Inner<A> {
    fn drop(&mut self) {
        self.frame_loop.cancel();
        self.timers.clear();
        self.watchers.stop_the_clock();
        self.clear_injections();
    }
}
