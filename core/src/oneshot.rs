//! A one-shot channel for one thread: the sender hands over one value, the
//! receiver awaits it. Dropping the sender without sending ends the wait with
//! `None`. An init attempt awaits the supervisor's word on its device this way
//! (never by polling): adopted, or gone.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

struct Slot<T> {
    value: Option<T>,
    /// Whether the sender is gone (sent, or dropped without sending).
    closed: bool,
    waker: Option<Waker>,
}

/// Sends the one value; see [`channel`].
pub struct Sender<T> {
    slot: Rc<RefCell<Slot<T>>>,
}

/// Awaits the one value: `Some` once sent, `None` once the sender is dropped
/// without sending; see [`channel`].
pub struct Receiver<T> {
    slot: Rc<RefCell<Slot<T>>>,
}

/// A connected sender and receiver.
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let slot = Rc::new(RefCell::new(Slot {
        value: None,
        closed: false,
        waker: None,
    }));
    (Sender { slot: slot.clone() }, Receiver { slot })
}

impl<T> Sender<T> {
    /// Hands `value` over and wakes the receiver.
    pub fn send(self, value: T) {
        self.slot.borrow_mut().value = Some(value);
        // `Drop` closes and wakes.
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        // Taken out first: waking may run code that touches the slot.
        let waker = {
            let mut slot = self.slot.borrow_mut();
            slot.closed = true;
            slot.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl<T> Future for Receiver<T> {
    type Output = Option<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut slot = self.slot.borrow_mut();
        if let Some(value) = slot.value.take() {
            return Poll::Ready(Some(value));
        }
        if slot.closed {
            return Poll::Ready(None);
        }
        slot.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl<T> std::fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sender").finish_non_exhaustive()
    }
}

impl<T> std::fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receiver").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    struct CountingWaker(AtomicUsize);

    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn poll<T>(receiver: &mut Receiver<T>, waker: &Arc<CountingWaker>) -> Poll<Option<T>> {
        let waker = Waker::from(waker.clone());
        Pin::new(receiver).poll(&mut Context::from_waker(&waker))
    }

    #[test]
    fn the_receiver_waits_until_the_value_is_sent_and_is_woken_once() {
        let wakes = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let (sender, mut receiver) = channel();
        assert_eq!(poll(&mut receiver, &wakes), Poll::Pending);
        assert_eq!(poll(&mut receiver, &wakes), Poll::Pending);
        assert_eq!(wakes.0.load(Ordering::SeqCst), 0, "polling must not wake");
        sender.send(7);
        assert_eq!(wakes.0.load(Ordering::SeqCst), 1);
        assert_eq!(poll(&mut receiver, &wakes), Poll::Ready(Some(7)));
    }

    #[test]
    fn a_sender_dropped_without_sending_ends_the_wait_with_none() {
        let wakes = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let (sender, mut receiver) = channel::<u8>();
        assert_eq!(poll(&mut receiver, &wakes), Poll::Pending);
        drop(sender);
        assert_eq!(wakes.0.load(Ordering::SeqCst), 1);
        assert_eq!(poll(&mut receiver, &wakes), Poll::Ready(None));
    }

    #[test]
    fn a_value_sent_before_the_first_poll_is_there() {
        let wakes = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let (sender, mut receiver) = channel();
        sender.send("device");
        assert_eq!(poll(&mut receiver, &wakes), Poll::Ready(Some("device")));
    }
}
