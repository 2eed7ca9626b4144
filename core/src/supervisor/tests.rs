//! Unit tests of the supervisor, and a model check over every event sequence.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::*;

/// `s.handle(event)` without the attempts' deadline timers (scheduled with
/// each attempt, cancelled when it ends), which the model check covers.
fn h(s: &mut Supervisor, event: Event) -> Vec<Command> {
    let retry = match s.phase {
        Phase::BringingUp {
            step: Step::Backoff { token },
            ..
        } => Some(token),
        _ => None,
    };
    s.handle(event)
        .into_iter()
        .filter(|c| match c {
            Command::Schedule {
                purpose: TimerPurpose::InitDeadline { .. },
                ..
            } => false,
            Command::CancelTimer { token } => Some(*token) == retry,
            _ => true,
        })
        .collect()
}

fn running() -> Supervisor {
    let mut s = Supervisor::default();
    assert_eq!(
        h(&mut s, Event::Start),
        vec![Command::BeginInit { attempt: 1 }]
    );
    assert_eq!(
        h(&mut s, Event::DeviceCreated { attempt: 1 }),
        vec![Command::Adopt {
            attempt: 1,
            generation: 1
        }]
    );
    assert_eq!(
        h(
            &mut s,
            Event::InitSucceeded {
                attempt: 1,
                generation: 1
            }
        ),
        vec![Command::Run { generation: 1 }]
    );
    s
}

fn lost(generation: u64) -> Event {
    Event::Lost {
        generation,
        reason: LossReason::Unknown,
        message: String::new(),
        at_ms: 0,
    }
}

fn fail(attempt: u64) -> Event {
    Event::InitFailed {
        attempt,
        failure: InitFailure::Step(InitStep::Device, "busy".into()),
    }
}

#[test]
fn first_start_runs_and_counts_a_generation() {
    let s = running();
    assert_eq!(s.state(), DeviceState::Running);
    assert_eq!(s.generation(), 1);
    assert_eq!(s.recoveries(), 0);
    assert!(s.may_draw(1));
}

#[test]
fn start_is_idempotent() {
    let mut s = running();
    assert_eq!(h(&mut s, Event::Start), vec![]);
    let mut s2 = Supervisor::default();
    s2.handle(Event::Start);
    assert_eq!(s2.handle(Event::Start), vec![]);
    assert_eq!(s2.attempt_in_flight(), Some(1));
}

#[test]
fn a_loss_recovers_at_once_and_counts_one_recovery() {
    let mut s = running();
    assert_eq!(
        h(&mut s, lost(1)),
        vec![
            Command::Teardown { generation: 1 },
            Command::BeginInit { attempt: 2 }
        ]
    );
    assert_eq!(s.state(), DeviceState::Recovering);
    h(&mut s, Event::DeviceCreated { attempt: 2 });
    h(
        &mut s,
        Event::InitSucceeded {
            attempt: 2,
            generation: 2,
        },
    );
    assert_eq!(s.state(), DeviceState::Running);
    assert_eq!(s.recoveries(), 1);
}

#[test]
fn stop_while_a_retry_waits_cancels_it_and_nothing_comes_back() {
    let mut s = running();
    h(&mut s, lost(1));
    assert!(matches!(
        h(&mut s, fail(2))[..],
        [Command::Schedule { delay_ms: 300, .. }]
    ));
    assert_eq!(s.state(), DeviceState::Lost);
    assert!(matches!(
        h(&mut s, Event::Stop)[..],
        [Command::CancelTimer { .. }]
    ));
    assert_eq!(s.state(), DeviceState::Stopped);
    assert_eq!(h(&mut s, Event::TimerFired { token: 1 }), vec![]);
    assert_eq!(h(&mut s, Event::RequestRecovery), vec![]);
    assert_eq!(s.state(), DeviceState::Stopped);
}

#[test]
fn an_init_that_finishes_after_stop_destroys_its_device() {
    let mut s = running();
    h(&mut s, Event::RequestRecovery);
    assert_eq!(
        h(&mut s, Event::DeviceCreated { attempt: 2 }),
        vec![Command::Adopt {
            attempt: 2,
            generation: 2
        }]
    );
    assert_eq!(
        h(&mut s, Event::Stop),
        vec![Command::Destroy { generation: 2 }]
    );
    assert_eq!(
        h(
            &mut s,
            Event::InitSucceeded {
                attempt: 2,
                generation: 2
            }
        ),
        vec![Command::Destroy { generation: 2 }]
    );
    assert_eq!(s.state(), DeviceState::Stopped);
    assert_eq!(s.live_generation(), None);
}

#[test]
fn requested_recovery_coalesces_and_cuts_a_backoff_short() {
    let mut s = running();
    let first = h(&mut s, Event::RequestRecovery);
    assert_eq!(
        first,
        vec![
            Command::Teardown { generation: 1 },
            Command::BeginInit { attempt: 2 }
        ]
    );
    // During the rebuild: one recovery.
    assert_eq!(h(&mut s, Event::RequestRecovery), vec![]);
    // During a backoff: starts at once, still one recovery.
    h(&mut s, fail(2));
    assert!(matches!(
        h(&mut s, Event::RequestRecovery)[..],
        [
            Command::CancelTimer { .. },
            Command::BeginInit { attempt: 3 }
        ]
    ));
    h(&mut s, Event::DeviceCreated { attempt: 3 });
    h(
        &mut s,
        Event::InitSucceeded {
            attempt: 3,
            generation: 2,
        },
    );
    assert_eq!(s.recoveries(), 1);
    assert!(s.last_loss().unwrap().requested);
}

