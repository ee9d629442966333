use super::*;
use crossbeam_channel::bounded;

#[test]
fn a_full_executor_refuses_at_once_and_a_freed_worker_takes_the_next_job() {
    // An hour of hand-off grace: a refusal that waited for the busy worker at the hand-off
    // could only end when the worker came free, which the test allows only afterwards.
    let hour = Duration::from_secs(3600);
    let executor = Executor::start(1, hour, Duration::from_secs(2)).unwrap();
    let (release_tx, release_rx) = bounded::<()>(1);
    let (done_tx, done_rx) = bounded::<u32>(4);
    let done = done_tx.clone();
    assert!(executor.try_admit(Box::new(move |slot| {
        let _ = release_rx.recv();
        drop(slot);
        let _ = done.send(1);
    })));
    // The second job is offered on its own thread, so that a try_admit that waited fails
    // the test instead of hanging it: past the guard the worker is released (which lets a
    // waiting try_admit hand its job over and return) and the test fails.
    let hang_guard = Duration::from_secs(10);
    let refused = std::thread::scope(|scope| {
        let (admitted_tx, admitted_rx) = bounded::<bool>(1);
        let executor = &executor;
        scope.spawn(move || {
            let _ = admitted_tx.send(executor.try_admit(Box::new(|_| {})));
        });
        let admitted = admitted_rx.recv_timeout(hang_guard);
        if admitted.is_err() {
            let _ = release_tx.send(());
        }
        !admitted.expect("try_admit waited for the busy worker instead of refusing")
    });
    assert!(refused, "a job was admitted while the only worker was busy");
    // Refused while the first job still held the worker: it had not finished.
    assert!(done_rx.try_recv().is_err());
    assert_eq!(executor.occupied(), 1);
    release_tx.send(()).unwrap();
    assert_eq!(done_rx.recv().unwrap(), 1);
    // The slot was freed before the answer, so back-to-back jobs are never refused.
    for round in 0..200 {
        let done = done_tx.clone();
        assert!(
            executor.try_admit(Box::new(move |slot| {
                drop(slot);
                let _ = done.send(2);
            })),
            "round {round}"
        );
        assert_eq!(done_rx.recv().unwrap(), 2);
    }
    executor.close(Duration::from_secs(2));
    assert!(!executor.try_admit(Box::new(|_| {})));
}

#[test]
fn a_panicking_job_frees_its_worker() {
    let executor = Executor::start(1, Duration::from_secs(1), Duration::from_secs(2)).unwrap();
    assert!(executor.try_admit(Box::new(|_| panic!("boom"))));
    assert!(executor.wait_idle(Duration::from_secs(5)));
    let (done_tx, done_rx) = bounded(1);
    assert!(executor.try_admit(Box::new(move |_| {
        let _ = done_tx.send(());
    })));
    done_rx.recv().unwrap();
}

#[test]
fn a_job_admitted_while_the_only_free_worker_is_in_its_tail_waits_for_it_not_refused() {
    let executor = Executor::start(1, Duration::from_secs(3600), Duration::from_secs(2)).unwrap();
    let (in_tail_tx, in_tail) = bounded::<()>(1);
    let (end_tail_tx, end_tail) = bounded::<()>(1);
    assert!(executor.try_admit(Box::new(move |slot| {
        // Frees the count, then lingers: the worker is free by count but not at its slot.
        drop(slot);
        in_tail_tx.send(()).unwrap();
        let _ = end_tail.recv();
    })));
    in_tail.recv().unwrap();
    assert_eq!(executor.occupied(), 0);
    let (done_tx, done) = bounded::<()>(1);
    std::thread::scope(|scope| {
        let executor = &executor;
        let offer = scope.spawn(move || {
            executor.try_admit(Box::new(move |_| {
                let _ = done_tx.send(());
            }))
        });
        // The offer waits for the worker (its count is taken); ending the tail lets it in.
        end_tail_tx.send(()).unwrap();
        assert!(offer.join().unwrap(), "a free worker's job was refused");
    });
    done.recv().unwrap();
    executor.close(Duration::from_secs(2));
}

#[test]
fn close_ends_a_wait_for_a_worker_in_its_tail() {
    let executor = Executor::start(1, Duration::from_secs(3600), Duration::from_secs(0)).unwrap();
    let (in_tail_tx, in_tail) = bounded::<()>(1);
    let (end_tail_tx, end_tail) = bounded::<()>(1);
    assert!(executor.try_admit(Box::new(move |slot| {
        drop(slot);
        in_tail_tx.send(()).unwrap();
        let _ = end_tail.recv();
    })));
    in_tail.recv().unwrap();
    std::thread::scope(|scope| {
        let executor = &executor;
        let offer = scope.spawn(move || executor.try_admit(Box::new(|_| {})));
        // Closing (with no grace: the worker is still in its tail) refuses the waiting offer
        // although its hand-off grace is an hour.
        while executor.shared.waiters.load(Ordering::SeqCst) == 0 && !offer.is_finished() {
            std::thread::yield_now();
        }
        executor.close(Duration::ZERO);
        assert!(!offer.join().unwrap());
    });
    assert_eq!(executor.occupied(), 0);
    end_tail_tx.send(()).unwrap();
}

#[test]
fn many_jobs_from_several_threads_each_admitted_or_refused_and_every_admitted_one_runs() {
    let executor = Executor::start(3, Duration::from_secs(3600), Duration::from_secs(5)).unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let admitted = AtomicUsize::new(0);
    let admitted = &admitted;
    std::thread::scope(|scope| {
        for thread in 0..4 {
            let executor = &executor;
            let ran = Arc::clone(&ran);
            scope.spawn(move || {
                let (done_tx, done) = bounded::<()>(1);
                for job in 0..2_000 {
                    if job % 100 == 99 {
                        // Not for correctness: lets the workers park between jobs.
                        std::thread::sleep(Duration::from_micros(300));
                    }
                    let done_tx = done_tx.clone();
                    let ran = Arc::clone(&ran);
                    let accepted = executor.try_admit(Box::new(move |slot| {
                        ran.fetch_add(1, Ordering::SeqCst);
                        drop(slot);
                        let _ = done_tx.send(());
                    }));
                    if accepted {
                        admitted.fetch_add(1, Ordering::SeqCst);
                        done.recv_timeout(Duration::from_secs(60))
                            .unwrap_or_else(|_| panic!("thread {thread}: job {job} never ran"));
                    }
                }
            });
        }
    });
    assert!(executor.wait_idle(Duration::from_secs(60)));
    assert_eq!(ran.load(Ordering::SeqCst), admitted.load(Ordering::SeqCst));
    assert!(admitted.load(Ordering::SeqCst) > 0);
    executor.close(Duration::from_secs(5));
}
