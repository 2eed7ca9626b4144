//! Application code run so that a panic unwinds to the runtime: caught, its
//! message and place kept, written once (by the runtime's fault log, not also
//! by the default hook). Panics outside application code reach the hook the
//! program had.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Once;
use std::task::{Context, Poll};

thread_local! {
    /// How deep application code runs under [`catching`] on this thread.
    static CATCHING: Cell<u32> = const { Cell::new(0) };
    /// The last caught panic's message and place, for its fault.
    static CAUGHT: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Wraps the program's panic hook once: a panic under [`catching`] is kept
/// for its fault instead of printed.
fn install_hook() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if CATCHING.with(Cell::get) == 0 {
                return previous(info);
            }
            let message = payload_message(info.payload());
            let place = info
                .location()
                .map(|l| format!(" at {}:{}:{}", l.file(), l.line(), l.column()))
                .unwrap_or_default();
            CAUGHT.with(|caught| *caught.borrow_mut() = Some(format!("{message}{place}")));
        }));
    });
}

/// A panic's message, from its payload.
fn payload_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with no message".to_string())
}

/// Runs `f`; `Err` with the panic's message and place if it panicked (the
/// message alone when the program replaced the panic hook since).
pub(crate) fn catching<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    install_hook();
    CAUGHT.with(|caught| caught.borrow_mut().take());
    CATCHING.with(|c| c.set(c.get() + 1));
    let outcome = catch_unwind(AssertUnwindSafe(f));
    CATCHING.with(|c| c.set(c.get() - 1));
    outcome.map_err(|payload| {
        CAUGHT
            .with(|caught| caught.borrow_mut().take())
            .unwrap_or_else(|| payload_message(payload.as_ref()))
    })
}

/// A future each poll of which runs under [`catching`]: `Err` with the
/// panic's message once one poll panicked (the future is dropped then).
pub(crate) struct Catching<F> {
    future: Option<Pin<Box<F>>>,
}

impl<F: Future> Catching<F> {
    pub(crate) fn new(future: F) -> Self {
        Catching {
            future: Some(Box::pin(future)),
        }
    }
}

impl<F: Future> Future for Catching<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(future) = self.future.as_mut() else {
            return Poll::Ready(Err("polled after it panicked".into()));
        };
        match catching(|| future.as_mut().poll(cx)) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(value)) => {
                self.future = None;
                Poll::Ready(Ok(value))
            }
            Err(message) => {
                // Dropping what panicked may panic too: caught as well.
                let future = self.future.take();
                let _ = catching(move || drop(future));
                Poll::Ready(Err(message))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_caught_with_its_message_and_place() {
        let outcome = catching(|| -> u32 { panic!("the frame broke") });
        let message = outcome.unwrap_err();
        assert!(message.starts_with("the frame broke at "), "{message}");
        assert!(message.contains("panics.rs"), "{message}");
        assert_eq!(catching(|| 7), Ok(7));
    }

    #[test]
    fn a_future_that_panics_in_a_later_poll_is_caught() {
        let mut polls = 0;
        let future = std::future::poll_fn(move |cx| {
            polls += 1;
            if polls == 2 {
                panic!("in the second poll");
            }
            cx.waker().wake_by_ref();
            Poll::<()>::Pending
        });
        let mut caught = Box::pin(Catching::new(future));
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        assert!(caught.as_mut().poll(&mut cx).is_pending());
        match caught.as_mut().poll(&mut cx) {
            Poll::Ready(Err(message)) => assert!(message.starts_with("in the second poll")),
            other => panic!("{:?}", other.map(|r| r.is_ok())),
        }
    }
}
