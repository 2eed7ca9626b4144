//! The desktop's event loop, a turn at a time: timers, frame requests, the
//! runtime's tasks (futures) and the pollers run every turn (wgpu's devices,
//! the inboxes of callbacks from other threads). A winit window turns it from
//! its event handlers; a headless runtime turns it itself. Single-threaded:
//! a task's waker, which may be called from any thread, only marks the task
//! and calls the wake-up the window gave (an event sent to the loop).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use crate::host::Handle;

type Task = Pin<Box<dyn Future<Output = ()>>>;
type Timers = BTreeMap<(Instant, u64), Box<dyn FnOnce()>>;
type FrameRequests = Vec<(u64, Box<dyn FnOnce(f64)>)>;
type Pollers = Vec<(u64, Rc<dyn Fn()>)>;

/// Called when a task is woken, from whatever thread woke it.
pub(crate) type WakeUp = Arc<dyn Fn() + Send + Sync>;

/// The tasks woken since the last turn, shared with their wakers.
#[derive(Default)]
struct Woken {
    ids: Mutex<Vec<u64>>,
    wake_up: Mutex<Option<WakeUp>>,
}

/// One task's waker.
struct TaskWaker {
    id: u64,
    woken: Arc<Woken>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if let Ok(mut ids) = self.woken.ids.lock() {
            ids.push(self.id);
        }
        let wake_up = self.woken.wake_up.lock().ok().and_then(|w| w.clone());
        if let Some(wake_up) = wake_up {
            wake_up();
        }
    }
}

/// The loop's state. See the module's documentation.
pub(crate) struct Scheduler {
    me: Weak<Scheduler>,
    started: Instant,
    next_id: Cell<u64>,
    timers: RefCell<Timers>,
    frames: RefCell<FrameRequests>,
    tasks: RefCell<HashMap<u64, Task>>,
    woken: Arc<Woken>,
    pollers: RefCell<Pollers>,
}

/// What a [`Handle`] of the scheduler cancels when dropped.
enum Entry {
    Timer(Instant, u64),
    Frame(u64),
    Poller(u64),
}

struct Cancel {
    scheduler: Weak<Scheduler>,
    entry: Entry,
}

impl Drop for Cancel {
    fn drop(&mut self) {
        let Some(scheduler) = self.scheduler.upgrade() else {
            return;
        };
        // What the entry holds is dropped after the borrow ends: it may own
        // handles of its own.
        let removed: Option<Box<dyn std::any::Any>> = match self.entry {
            Entry::Timer(at, id) => scheduler
                .timers
                .try_borrow_mut()
                .ok()
                .and_then(|mut t| t.remove(&(at, id)))
                .map(|f| Box::new(f) as Box<dyn std::any::Any>),
            Entry::Frame(id) => scheduler.frames.try_borrow_mut().ok().and_then(|mut f| {
                let at = f.iter().position(|(i, _)| *i == id)?;
                Some(Box::new(f.remove(at).1) as Box<dyn std::any::Any>)
            }),
            Entry::Poller(id) => scheduler.pollers.try_borrow_mut().ok().and_then(|mut p| {
                let at = p.iter().position(|(i, _)| *i == id)?;
                Some(Box::new(p.remove(at).1) as Box<dyn std::any::Any>)
            }),
        };
        drop(removed);
    }
}

impl Scheduler {
    pub(crate) fn new() -> Rc<Self> {
        Rc::new_cyclic(|me| Scheduler {
            me: me.clone(),
            started: Instant::now(),
            next_id: Cell::new(0),
            timers: RefCell::default(),
            frames: RefCell::default(),
            tasks: RefCell::default(),
            woken: Arc::default(),
            pollers: RefCell::default(),
        })
    }

    fn id(&self) -> u64 {
        let id = self.next_id.get() + 1;
        self.next_id.set(id);
        id
    }

    fn handle(&self, entry: Entry) -> Handle {
        Box::new(Cancel {
            scheduler: self.me.clone(),
            entry,
        })
    }

    /// Milliseconds since the scheduler was made.
    pub(crate) fn now_ms(&self) -> f64 {
        self.started.elapsed().as_secs_f64() * 1000.0
    }

    /// Called (from any thread) whenever a task is woken: the window sends
    /// its loop an event.
    pub(crate) fn set_wake_up(&self, wake_up: WakeUp) {
        if let Ok(mut slot) = self.woken.wake_up.lock() {
            *slot = Some(wake_up);
        }
    }

    /// Calls `fire` once, `delay_ms` from now, at a turn.
    pub(crate) fn timer(&self, delay_ms: u32, fire: Box<dyn FnOnce()>) -> Handle {
        let at = Instant::now() + Duration::from_millis(u64::from(delay_ms));
        let id = self.id();
        self.timers.borrow_mut().insert((at, id), fire);
        self.handle(Entry::Timer(at, id))
    }

    /// Calls `on_frame(time_ms)` at the next frame ([`Scheduler::fire_frames`]).
    pub(crate) fn request_frame(&self, on_frame: Box<dyn FnOnce(f64)>) -> Handle {
        let id = self.id();
        self.frames.borrow_mut().push((id, on_frame));
        self.handle(Entry::Frame(id))
    }

    /// Whether a frame is asked for.
    pub(crate) fn frame_wanted(&self) -> bool {
        !self.frames.borrow().is_empty()
    }

    /// The frame is now: every frame request made before is answered.
    pub(crate) fn fire_frames(&self) {
        let time = self.now_ms();
        let frames = std::mem::take(&mut *self.frames.borrow_mut());
        for (_, on_frame) in frames {
            on_frame(time);
        }
    }

