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
