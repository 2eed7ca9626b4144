//! A runtime in a winit window: the window made when the event loop
//! resumes, frames drawn at `RedrawRequested`, the loop's timers kept by
//! `ControlFlow::WaitUntil` (never a sleeping thread), tasks woken by an
//! event sent to the loop, and the console's actions on keys.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use winit::application::ApplicationHandler;
use winit::event::{ElementState, WindowEvent};
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop};
use winit::keyboard::{Key, NamedKey};
use winit::window::{Window, WindowAttributes, WindowId};

use webgpu_guard_core::fault::{Fault, FaultKind};

use super::Runtime;
use crate::app::App;

/// How a runtime's window is made.
#[derive(Clone, Debug)]
pub struct WindowOptions {
    /// The window's attributes (title, size...).
    pub attributes: WindowAttributes,
    /// The console's actions on keys: F8 injects a loss
    /// ([`Runtime::inject_loss`]), F9 forces a recovery
    /// ([`Runtime::force_recovery`], the browser's `matarGPU()`), F10 writes
    /// the status, F11 stops and F12 starts again.
    pub console_keys: bool,
}

impl WindowOptions {
    /// A window titled `title`, of `width` x `height` logical pixels, with
    /// the console's keys.
    pub fn new(title: &str, width: u32, height: u32) -> Self {
        WindowOptions {
            attributes: Window::default_attributes()
                .with_title(title)
                .with_inner_size(winit::dpi::LogicalSize::new(width, height)),
            console_keys: true,
        }
    }
}

impl Default for WindowOptions {
    fn default() -> Self {
        WindowOptions {
            attributes: Window::default_attributes().with_title("webgpu-guard-wgpu"),
            console_keys: true,
        }
    }
}

/// The loop was asked to wake (a task woken).
#[derive(Debug)]
struct Wake;

/// While tasks wait on the GPU, how soon the loop turns again to poll.
const POLL_WHILE_WAITING: Duration = Duration::from_millis(2);
/// How soon it turns again while a device runs and no frame is asked for
/// (a loss is found by polling).
const POLL_WHILE_RUNNING: Duration = Duration::from_millis(100);

/// How long the end of `run` waits for telemetry to go.
const TELEMETRY_AT_EXIT: Duration = Duration::from_secs(2);

struct Handler<A: App> {
    runtime: Runtime<A>,
    options: WindowOptions,
    window: Option<Arc<Window>>,
}

impl<A: App> Runtime<A> {
    /// Opens the window and runs the event loop until the window is closed
    /// (the runtime is stopped then). `Err` when the platform has no event
    /// loop or window to give.
    pub fn run(&self, window: WindowOptions) -> Result<(), Fault> {
        let event_loop = EventLoop::<Wake>::with_user_event()
            .build()
            .map_err(|e| Fault::new(FaultKind::Exception, format!("no event loop: {e}")))?;
        let proxy = Mutex::new(event_loop.create_proxy());
        let host = &self.driver.host;
        host.scheduler.set_wake_up(Arc::new(move || {
            if let Ok(proxy) = proxy.lock() {
                let _ = proxy.send_event(Wake);
            }
        }));
        *host.display.borrow_mut() = Some(event_loop.owned_display_handle());
        *host.title.borrow_mut() = window.attributes.title.clone();
        let mut handler = Handler {
            runtime: self.clone(),
            options: window,
            window: None,
        };
        let ran = event_loop
            .run_app(&mut handler)
            .map_err(|e| Fault::new(FaultKind::Exception, format!("the event loop failed: {e}")));
        // What telemetry holds (the crash that closed it, say) goes before
        // the program ends.
        self.faults().flush(TELEMETRY_AT_EXIT);
        ran
    }
}

impl<A: App> Handler<A> {
    fn key(&self, key: &Key) {
        let runtime = &self.runtime;
        match key {
            Key::Named(NamedKey::F8) => {
                runtime.inject_loss();
            }
            Key::Named(NamedKey::F9) => {
                runtime.force_recovery();
            }
            Key::Named(NamedKey::F10) => {
                let status = runtime.status();
                runtime.faults().note(&format!("status: {status:?}"));
            }
            Key::Named(NamedKey::F11) => runtime.stop(),
            Key::Named(NamedKey::F12) => runtime.start(),
            _ => {}
        }
    }
}

impl<A: App> ApplicationHandler<Wake> for Handler<A> {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.window.is_some() {
            return;
        }
        match event_loop.create_window(self.options.attributes.clone()) {
            Ok(window) => {
                let window = Arc::new(window);
                *self.runtime.driver.host.window.borrow_mut() = Some(window.clone());
                self.window = Some(window);
                self.runtime.start();
            }
            Err(e) => {
                self.runtime.faults().report(&Fault::new(
                    FaultKind::Exception,
                    format!("the window could not be made: {e}"),
                ));
                event_loop.exit();
            }
        }
    }

    fn user_event(&mut self, _: &ActiveEventLoop, _: Wake) {}

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _: WindowId, event: WindowEvent) {
        let host = &self.runtime.driver.host;
        match event {
            WindowEvent::CloseRequested => {
                self.runtime.stop();
                event_loop.exit();
            }
            WindowEvent::RedrawRequested => host.scheduler.fire_frames(),
            WindowEvent::Resized(_) => {
                if let Some(window) = &self.window {
                    window.request_redraw();
                }
            }
            WindowEvent::Occluded(hidden) => host.set_hidden(hidden),
            WindowEvent::KeyboardInput { event, .. }
                if self.options.console_keys
                    && event.state == ElementState::Pressed
                    && !event.repeat =>
            {
                self.key(&event.logical_key);
            }
            _ => {}
        }
    }

    fn about_to_wait(&mut self, event_loop: &ActiveEventLoop) {
        let host = &self.runtime.driver.host;
        let scheduler = &host.scheduler;
        scheduler.turn();
        if scheduler.frame_wanted() {
            if let Some(window) = &self.window {
                window.request_redraw();
            }
        }
        let now = Instant::now();
        let mut wake = scheduler.next_timer();
        let mut sooner = |at: Instant| wake = Some(wake.map_or(at, |w| w.min(at)));
        if scheduler.tasks_waiting() {
            sooner(now + POLL_WHILE_WAITING);
        } else if self.runtime.driver.has_live() {
            sooner(now + POLL_WHILE_RUNNING);
        }
        event_loop.set_control_flow(match wake {
            Some(at) => ControlFlow::WaitUntil(at),
            None => ControlFlow::Wait,
        });
    }

    fn exiting(&mut self, _: &ActiveEventLoop) {
        self.runtime.stop();
        self.runtime.driver.host.window.borrow_mut().take();
    }
}
