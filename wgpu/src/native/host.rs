//! The desktop as a [`Host`]: a winit window (or none: headless, drawing
//! offscreen), the [`Scheduler`]'s frames, timers and tasks, wgpu's
//! device-lost callback and uncaptured-error handler bounced to the loop
//! through the poller that polls the device, panics caught where
//! application code runs, and the fallback said in the window's title.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::task::Poll;

use webgpu_guard_core::fault::{Fault, FaultKind};
use webgpu_guard_core::supervisor::{Fallback, LossReason};

use super::faults::{FaultSink, Inbox};
use super::panics::{catching, Catching};
use super::scheduler::Scheduler;
use crate::gpu::Outlet;
use crate::host::{Handle, Host};

/// The fault sink and the scheduler as the driver's outlet.
pub(crate) struct NativeOutlet {
    pub(crate) faults: FaultSink,
    scheduler: Rc<Scheduler>,
}

impl Outlet for NativeOutlet {
    fn report(&self, fault: &Fault) {
        self.faults.report(fault);
    }

    fn report_final(&self, fault: Fault) {
        self.faults.report_final(&fault);
    }

    fn note(&self, text: &str) {
        self.faults.note(text);
    }

    fn note_final(&self, text: &str) {
        self.faults.note_final(text);
    }

    fn warn(&self, text: &str) {
        self.faults.warn(text);
    }

    fn spawn(&self, future: Pin<Box<dyn Future<Output = ()>>>) {
        self.scheduler.spawn(future);
    }

    fn set_frame(&self, frame: u64) {
        self.faults.set_frame(frame);
    }

    fn set_adapter(&self, adapter: &str) {
        self.faults.set_adapter(adapter);
    }
}

/// A device the loss watch polls, and whether its next `destroyed` was
/// injected (then it is a loss to recover from, not the application's own
/// `destroy()`).
struct Watched {
    device: wgpu::Device,
    injected: Rc<Cell<bool>>,
}

/// Who is told when the window is hidden or shown, and the watch's number.
type VisibilityWatcher = Rc<RefCell<Option<(u64, Rc<dyn Fn(bool)>)>>>;

/// What the driver asked to hear when application code crashed elsewhere.
type CrashListener = Rc<dyn Fn()>;

/// The desktop's side of the runtime.
pub(crate) struct NativeHost {
    pub(crate) scheduler: Rc<Scheduler>,
    pub(crate) outlet: Rc<NativeOutlet>,
    pub(crate) window: RefCell<Option<Arc<winit::window::Window>>>,
    pub(crate) display: RefCell<Option<winit::event_loop::OwnedDisplayHandle>>,
    /// The drawing size without a window.
    pub(crate) headless_size: Cell<(u32, u32)>,
    hidden: Cell<bool>,
    on_visibility: VisibilityWatcher,
    next_watch: Cell<u64>,
    /// Whether the runtime draws in a window (made when the loop resumes).
    pub(crate) windowed: bool,
    /// Shared with the guarded futures and the pollers, which outlive any
    /// borrow of the host.
    crashed: Rc<RefCell<Option<String>>>,
    /// Told when application code crashed where no call of the driver's ran
    /// it (a callback wgpu made during a poll).
    crash_listener: Rc<RefCell<Option<CrashListener>>>,
    pub(crate) fallback: RefCell<Option<Fallback>>,
    /// The window's title as the application gave it.
    pub(crate) title: RefCell<String>,
    watched: Rc<RefCell<Vec<Watched>>>,
}

impl NativeHost {
    pub(crate) fn new(size: (u32, u32), windowed: bool) -> Self {
        let scheduler = Scheduler::new();
        NativeHost {
            outlet: Rc::new(NativeOutlet {
                faults: FaultSink::new(),
                scheduler: scheduler.clone(),
            }),
            scheduler,
            window: RefCell::default(),
            display: RefCell::default(),
            headless_size: Cell::new((size.0.max(1), size.1.max(1))),
            hidden: Cell::new(false),
            on_visibility: Rc::default(),
            next_watch: Cell::new(0),
            windowed,
            crashed: Rc::default(),
            crash_listener: Rc::default(),
            fallback: RefCell::default(),
            title: RefCell::default(),
            watched: Rc::default(),
        }
    }