#[test]
fn unrequested_destroyed_is_reported_and_falls_back() {
    let mut s = running();
    let commands = h(
        &mut s,
        Event::Lost {
            generation: 1,
            reason: LossReason::Destroyed,
            message: String::new(),
            at_ms: 0,
        },
    );
    assert!(matches!(
        commands.last(),
        Some(Command::ShowFallback(Fallback::UnexpectedDestroy(_)))
    ));
    assert_eq!(s.state(), DeviceState::Failed);
    assert!(!s.last_loss().unwrap().requested);
}

#[test]
fn failed_attempts_back_off_then_give_up() {
    let mut s = running();
    h(&mut s, lost(1));
    let mut attempt = 2;
    for delay in [300, 600, 1200, 2400] {
        let commands = h(&mut s, fail(attempt));
        let [Command::Schedule {
            token, delay_ms, ..
        }] = commands[..]
        else {
            panic!("{commands:?}");
        };
        assert_eq!(delay_ms, delay);
        assert_eq!(s.state(), DeviceState::Lost);
        attempt += 1;
        assert_eq!(
            h(&mut s, Event::TimerFired { token }),
            vec![Command::BeginInit { attempt }]
        );
    }
    let last = h(&mut s, fail(attempt));
    assert!(matches!(
        last[..],
        [Command::ShowFallback(Fallback::GaveUp { attempts: 5, .. })]
    ));
}

