//! What the runtime watches besides its device: the page's visibility, the
//! clock (about once a second, for the supervisor to judge stalls by) and the
//! canvas's displayed size. Each is set at the first start (the clock at
//! every start: a stop stops it) and holds the runtime weakly.

use std::cell::Cell;
use std::rc::{Rc, Weak};

use gloo_timers::callback::Interval;

use super::{App, CanvasSize, Inner};
use crate::held::Held;
use crate::supervisor::Event;
use crate::web::crash;
use crate::web::js::now_ms;
use crate::web::listener::EventListener;
use crate::web::sizer::CanvasSizer;

/// The watchers and what they last saw.
#[derive(Default)]
pub(super) struct Watchers {
    visibility: Held<Option<EventListener>>,
    clock: Held<Option<Interval>>,
    /// Shared out of its cell for each use: its calls reach the page.
    sizer: Held<Option<Rc<CanvasSizer>>>,
    /// When the last frame ran (or the wait for one started again).
    last_frame_ms: Cell<f64>,
    /// Whether a stall was reported and no frame came since.
    stalled: Cell<bool>,
}

impl Watchers {
    /// A frame ran now (or the wait for the next starts again now).
    pub(super) fn frame_ran(&self) {
        self.last_frame_ms.set(now_ms());
        self.stalled.set(false);
    }

    pub(super) fn set_stalled(&self) {
        self.stalled.set(true);
    }

    pub(super) fn stalled(&self) -> bool {
        self.stalled.get()
    }

    /// The clock stops (on a stop, on drop and after a crash; a start sets
    /// it again).
    pub(super) fn stop_the_clock(&self) {
        drop(self.clock.take());
    }

    /// The drawing buffer the canvas needs now, clamped to `max_dimension`;
    /// `None` when it keeps its size (or nothing follows it).
    pub(super) fn wanted_size(
        &self,
        canvas: &web_sys::HtmlCanvasElement,
        max_dimension: u32,
    ) -> Option<(u32, u32)> {
        let wanted = self.sizer.get().flatten()?.wanted(max_dimension)?;
        let now = (canvas.width(), canvas.height());
        (wanted != now).then_some(wanted)
    }

    /// Reads the canvas's displayed size again now.
    fn refresh_size(&self) {
        if let Some(Some(sizer)) = self.sizer.get() {
            sizer.refresh();
        }
    }
}

pub(super) fn page_hidden() -> bool {
    web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| js_sys::Reflect::get(&d, &"visibilityState".into()).ok())
        .and_then(|v| v.as_string())
        .is_some_and(|state| state == "hidden")
}

impl<A: App> Inner<A> {
    pub(super) fn watch_visibility(this: &Rc<Self>) {
        if this.watchers.visibility.with(|v| v.is_some()) != Some(false) {
            return;
        }
        if page_hidden() {
            let runtime = this.clone();
            // Queued behind whatever runs now.
            wasm_bindgen_futures::spawn_local(async move {
                Inner::dispatch(&runtime, Event::Visibility { hidden: true });
            });
        }
        let Some(document) = web_sys::window().and_then(|w| w.document()) else {
            return;
        };
        let weak: Weak<Self> = Rc::downgrade(this);
        let listener = EventListener::new(&document, "visibilitychange", move |_| {
            let Some(runtime) = weak.upgrade() else {
                return;
            };
            if crash::crashed() {
                return Inner::on_crash(&runtime);
            }
            let hidden = page_hidden();
            if hidden {
                // No frames from a timer while nobody sees them.
                runtime.frame_loop.stop_driving();
            } else {
                // Shown: the init that waited for it starts now (an init
                // already under way keeps its clock).
                if runtime.driver.read(|s| s.waiting_for_visible()) == Some(true) {
                    runtime.timings.triggered_now();
                }
                // No stall while hidden: the wait starts again.
                runtime.watchers.last_frame_ms.set(now_ms());
            }
            Inner::dispatch(&runtime, Event::Visibility { hidden });
        });
        this.watchers.visibility.replace(Some(listener));
    }

    /// Reads the clock for the supervisor about once a second: it judges stalls
    /// (and anything else that depends on time) from it.
    pub(super) fn watch_the_clock(this: &Rc<Self>) {
        if this.watchers.clock.with(|c| c.is_some()) != Some(false) {
            return;
        }
        let weak = Rc::downgrade(this);
        let clock = Interval::new(1000, move || {
            let Some(runtime) = weak.upgrade() else {
                return;
            };
            Inner::dispatch(
                &runtime,
                Event::Tick {
                    now_ms: now_ms() as u64,
                    last_frame_ms: runtime.watchers.last_frame_ms.get() as u64,
                    frame_pending: runtime.frame_loop.pending(),
                },
            );
        });
        this.watchers.clock.replace(Some(clock));
    }

    pub(super) fn watch_the_size(this: &Rc<Self>) {
        if this.options.canvas_size != CanvasSize::FollowDisplay {
            return;
        }
        if this.watchers.sizer.with(|s| s.is_none()) != Some(true) {
            return;
        }
        // Made outside the cell: it reaches the page.
        let sizer = CanvasSizer::observe(&this.canvas).map(Rc::new);
        this.watchers.sizer.replace(sizer);
    }

    /// Gives the canvas the size it needs before a device is configured on it:
    /// `build` sees the size, and no resize follows.
    pub(super) fn size_for(this: &Rc<Self>, device: &web_sys::GpuDevice) {
        this.watchers.refresh_size();
        let max = device.limits().max_texture_dimension_2d();
        if let Some((width, height)) = this.watchers.wanted_size(&this.canvas, max) {
            this.canvas.set_width(width);
            this.canvas.set_height(height);
        }
    }
}