    /// The window was hidden (occluded, minimised) or shown again.
    pub(crate) fn set_hidden(&self, hidden: bool) {
        if self.hidden.replace(hidden) == hidden {
            return;
        }
        let watcher = self.on_visibility.borrow().as_ref().map(|(_, w)| w.clone());
        if let Some(watcher) = watcher {
            watcher(hidden);
        }
    }

    /// Marks `device`'s coming `destroyed` as injected; whether it is watched.
    pub(crate) fn mark_injected(&self, device: &wgpu::Device) -> bool {
        match self.watched.borrow().iter().find(|w| &w.device == device) {
            Some(watched) => {
                watched.injected.set(true);
                true
            }
            None => false,
        }
    }
}

/// Drops the registration of a watched device with the watch.
struct Unwatch {
    watched: Rc<RefCell<Vec<Watched>>>,
    device: wgpu::Device,
    _poller: Handle,
}

impl Drop for Unwatch {
    fn drop(&mut self) {
        if let Ok(mut watched) = self.watched.try_borrow_mut() {
            watched.retain(|w| w.device != self.device);
        }
    }
}

/// A listener's inbox and handler, put back to silence when dropped.
struct Listening {
    faults: FaultSink,
    inbox: Arc<Inbox>,
    device: wgpu::Device,
    _poller: Handle,
}

impl Drop for Listening {
    fn drop(&mut self) {
        // wgpu panics on an error with no handler: a let-go device's last
        // errors are dropped instead.
        self.device.on_uncaptured_error(Arc::new(|_| {}));
        self.faults.close_inbox(&self.inbox);
    }
}

impl Host for NativeHost {
    fn has_gpu_api(&self) -> bool {
        true
    }

    fn adapter_name(&self, adapter: &wgpu::Adapter, _: &wgpu::Device) -> String {
        let info = adapter.get_info();
        match info.name.is_empty() {
            true => format!("{:?} adapter", info.backend),
            false => info.name,
        }
    }

    fn instance_descriptor(&self) -> wgpu::InstanceDescriptor {
        let mut descriptor = match self.display.borrow().clone() {
            Some(display) => wgpu::InstanceDescriptor::new_with_display_handle(Box::new(display)),
            None => wgpu::InstanceDescriptor::new_without_display_handle(),
        };
        descriptor.backends = wgpu::Backends::PRIMARY;
        descriptor.with_env()
    }