#[test]
fn null_adapters_after_losses_ask_for_a_reload() {
    let mut s = running();
    h(&mut s, lost(1));
    let mut attempt = 2;
    loop {
        let commands = h(
            &mut s,
            Event::InitFailed {
                attempt,
                failure: InitFailure::NoAdapter,
            },
        );
        match &commands[..] {
            [Command::Schedule { token, .. }] => {
                let token = *token;
                h(&mut s, Event::TimerFired { token });
                attempt += 1;
            }
            [Command::ShowFallback(f @ Fallback::Blocked { .. })] => {
                assert!(f.message().contains("Reload"));
                break;
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_loss_while_hidden_waits_for_the_page_to_show() {
    let mut s = running();
    h(&mut s, Event::Visibility { hidden: true });
    assert_eq!(
        h(&mut s, lost(1)),
        vec![Command::Teardown { generation: 1 }]
    );
    assert_eq!(s.state(), DeviceState::Lost);
    assert!(s.waiting_for_visible());
    assert_eq!(
        h(&mut s, Event::Visibility { hidden: false }),
        vec![Command::BeginInit { attempt: 2 }]
    );
}

#[test]
fn rebuilt_devices_that_keep_dying_end_in_a_fallback() {
    let mut s = running();
    let mut now = 100_000;
    // The first device is not a rebuild: its death does not count.
    for death in 1..=4u64 {
        let generation = death;
        let attempt = death;
        let commands = h(
            &mut s,
            Event::Lost {
                generation,
                reason: LossReason::Unknown,
                message: String::new(),
                at_ms: now,
            },
        );
        if death == 4 {
            assert!(matches!(
                commands.last(),
                Some(Command::ShowFallback(Fallback::CrashLoop { deaths: 3, .. }))
            ));
            assert_eq!(s.state(), DeviceState::Failed);
            return;
        }
        h(
            &mut s,
            Event::DeviceCreated {
                attempt: attempt + 1,
            },
        );
        h(
            &mut s,
            Event::InitSucceeded {
                attempt: attempt + 1,
                generation: generation + 1,
            },
        );
        h(
            &mut s,
            Event::FirstFrame {
                generation: generation + 1,
                at_ms: now,
            },
        );
        now += 2_000;
    }
}

/// Brings up device `generation` (attempt `attempt`) and gives it its first
/// frame at `at_ms`.
fn bring_up(s: &mut Supervisor, attempt: u64, generation: u64, at_ms: u64) {
    h(s, Event::DeviceCreated { attempt });
    assert_eq!(
        h(
            s,
            Event::InitSucceeded {
                attempt,
                generation
            }
        ),
        vec![Command::Run { generation }]
    );
    h(s, Event::FirstFrame { generation, at_ms });
}

/// `matarGPU()`, then real losses 5 s apart: the device the application asked
/// for does not count towards the crash-loop rule, only those rebuilt after
/// losses do (three of them, then the fallback).
#[test]
fn a_requested_rebuild_does_not_count_towards_the_crash_loop() {
    let mut s = running();
    h(
        &mut s,
        Event::FirstFrame {
            generation: 1,
            at_ms: 0,
        },
    );
    h(&mut s, Event::RequestRecovery);
    bring_up(&mut s, 2, 2, 1_000);
    let mut now = 1_000;
    for generation in 2..=4u64 {
        now += 5_000;
        let commands = h(
            &mut s,
            Event::Lost {
                generation,
                reason: LossReason::Unknown,
                message: String::new(),
                at_ms: now,
            },
        );
        assert!(
            !commands
                .iter()
                .any(|c| matches!(c, Command::ShowFallback(_))),
            "loss of device {generation}: {commands:?}"
        );
        bring_up(&mut s, generation + 1, generation + 1, now);
    }
    // The third device rebuilt after a loss dies soon too: a crash loop.
    let commands = h(
        &mut s,
        Event::Lost {
            generation: 5,
            reason: LossReason::Unknown,
            message: String::new(),
            at_ms: now + 5_000,
        },
    );
    match commands.last() {
        Some(Command::ShowFallback(f @ Fallback::CrashLoop { deaths: 3, .. })) => {
            // What helps: not a reload.
            assert!(!f.message().contains("Reload"), "{}", f.message());
            assert!(f.message().contains("starting again"), "{}", f.message());
        }
        other => panic!("{other:?}"),
    }
}

/// `matarGPU()` in every state says what it does: after a fallback it starts
/// over at once, stopped it asks for a start, hidden it waits to be shown.
#[test]
fn a_requested_recovery_says_what_it_does_in_every_state() {
    let mut s = Supervisor::default();
    assert_eq!(s.recovery_answer(), RecoveryAnswer::StartFirst);
    assert_eq!(h(&mut s, Event::RequestRecovery), vec![]);
    let mut s = running();
    assert_eq!(s.recovery_answer(), RecoveryAnswer::Rebuilding);
    h(&mut s, Event::Visibility { hidden: true });
    assert_eq!(s.recovery_answer(), RecoveryAnswer::WhenShown);
    h(&mut s, Event::RequestRecovery);
    assert!(s.waiting_for_visible());
    assert_eq!(s.recovery_answer(), RecoveryAnswer::WhenShown);
    assert_eq!(
        h(&mut s, Event::Visibility { hidden: false }),
        vec![Command::BeginInit { attempt: 2 }]
    );
    assert_eq!(s.recovery_answer(), RecoveryAnswer::AlreadyUnderWay);
    // A build that fails for good: the fallback; then a person asks again.
    let commands = h(
        &mut s,
        Event::InitFailed {
            attempt: 2,
            failure: InitFailure::Resources("a bug".into()),
        },
    );
    assert!(matches!(commands.last(), Some(Command::ShowFallback(_))));
    assert_eq!(s.recovery_answer(), RecoveryAnswer::StartingOver);
    assert_eq!(
        h(&mut s, Event::RequestRecovery),
        vec![Command::BeginInit { attempt: 3 }]
    );
    h(&mut s, Event::Stop);
    assert_eq!(s.recovery_answer(), RecoveryAnswer::StartFirst);
    assert_eq!(h(&mut s, Event::RequestRecovery), vec![]);
}

/// A request starts an init now exactly when the supervisor begins one for
/// it (or cuts a backoff short): what the fronts move the next init's clock
/// for, and for nothing else.
#[test]
fn a_request_starts_now_exactly_when_it_begins_an_attempt() {
    let starts = |s: &mut Supervisor| {
        let answer = s.recovery_answer();
        let commands = h(s, Event::RequestRecovery);
        let begins = commands
            .iter()
            .any(|c| matches!(c, Command::BeginInit { .. }));
        assert_eq!(answer.starts_now(), begins, "{answer:?}: {commands:?}");
        answer
    };
    let mut s = running();
    assert_eq!(starts(&mut s), RecoveryAnswer::Rebuilding);
    assert_eq!(starts(&mut s), RecoveryAnswer::AlreadyUnderWay);
    h(&mut s, fail(2));
    assert_eq!(starts(&mut s), RecoveryAnswer::AttemptNow);
    h(&mut s, fail(3));
    h(&mut s, Event::Visibility { hidden: true });
    assert_eq!(starts(&mut s), RecoveryAnswer::WhenShown);
    h(&mut s, Event::Stop);
    assert_eq!(starts(&mut s), RecoveryAnswer::StartFirst);
}

#[test]
fn a_device_that_lived_long_resets_the_crash_count() {
    let mut s = running();
    let mut now = 0;
    for generation in 1..=6u64 {
        h(
            &mut s,
            Event::FirstFrame {
                generation,
                at_ms: now,
            },
        );
        now += 60_000;
        h(
            &mut s,
            Event::Lost {
                generation,
                reason: LossReason::Unknown,
                message: String::new(),
                at_ms: now,
            },
        );
        h(
            &mut s,
            Event::DeviceCreated {
                attempt: generation + 1,
            },
        );
        h(
            &mut s,
            Event::InitSucceeded {
                attempt: generation + 1,
                generation: generation + 1,
            },
        );
        assert_eq!(s.state(), DeviceState::Running);
    }
    assert_eq!(s.recoveries(), 6);
}

#[test]
fn first_start_failures() {
    let start = |failure: InitFailure| {
        let mut s = Supervisor::default();
        h(&mut s, Event::Start);
        h(
            &mut s,
            Event::InitFailed {
                attempt: 1,
                failure,
            },
        )
    };
    assert_eq!(
        start(InitFailure::NoWebGpu),
        vec![Command::ShowFallback(Fallback::NoWebGpu)]
    );
    assert_eq!(
        start(InitFailure::NoAdapter),
        vec![Command::ShowFallback(Fallback::NoAdapter)]
    );
    assert!(matches!(
        start(InitFailure::Step(InitStep::Adapter, "threw".into()))[..],
        [Command::Schedule { delay_ms: 300, .. }]
    ));
}

// ------------------------------------------------------------------ model check

/// One init the runtime is running, as the model sees it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Job {
    attempt: u64,
    device: Option<u64>,
}

/// The supervisor plus a model of the runtime carrying out its commands.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct World {
    sup: Supervisor,
    now: u64,
    hidden: bool,
    jobs: BTreeSet<Job>,
    alive: BTreeSet<u64>,
    destroyed_unnotified: BTreeSet<u64>,
    timers: BTreeMap<u64, TimerPurpose>,
    frames_on: Option<u64>,
    fallbacks: u32,
}

impl World {
    fn new() -> Self {
        World {
            // The shipped options: 4 delayed attempts, 3 quick deaths.
            sup: Supervisor::new(SupervisorOptions::default()),
            now: 0,
            hidden: false,
            jobs: BTreeSet::new(),
            alive: BTreeSet::new(),
            destroyed_unnotified: BTreeSet::new(),
            timers: BTreeMap::new(),
            frames_on: None,
            fallbacks: 0,
        }
    }

    fn destroy(&mut self, generation: u64) {
        if self.alive.remove(&generation) {
            self.destroyed_unnotified.insert(generation);
        }
        if self.frames_on == Some(generation) {
            self.frames_on = None;
        }
    }

    /// The events that can happen in this world, stale ones included.
    fn events(&self) -> Vec<Event> {
        let mut events = vec![
            Event::Start,
            Event::Stop,
            Event::RequestRecovery,
            Event::Visibility {
                hidden: !self.hidden,
            },
            Event::TimerFired { token: 999 },
            Event::InitFailed {
                attempt: 999,
                failure: InitFailure::NoAdapter,
            },
            lost(999),
        ];
        for &token in self.timers.keys() {
            events.push(Event::TimerFired { token });
        }
        // The watchdog's clock: a healthy page, and one frozen for 5 s.
        for last_frame_ms in [self.now, self.now.saturating_sub(5_000)] {
            events.push(Event::Tick {
                now_ms: self.now,
                last_frame_ms,
                frame_pending: true,
            });
        }
        events.push(Event::Crashed {
            message: "panicked".into(),
        });
        for job in &self.jobs {
            match job.device {
                None => events.push(Event::DeviceCreated {
                    attempt: job.attempt,
                }),
                Some(generation) => events.push(Event::InitSucceeded {
                    attempt: job.attempt,
                    generation,
                }),
            }
            for failure in [
                InitFailure::Step(InitStep::Device, "x".into()),
                InitFailure::NoAdapter,
                InitFailure::NoWebGpu,
                InitFailure::Canvas("x".into()),
                InitFailure::Resources("x".into()),
                InitFailure::ResourcesMayPass("x".into()),
                InitFailure::LostDuringInit("x".into()),
            ] {
                events.push(Event::InitFailed {
                    attempt: job.attempt,
                    failure,
                });
            }
        }
        for &generation in &self.alive {
            for reason in [LossReason::Unknown, LossReason::Destroyed] {
                events.push(Event::Lost {
                    generation,
                    reason,
                    message: String::new(),
                    at_ms: self.now,
                });
            }
        }
        for &generation in &self.destroyed_unnotified {
            events.push(Event::Lost {
                generation,
                reason: LossReason::Destroyed,
                message: String::new(),
                at_ms: self.now,
            });
        }
        if let Some(generation) = self.frames_on {
            events.push(Event::FirstFrame {
                generation,
                at_ms: self.now,
            });
        }
        events
    }

    /// Applies `event` as the runtime would, checking every invariant.
    fn step(&mut self, event: &Event) -> Result<(), String> {
        let before = self.sup.clone();
        let stale = match event {
            Event::TimerFired { token } => !self.timers.contains_key(token),
            Event::InitFailed { attempt, .. } => {
                !self.jobs.iter().any(|j| j.attempt == *attempt)
                    || self.sup.attempt_in_flight() != Some(*attempt)
            }
            Event::Lost { generation, .. } => !self.alive.contains(generation),
            _ => false,
        };
        // The runtime's side of the event itself.
        match event {
            Event::Visibility { hidden } => self.hidden = *hidden,
            Event::TimerFired { token } => {
                self.timers.remove(token);
            }
            Event::Lost { generation, .. } => {
                self.alive.remove(generation);
                self.destroyed_unnotified.remove(generation);
                if self.frames_on == Some(*generation) {
                    self.frames_on = None;
                }
            }
            Event::InitFailed { attempt, .. } | Event::InitSucceeded { attempt, .. } => {
                let job = self.jobs.iter().find(|j| j.attempt == *attempt).cloned();
                if let Some(job) = job {
                    self.jobs.remove(&job);
                    if let (Event::InitFailed { .. }, Some(generation)) = (event, job.device) {
                        // A failed init drops what it built and destroys its device.
                        self.destroy(generation);
                    }
                }
            }
            Event::DeviceCreated { attempt } => {
                let next = self.sup.generation() + 1;
                let job = self.jobs.iter().find(|j| j.attempt == *attempt).cloned();
                if let Some(mut job) = job {
                    self.jobs.remove(&job);
                    job.device = Some(next);
                    self.jobs.insert(job);
                }
                self.alive.insert(next);
            }
            _ => {}
        }
        let was_first_start = before.state() == DeviceState::Starting;
        if matches!(event, Event::Start)
            && matches!(
                before.state(),
                DeviceState::Idle | DeviceState::Stopped | DeviceState::Failed
            )
        {
            self.fallbacks = 0;
        }
        // A requested recovery after a fallback starts over, as a start does.
        if matches!(event, Event::RequestRecovery) && before.state() == DeviceState::Failed {
            self.fallbacks = 0;
        }
        if matches!(event, Event::Crashed { .. }) && before.state() != DeviceState::Crashed {
            // The crash's own fallback replaces any shown before.
            self.fallbacks = 0;
        }
        let commands = self.sup.handle(event.clone());
        if stale && self.sup != before {
            return Err(format!("stale event {event:?} changed the supervisor"));
        }
        let discard_only = commands
            .iter()
            .all(|c| matches!(c, Command::Discard { .. }));
        let refused = self.sup.state() == DeviceState::Crashed
            && (commands.is_empty()
                || matches!(event, Event::DeviceCreated { .. }) && discard_only);
        if before.state() == DeviceState::Crashed && !refused {
            return Err(format!("{event:?} was not refused after a crash"));
        }
        for command in &commands {
            match command {
                Command::BeginInit { attempt } => {
                    let allowed = !self.hidden
                        || matches!(event, Event::Start)
                        || (was_first_start && self.sup.state() == DeviceState::Starting);
                    if !allowed {
                        return Err(format!("a rebuild began while hidden, on {event:?}"));
                    }
                    self.jobs.insert(Job {
                        attempt: *attempt,
                        device: None,
                    });
                }
                Command::Adopt { .. }
                | Command::RequestFrame { .. }
                | Command::DriveFromTimer { .. } => {}
                Command::ReportStall { .. } => {}
                Command::Discard { attempt } => {
                    let job = self.jobs.iter().find(|j| j.attempt == *attempt).cloned();
                    if let Some(job) = job {
                        self.jobs.remove(&job);
                        if let Some(generation) = job.device {
                            self.destroy(generation);
                        }
                    }
                }
                Command::Schedule {
                    token,
                    delay_ms,
                    purpose,
                } => {
                    let expected = match purpose {
                        TimerPurpose::Retry => {
                            self.sup.options().backoff.schedule().contains(delay_ms)
                        }
                        TimerPurpose::InitDeadline { .. } => {
                            *delay_ms == self.sup.options().init_deadline_ms
                        }
                    };
                    if !expected {
                        return Err(format!("delay {delay_ms} is off the schedule"));
                    }
                    self.timers.insert(*token, *purpose);
                }
                Command::CancelTimer { token } => {
                    if self.timers.remove(token).is_none() {
                        return Err(format!("cancelled timer {token} was not pending"));
                    }
                }
                // The job that made it runs on and reports later (an init future
                // cannot be cancelled): its report is then stale.
                Command::Destroy { generation } => self.destroy(*generation),
                Command::Teardown { generation } => self.destroy(*generation),
                Command::Run { generation } => {
                    if !self.alive.contains(generation) {
                        // Lost meanwhile: the loss event will follow.
                    }
                    self.frames_on = Some(*generation);
                }
                Command::ShowFallback(_) => self.fallbacks += 1,
            }
        }
        self.check()
    }

    fn check(&self) -> Result<(), String> {
        let s = &self.sup;
        let current: Vec<&u64> = self
            .alive
            .iter()
            .filter(|g| {
                Some(**g) == s.live_generation() || self.jobs.iter().any(|j| j.device == Some(**g))
            })
            .collect();
        if self.alive.len() > 1 {
            return Err(format!(
                "{} live devices: {:?}",
                self.alive.len(),
                self.alive
            ));
        }
        if current.len() != self.alive.len() {
            return Err(format!("a device nobody owns: {:?}", self.alive));
        }
        let pending =
            !self.timers.is_empty() || s.attempt_in_flight().is_some() || !self.alive.is_empty();
        if matches!(
            s.state(),
            DeviceState::Stopped | DeviceState::Failed | DeviceState::Crashed
        ) && pending
        {
            return Err(format!("something pending after {:?}: {self:?}", s.state()));
        }
        if self.frames_on.is_some() && self.frames_on != s.live_generation() {
            return Err("frames run on a device that is not live".into());
        }
        if self.fallbacks > 1 {
            return Err("more than one fallback".into());
        }
        if s.failures() > s.options().backoff.max_attempts + 1 {
            return Err(format!("{} failed attempts", s.failures()));
        }
        let retries = self
            .timers
            .values()
            .filter(|p| **p == TimerPurpose::Retry)
            .count();
        let deadlines: Vec<u64> = self
            .timers
            .iter()
            .filter(|(_, p)| **p != TimerPurpose::Retry)
            .map(|(t, _)| *t)
            .collect();
        if retries != usize::from(s.timer_pending())
            || deadlines != s.deadline_pending().into_iter().collect::<Vec<_>>()
        {
            return Err(format!("timers out of step: {self:?}"));
        }
        if s.attempt_in_flight().is_some() != s.deadline_pending().is_some() {
            return Err("an attempt without its deadline (or the reverse)".into());
        }
        Ok(())
    }

    /// From here, with the page shown, timers firing and every init succeeding:
    /// one running device, or one fallback, or stopped.
    fn settles(&self) -> Result<(), String> {
        let mut world = self.clone();
        for _ in 0..64 {
            let event = if world.hidden {
                Event::Visibility { hidden: false }
            } else if let Some(job) = world.jobs.iter().next().cloned() {
                match job.device {
                    None => Event::DeviceCreated {
                        attempt: job.attempt,
                    },
                    Some(generation) => Event::InitSucceeded {
                        attempt: job.attempt,
                        generation,
                    },
                }
            } else if let Some((&token, _)) = world
                .timers
                .iter()
                .find(|(_, p)| **p == TimerPurpose::Retry)
            {
                Event::TimerFired { token }
            } else if let Some(&generation) = world.destroyed_unnotified.iter().next() {
                Event::Lost {
                    generation,
                    reason: LossReason::Destroyed,
                    message: String::new(),
                    at_ms: world.now,
                }
            } else {
                break;
            };
            world.step(&event)?;
        }
        let s = &world.sup;
        match s.state() {
            DeviceState::Running => {
                if world.alive.len() != 1 || world.frames_on != s.live_generation() {
                    return Err(format!("running without exactly one device: {world:?}"));
                }
            }
            DeviceState::Failed | DeviceState::Crashed => {
                if world.fallbacks != 1 || !world.alive.is_empty() {
                    return Err(format!("failed without exactly one fallback: {world:?}"));
                }
            }
            DeviceState::Stopped | DeviceState::Idle => {
                if !world.alive.is_empty() {
                    return Err("a device outlives the stop".into());
                }
            }
            other => return Err(format!("never settles: stuck in {other:?}: {world:?}")),
        }
        Ok(())
    }
}

#[test]
fn model_check_every_event_sequence() {
    let depth = 10;
    let mut frontier: HashMap<World, u64> = HashMap::new();
    frontier.insert(World::new(), 1);
    let mut sequences: u64 = 0;
    let mut transitions: u64 = 0;
    let mut states: BTreeMap<usize, usize> = BTreeMap::new();
    let mut settled = std::collections::HashSet::new();
    for level in 1..=depth {
        let mut next: HashMap<World, u64> = HashMap::new();
        for (world, paths) in &frontier {
            for event in world.events() {
                let mut after = world.clone();
                if let Err(problem) = after.step(&event) {
                    panic!("after {event:?} from {world:?}: {problem}");
                }
                transitions += 1;
                sequences += paths;
                if settled.insert(after.sup.clone()) {
                    if let Err(problem) = after.settles() {
                        panic!("from {after:?}: {problem}");
                    }
                }
                *next.entry(after).or_insert(0) += paths;
            }
        }
        states.insert(level, next.len());
        frontier = next;
    }
    println!(
        "model check: {sequences} event sequences of length 1 to {depth}, {transitions} transitions, distinct states per length {states:?}"
    );
    assert!(sequences > 1_000_000);
}

/// The deadline timer `Start` scheduled for attempt 1.
fn start_with_deadline(s: &mut Supervisor) -> u64 {
    let commands = s.handle(Event::Start);
    match commands[..] {
        [Command::BeginInit { attempt: 1 }, Command::Schedule {
            token,
            delay_ms: 30_000,
            purpose: TimerPurpose::InitDeadline { attempt: 1 },
        }] => token,
        _ => panic!("{commands:?}"),
    }
}

#[test]
fn a_stuck_request_device_is_retried_with_backoff() {
    let mut s = Supervisor::default();
    let deadline = start_with_deadline(&mut s);
    let commands = s.handle(Event::TimerFired { token: deadline });
    assert!(
        matches!(
            commands[..],
            [Command::Schedule {
                delay_ms: 300,
                purpose: TimerPurpose::Retry,
                ..
            }]
        ),
        "{commands:?}"
    );
    assert_eq!(s.state(), DeviceState::Starting);
    assert_eq!(s.attempt_in_flight(), None);
    // The stuck attempt answers at last: its device is not wanted.
    assert_eq!(
        s.handle(Event::DeviceCreated { attempt: 1 }),
        vec![Command::Discard { attempt: 1 }]
    );
}

#[test]
fn a_build_that_never_finishes_ends_in_a_fallback() {
    let mut s = Supervisor::default();
    let deadline = start_with_deadline(&mut s);
    s.handle(Event::DeviceCreated { attempt: 1 });
    let commands = s.handle(Event::TimerFired { token: deadline });
    assert_eq!(commands[0], Command::Destroy { generation: 1 });
    assert!(
        matches!(
            &commands[1..],
            [Command::ShowFallback(Fallback::BuildOverdue(m))] if m.contains("build")
        ),
        "{commands:?}"
    );
}

#[test]
fn a_finished_attempt_cancels_its_deadline() {
    let mut s = Supervisor::default();
    let deadline = start_with_deadline(&mut s);
    s.handle(Event::DeviceCreated { attempt: 1 });
    let commands = s.handle(Event::InitSucceeded {
        attempt: 1,
        generation: 1,
    });
    assert_eq!(
        commands,
        vec![
            Command::CancelTimer { token: deadline },
            Command::Run { generation: 1 }
        ]
    );
    // A late deadline changes nothing.
    let before = s.clone();
    assert_eq!(s.handle(Event::TimerFired { token: deadline }), vec![]);
    assert_eq!(s, before);
}

#[test]
fn a_recovery_requested_during_the_first_starts_backoff_starts_at_once() {
    let mut s = Supervisor::default();
    h(&mut s, Event::Start);
    h(&mut s, fail(1));
    assert!(s.timer_pending());
    let commands = h(&mut s, Event::RequestRecovery);
    assert!(
        matches!(
            commands[..],
            [
                Command::CancelTimer { .. },
                Command::BeginInit { attempt: 2 }
            ]
        ),
        "{commands:?}"
    );
    assert_eq!(s.state(), DeviceState::Starting);
}

fn tick(last_frame_ms: u64) -> Event {
    Event::Tick {
        now_ms: 10_000,
        last_frame_ms,
        frame_pending: true,
    }
}

#[test]
fn a_frozen_picture_is_reported_once_then_drawn_from_a_timer_on_the_same_device() {
    let mut s = running();
    assert_eq!(h(&mut s, tick(9_000)), vec![]);
    assert_eq!(
        h(&mut s, tick(7_500)),
        vec![
            Command::ReportStall {
                generation: 1,
                waited_ms: 2_500,
                action: StallAction::RequestFrame
            },
            Command::RequestFrame { generation: 1 }
        ]
    );
    // Still frozen, but not for twice the limit yet: nothing more.
    assert_eq!(h(&mut s, tick(6_500)), vec![]);
    // Twice the limit: no new device (it would stall the same way), frames
    // from a timer on this one.
    assert_eq!(
        h(&mut s, tick(5_000)),
        vec![
            Command::ReportStall {
                generation: 1,
                waited_ms: 5_000,
                action: StallAction::DriveFromTimer
            },
            Command::DriveFromTimer { generation: 1 }
        ]
    );
    assert_eq!(s.state(), DeviceState::Running);
    assert_eq!(s.generation(), 1);
    assert_eq!(s.live_generation(), Some(1));
    assert_eq!(h(&mut s, tick(4_500)), vec![]);
    // The timer's frames come: the stall is over.
    assert_eq!(h(&mut s, tick(9_990)), vec![]);
    assert!(!s.stall_reported());
}

#[test]
fn a_stall_that_no_timer_fixes_ends_in_the_stalled_fallback_once() {
    let mut s = running();
    h(&mut s, tick(7_500));
    h(&mut s, tick(5_000));
    assert_eq!(h(&mut s, tick(4_500)), vec![]);
    let commands = h(&mut s, tick(3_500));
    assert_eq!(
        commands,
        vec![
            Command::Teardown { generation: 1 },
            Command::ShowFallback(Fallback::Stalled { waited_ms: 6_500 })
        ]
    );
    let fallback = s.fallback().unwrap();
    assert_eq!(fallback.code(), "stalled");
    assert!(fallback.message().contains("stopped drawing this page"));
    assert!(!fallback.message().contains("GPU keeps failing"));
    assert_eq!(fallback.fault_kind(), None);
    assert_eq!(s.generation(), 1, "no new device for a stall");
    assert_eq!(h(&mut s, tick(0)), vec![]);
}

#[test]
fn frames_coming_again_end_the_stall_and_a_hidden_page_never_stalls() {
    let mut s = running();
    assert_eq!(h(&mut s, tick(7_500)).len(), 2);
    assert_eq!(h(&mut s, tick(9_990)), vec![]);
    assert!(!s.stall_reported());
    // A new stall is reported again.
    assert_eq!(h(&mut s, tick(7_500)).len(), 2);
    let mut hidden = running();
    h(&mut hidden, Event::Visibility { hidden: true });
    assert_eq!(h(&mut hidden, tick(0)), vec![]);
}

#[test]
fn after_a_crash_everything_is_refused() {
    let mut s = running();
    let commands = h(
        &mut s,
        Event::Crashed {
            message: "boom".into(),
        },
    );
    assert_eq!(
        commands,
        vec![
            Command::Teardown { generation: 1 },
            Command::ShowFallback(Fallback::Crashed("boom".into()))
        ]
    );
    assert_eq!(s.state(), DeviceState::Crashed);
    for event in [Event::Start, Event::RequestRecovery, Event::Stop, lost(1)] {
        assert_eq!(h(&mut s, event), vec![]);
    }
    assert_eq!(s.state(), DeviceState::Crashed);
}

#[test]
fn a_build_failure_that_can_pass_is_retried_and_one_that_cannot_is_final() {
    let attempt_then = |failure: InitFailure| {
        let mut s = running();
        h(&mut s, lost(1));
        h(&mut s, Event::DeviceCreated { attempt: 2 });
        h(
            &mut s,
            Event::InitFailed {
                attempt: 2,
                failure,
            },
        )
    };
    // Out of memory (or an internal error) on the fresh device: retried.
    let commands = attempt_then(InitFailure::ResourcesMayPass("out of memory".into()));
    assert!(
        matches!(
            commands[..],
            [
                Command::Destroy { generation: 2 },
                Command::Schedule {
                    delay_ms: 300,
                    purpose: TimerPurpose::Retry,
                    ..
                }
            ]
        ),
        "{commands:?}"
    );
    // A validation error in the application's build fails the same way each
    // time: the fallback at once.
    let commands = attempt_then(InitFailure::Resources("invalid".into()));
    assert_eq!(
        commands.last(),
        Some(&Command::ShowFallback(Fallback::InitFailed(
            "invalid".into()
        )))
    );
}

#[test]
fn a_build_that_keeps_running_out_of_memory_gives_up_at_the_cap() {
    let mut s = running();
    h(&mut s, lost(1));
    let mut attempt = 2;
    let mut delays = Vec::new();
    loop {
        h(&mut s, Event::DeviceCreated { attempt });
        let commands = h(
            &mut s,
            Event::InitFailed {
                attempt,
                failure: InitFailure::ResourcesMayPass("oom".into()),
            },
        );
        match commands.last() {
            Some(Command::Schedule {
                token, delay_ms, ..
            }) => {
                delays.push(*delay_ms);
                h(&mut s, Event::TimerFired { token: *token });
                attempt += 1;
            }
            Some(Command::ShowFallback(Fallback::GaveUp { attempts, last })) => {
                assert_eq!(*attempts, 5);
                assert!(last.contains("oom"), "{last}");
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(delays, vec![300, 600, 1200, 2400]);
}

#[test]
fn a_start_right_after_a_fallback_waits_its_backoff() {
    let mut s = Supervisor::default();
    // The first start, on a page without WebGPU: the fallback.
    h(&mut s, Event::Start);
    assert_eq!(
        h(&mut s, fail_with(1, InitFailure::NoWebGpu)),
        vec![Command::ShowFallback(Fallback::NoWebGpu)]
    );
    // A fallback hook that starts again: no attempt now, a wait.
    let mut waits = Vec::new();
    for attempt in 2..=7 {
        let commands = h(&mut s, Event::Start);
        let [Command::Schedule {
            token,
            delay_ms,
            purpose: TimerPurpose::Retry,
        }] = commands[..]
        else {
            panic!("start {attempt} after a fallback: {commands:?}");
        };
        waits.push(delay_ms);
        assert_eq!(s.state(), DeviceState::Starting);
        assert_eq!(
            h(&mut s, Event::TimerFired { token }),
            vec![Command::BeginInit { attempt }]
        );
        h(&mut s, fail_with(attempt, InitFailure::NoWebGpu));
        assert_eq!(s.state(), DeviceState::Failed);
    }
    // Growing, then the longest of the schedule.
    assert_eq!(waits, vec![300, 600, 1200, 2400, 2400, 2400]);
    // Stop during the wait cancels it.
    let commands = s.handle(Event::Start);
    let Some(Command::Schedule { token, .. }) = commands.first().cloned() else {
        panic!("{commands:?}");
    };
    assert_eq!(s.handle(Event::Stop), vec![Command::CancelTimer { token }]);
    // Once a device runs, the next start after a fallback is immediate again.
    let mut s = running();
    h(&mut s, Event::Stop);
    assert_eq!(
        h(&mut s, Event::Start),
        vec![Command::BeginInit { attempt: 2 }]
    );
}

#[test]
fn an_init_deadline_no_timer_can_wait_for_is_off() {
    for init_deadline_ms in [u32::MAX, crate::backoff::MAX_DELAY_MS] {
        let mut s = Supervisor::new(SupervisorOptions {
            init_deadline_ms,
            ..SupervisorOptions::default()
        });
        let commands = s.handle(Event::Start);
        assert_eq!(commands, vec![Command::BeginInit { attempt: 1 }]);
        assert_eq!(s.deadline_pending(), None);
    }
    // Just below the bound it is a deadline as asked.
    let mut s = Supervisor::new(SupervisorOptions {
        init_deadline_ms: crate::backoff::MAX_DELAY_MS - 1,
        ..SupervisorOptions::default()
    });
    assert!(s.handle(Event::Start).iter().any(|c| matches!(
        c,
        Command::Schedule {
            delay_ms,
            purpose: TimerPurpose::InitDeadline { .. },
            ..
        } if *delay_ms == crate::backoff::MAX_DELAY_MS - 1
    )));
}

fn fail_with(attempt: u64, failure: InitFailure) -> Event {
    Event::InitFailed { attempt, failure }
}

#[test]
fn a_start_s_retries_are_a_start_and_a_loss_s_attempts_a_recovery() {
    let mut s = Supervisor::default();
    assert!(!s.bringing_up_a_recovery(), "idle");
    h(&mut s, Event::Start);
    h(&mut s, Event::DeviceCreated { attempt: 1 });
    // The first device exists (generation 1), and its build may pass later.
    h(
        &mut s,
        Event::InitFailed {
            attempt: 1,
            failure: InitFailure::ResourcesMayPass("out of memory".into()),
        },
    );
    assert_eq!(s.generation(), 1);
    assert!(!s.bringing_up_a_recovery(), "a start's retry");
    let mut s = running();
    assert!(!s.bringing_up_a_recovery(), "running");
    h(&mut s, lost(1));
    assert!(s.bringing_up_a_recovery(), "after a loss");
    h(&mut s, Event::Stop);
    h(&mut s, Event::Start);
    assert!(!s.bringing_up_a_recovery(), "a start after a stop");
}

fn destroyed(generation: u64) -> Event {
    Event::Lost {
        generation,
        reason: LossReason::Destroyed,
        message: String::new(),
        at_ms: 0,
    }
}

/// The application's own `destroy()` in its `build` is no loss to recover
/// from: told while the attempt holds the device, it ends in the
/// unexpected-destroy fallback. Told after the attempt failed and the
/// runtime let the device go, it may be the runtime's own destroy: stale.
#[test]
fn the_application_s_destroy_during_build_is_not_recovered_from() {
    let mut s = Supervisor::default();
    h(&mut s, Event::Start);
    h(&mut s, Event::DeviceCreated { attempt: 1 });
    let commands = h(&mut s, destroyed(1));
    assert!(
        matches!(
            commands.last(),
            Some(Command::ShowFallback(Fallback::UnexpectedDestroy(_)))
        ),
        "{commands:?}"
    );
    assert!(commands.contains(&Command::Destroy { generation: 1 }));
    assert_eq!(s.state(), DeviceState::Failed);
    assert!(!commands
        .iter()
        .any(|c| matches!(c, Command::BeginInit { .. })));

    let mut s = Supervisor::default();
    h(&mut s, Event::Start);
    h(&mut s, Event::DeviceCreated { attempt: 1 });
    h(
        &mut s,
        Event::InitFailed {
            attempt: 1,
            failure: InitFailure::LostDuringInit("the device answers nothing".into()),
        },
    );
    assert_eq!(h(&mut s, destroyed(1)), vec![]);
    assert_eq!(s.state(), DeviceState::Starting);
}

/// A loss of another kind during `build` is retried, as before.
#[test]
fn a_device_lost_during_build_for_another_reason_is_retried() {
    let mut s = Supervisor::default();
    h(&mut s, Event::Start);
    h(&mut s, Event::DeviceCreated { attempt: 1 });
    let commands = h(&mut s, lost(1));
    assert!(
        commands
            .iter()
            .any(|c| matches!(c, Command::Schedule { .. })),
        "{commands:?}"
    );
    assert_eq!(s.state(), DeviceState::Starting);
}