    /// Calls `poll` at every turn until the handle is dropped.
    pub(crate) fn add_poller(&self, poll: Rc<dyn Fn()>) -> Handle {
        let id = self.id();
        self.pollers.borrow_mut().push((id, poll));
        self.handle(Entry::Poller(id))
    }

    /// Runs `future` to completion on this loop, polled first at the next turn.
    pub(crate) fn spawn(&self, future: Pin<Box<dyn Future<Output = ()>>>) {
        let id = self.id();
        self.tasks.borrow_mut().insert(id, future);
        if let Ok(mut ids) = self.woken.ids.lock() {
            ids.push(id);
        }
    }

    /// Whether tasks wait for something (a GPU answer that polling brings).
    pub(crate) fn tasks_waiting(&self) -> bool {
        !self.tasks.borrow().is_empty()
    }

    /// Runs every poller now.
    pub(crate) fn poll_now(&self) {
        let pollers: Vec<Rc<dyn Fn()>> = self
            .pollers
            .borrow()
            .iter()
            .map(|(_, p)| p.clone())
            .collect();
        for poll in pollers {
            poll();
        }
    }

    /// One turn: the pollers, the woken tasks, the timers that are due.
    pub(crate) fn turn(&self) {
        self.poll_now();
        self.run_woken();
        let now = Instant::now();
        loop {
            let due = {
                let mut timers = self.timers.borrow_mut();
                match timers.keys().next().copied() {
                    Some(key) if key.0 <= now => timers.remove(&key),
                    _ => None,
                }
            };
            let Some(fire) = due else {
                break;
            };
            fire();
            self.run_woken();
        }
    }

    fn run_woken(&self) {
        // Bounded: a task that wakes itself at every poll waits for the next turn.
        for _ in 0..64 {
            let ids = match self.woken.ids.lock() {
                Ok(mut ids) => std::mem::take(&mut *ids),
                Err(_) => return,
            };
            if ids.is_empty() {
                return;
            }
            for id in ids {
                let Some(mut task) = self.tasks.borrow_mut().remove(&id) else {
                    continue;
                };
                let waker = Waker::from(Arc::new(TaskWaker {
                    id,
                    woken: self.woken.clone(),
                }));
                let mut context = Context::from_waker(&waker);
                if task.as_mut().poll(&mut context) == Poll::Pending {
                    self.tasks.borrow_mut().insert(id, task);
                }
            }
        }
    }

    /// Drops every timer, frame request, task and poller (what they hold is
    /// dropped after the borrows end).
    pub(crate) fn clear(&self) {
        let timers = self
            .timers
            .try_borrow_mut()
            .map(|mut t| std::mem::take(&mut *t));
        let frames = self
            .frames
            .try_borrow_mut()
            .map(|mut f| std::mem::take(&mut *f));
        let tasks = self
            .tasks
            .try_borrow_mut()
            .map(|mut t| std::mem::take(&mut *t));
        let pollers = self
            .pollers
            .try_borrow_mut()
            .map(|mut p| std::mem::take(&mut *p));
        drop((timers, frames, tasks, pollers));
    }

    /// When the next timer is due.
    pub(crate) fn next_timer(&self) -> Option<Instant> {
        self.timers.borrow().keys().next().map(|(at, _)| *at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timers_fire_in_order_and_a_dropped_handle_cancels() {
        let s = Scheduler::new();
        let seen = Rc::new(RefCell::new(Vec::new()));
        let (a, b) = (seen.clone(), seen.clone());
        let _first = s.timer(0, Box::new(move || a.borrow_mut().push(1)));
        let cancelled = s.timer(0, Box::new(move || b.borrow_mut().push(2)));
        drop(cancelled);
        let c = seen.clone();
        let _later = s.timer(60_000, Box::new(move || c.borrow_mut().push(3)));
        s.turn();
        assert_eq!(*seen.borrow(), vec![1]);
        assert!(s.next_timer().is_some());
    }

    #[test]
    fn a_task_woken_from_another_thread_runs_at_the_next_turn() {
        let s = Scheduler::new();
        let woke = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = woke.clone();
        s.set_wake_up(Arc::new(move || {
            flag.store(true, std::sync::atomic::Ordering::SeqCst)
        }));
        let (send, receive) = std::sync::mpsc::channel::<Waker>();
        let done = Rc::new(Cell::new(false));
        let finished = done.clone();
        let mut polled = false;
        s.spawn(Box::pin(std::future::poll_fn(move |cx| {
            if polled {
                finished.set(true);
                return Poll::Ready(());
            }
            polled = true;
            let _ = send.send(cx.waker().clone());
            Poll::Pending
        })));
        s.turn();
        assert!(!done.get() && s.tasks_waiting());
        let waker = receive.recv().unwrap();
        std::thread::spawn(move || waker.wake()).join().unwrap();
        assert!(woke.load(std::sync::atomic::Ordering::SeqCst));
        s.turn();
        assert!(done.get() && !s.tasks_waiting());
    }

    #[test]
    fn frames_asked_for_before_the_frame_are_answered_and_cancelled_ones_not() {
        let s = Scheduler::new();
        let count = Rc::new(Cell::new(0));
        let (a, b) = (count.clone(), count.clone());
        let _kept = s.request_frame(Box::new(move |_| a.set(a.get() + 1)));
        drop(s.request_frame(Box::new(move |_| b.set(b.get() + 10))));
        assert!(s.frame_wanted());
        s.fire_frames();
        assert_eq!(count.get(), 1);
        assert!(!s.frame_wanted());
    }
}