    fn surface_target(&self) -> Option<wgpu::SurfaceTarget<'static>> {
        let window = self.window.borrow().clone()?;
        Some(wgpu::SurfaceTarget::from(window))
    }

    fn drawing_size(&self, _max_side: u32) -> (u32, u32) {
        match &*self.window.borrow() {
            Some(window) => {
                let size = window.inner_size();
                (size.width.max(1), size.height.max(1))
            }
            None => self.headless_size.get(),
        }
    }

    fn request_frame(&self, on_frame: Box<dyn FnOnce(f64)>) -> Handle {
        let handle = self.scheduler.request_frame(on_frame);
        if let Some(window) = &*self.window.borrow() {
            window.request_redraw();
        }
        handle
    }

    fn timer(&self, delay_ms: u32, fire: Box<dyn FnOnce()>) -> Handle {
        self.scheduler.timer(delay_ms, fire)
    }

    fn watch_visibility(&self, on_change: Box<dyn Fn(bool)>) -> Handle {
        let id = self.next_watch.get() + 1;
        self.next_watch.set(id);
        *self.on_visibility.borrow_mut() = Some((id, Rc::from(on_change)));
        /// Clears the watch it stands for, and no later one.
        struct Unwatch(VisibilityWatcher, u64);
        impl Drop for Unwatch {
            fn drop(&mut self) {
                let taken = self
                    .0
                    .try_borrow_mut()
                    .ok()
                    .and_then(|mut slot| match slot.as_ref() {
                        Some((id, _)) if *id == self.1 => slot.take(),
                        _ => None,
                    });
                drop(taken);
            }
        }
        Box::new(Unwatch(self.on_visibility.clone(), id))
    }

    fn hidden(&self) -> bool {
        self.hidden.get()
    }

    fn now_ms(&self) -> f64 {
        self.scheduler.now_ms()
    }

    fn outlet(&self) -> Rc<dyn Outlet> {
        self.outlet.clone()
    }

    fn watch_loss(
        &self,
        device: &wgpu::Device,
        on_lost: Box<dyn FnOnce(LossReason, String)>,
    ) -> Handle {
        // wgpu calls back during a poll (or from the thread that drops the
        // device): the answer waits here for the loop.
        let answer: Arc<Mutex<Option<(wgpu::DeviceLostReason, String)>>> = Arc::default();
        let written = answer.clone();
        device.set_device_lost_callback(move |reason, message| {
            if let Ok(mut slot) = written.lock() {
                slot.get_or_insert((reason, message));
            }
        });
        let injected = Rc::new(Cell::new(false));
        self.watched.borrow_mut().push(Watched {
            device: device.clone(),
            injected: injected.clone(),
        });
        let polled = device.clone();
        let on_lost = RefCell::new(Some(on_lost));
        let callback_crash = self.callback_crash();
        let poller = self.scheduler.add_poller(Rc::new(move || {
            let told = on_lost.borrow().is_none();
            // The poll runs the application's callbacks (`map_async`,
            // `on_submitted_work_done`), and wgpu panics from it when the
            // hardware reports the device lost (its poll has no error for
            // that): both are caught here, and told apart by the loss
            // callback, which wgpu runs before it panics.
            let polled = catching(|| polled.poll(wgpu::PollType::Poll));
            if told {
                // Lost and told, until the driver lets the device go: its
                // pending work still completes (the callbacks run, with
                // errors, and let go of what they hold). A panic there
                // (wgpu's again, or a callback unwrapping the loss's error)
                // is part of the loss.
                return;
            }
            let answered = answer.lock().ok().and_then(|mut a| a.take());
            if let (Err(message), None) = (&polled, &answered) {
                if !injected.get() {
                    return callback_crash.record(message);
                }
            }
            // An injected loss is seen at once: wgpu calls back only once the
            // destroyed device's queue has emptied, and frames drawn on it
            // meanwhile would only fail.
            let Some((reason, message)) = answered.or_else(|| {
                injected
                    .get()
                    .then(|| (wgpu::DeviceLostReason::Destroyed, String::new()))
            }) else {
                return;
            };
            let Some(on_lost) = on_lost.borrow_mut().take() else {
                return;
            };
            let (reason, message) = match reason {
                wgpu::DeviceLostReason::Destroyed if injected.get() => (
                    LossReason::Unknown,
                    "injected: the device was destroyed by fault injection".to_string(),
                ),
                wgpu::DeviceLostReason::Destroyed => (LossReason::Destroyed, message),
                _ => (LossReason::Unknown, message),
            };
            on_lost(reason, message);
        }));
        Box::new(Unwatch {
            watched: self.watched.clone(),
            device: device.clone(),
            _poller: poller,
        })
    }

    fn listen(&self, device: &wgpu::Device) -> Handle {
        let faults = self.outlet.faults.clone();
        let inbox = faults.inbox();
        let put = inbox.clone();
        device.on_uncaptured_error(Arc::new(move |error| put.put(error)));
        let draining = faults.clone();
        let poller = self.scheduler.add_poller(Rc::new(move || draining.drain()));
        Box::new(Listening {
            faults,
            inbox,
            device: device.clone(),
            _poller: poller,
        })
    }

    fn let_go(&self, device: &wgpu::Device) {
        device.destroy();
    }

    fn fallback_message(&self, fallback: &Fallback) -> String {
        fallback.desktop_message()
    }

    fn show_fallback(&self, fallback: &Fallback) {
        *self.fallback.borrow_mut() = Some(fallback.clone());
        if let Some(window) = &*self.window.borrow() {
            let title = self.title.borrow();
            window.set_title(&format!(
                "{title} — GPU stopped: {}",
                fallback.desktop_message()
            ));
        }
    }

    fn hide_fallback(&self) {
        self.fallback.borrow_mut().take();
        if let Some(window) = &*self.window.borrow() {
            window.set_title(&self.title.borrow());
        }
    }

    fn call_app(&self, what: &str, f: &mut dyn FnMut()) -> Result<(), Fault> {
        catching(f).map_err(|message| self.panicked(what, &message))
    }

    fn guard_future<'a, T: 'a>(
        &self,
        what: &'static str,
        future: impl Future<Output = T> + 'a,
    ) -> impl Future<Output = Result<T, Fault>> + 'a {
        let mut caught = Some(Catching::new(future));
        let crashed = self.crashed.clone();
        std::future::poll_fn(move |cx| {
            let crash = crashed.borrow().clone();
            if let Some(crash) = crash {
                // A crash elsewhere while this waited: no code of the
                // application's runs after it, the future's `Drop` included.
                std::mem::forget(caught.take());
                return Poll::Ready(Err(Fault::new(FaultKind::Exception, crash)));
            }
            let Some(future) = caught.as_mut() else {
                return Poll::Ready(Err(Fault::new(
                    FaultKind::Exception,
                    format!("{what} was polled after it ended"),
                )));
            };
            Pin::new(future).poll(cx).map(|outcome| {
                caught = None;
                outcome.map_err(|message| {
                    let text = format!("{what} panicked: {message}");
                    crashed.borrow_mut().get_or_insert(text.clone());
                    Fault::new(FaultKind::Exception, text)
                })
            })
        })
    }

    fn crashed(&self) -> Option<String> {
        self.crashed.borrow().clone()
    }

    fn on_crash_elsewhere(&self, on_crash: Box<dyn Fn()>) {
        *self.crash_listener.borrow_mut() = Some(Rc::from(on_crash));
    }

    fn state_survives_a_crash(&self) -> bool {
        true
    }

    fn spawn(&self, future: impl Future<Output = ()> + 'static) {
        self.scheduler.spawn(Box::pin(future));
    }
}

/// Who hears that a callback of the application's, run by a call of the
/// runtime's own (a poll, a submit), panicked: shared with the pollers.
#[derive(Clone)]
struct CallbackCrash {
    crashed: Rc<RefCell<Option<String>>>,
    listener: Rc<RefCell<Option<CrashListener>>>,
}

impl CallbackCrash {
    /// The application crashed in a callback: recorded (the first crash
    /// only), and the driver told.
    fn record(&self, message: &str) {
        self.crashed.borrow_mut().get_or_insert(format!(
            "a callback the device's poll ran (map_async, on_submitted_work_done) panicked: {message}"
        ));
        let listener = self.listener.borrow().clone();
        if let Some(listener) = listener {
            listener();
        }
    }
}

impl NativeHost {
    fn callback_crash(&self) -> CallbackCrash {
        CallbackCrash {
            crashed: self.crashed.clone(),
            listener: self.crash_listener.clone(),
        }
    }

    /// Runs `f`, a call of the runtime's own that may run the application's
    /// callbacks (a submit, a wait for the GPU), as the pollers run theirs: a
    /// panic there is the application's crash. `None` after one, or once the
    /// module crashed.
    pub(crate) fn running_callbacks<T>(&self, f: impl FnOnce() -> T) -> Option<T> {
        if self.crashed.borrow().is_some() {
            return None;
        }
        catching(f)
            .map_err(|message| self.callback_crash().record(&message))
            .ok()
    }

    /// Application code panicked: nothing it left can be trusted, the
    /// runtime stops for good (the `crashed` fallback).
    fn panicked(&self, what: &str, message: &str) -> Fault {
        let text = format!("{what} panicked: {message}");
        self.crashed.borrow_mut().get_or_insert(text.clone());
        Fault::new(FaultKind::Exception, text)
    }
}
