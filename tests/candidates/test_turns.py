"""The device's lock serves tuners in the order they asked, and an interrupted waiter does not
keep the others waiting."""

import threading
import time

from pool_fusion_tuning.tuning.candidates.turns import TurnLock


def _wait_until(condition) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def test_a_waiting_tuner_gets_the_next_turn_before_the_one_that_just_had_it():
    lock, turns = TurnLock(), []
    lock.__enter__()  # tuner A measures

    def tuner_b():
        with lock:
            turns.append("B")

    other = threading.Thread(target=tuner_b)
    other.start()
    _wait_until(lambda: lock._next_ticket == 2)  # B is waiting for its turn
    lock.__exit__()  # A is done, and asks again at once with its next candidate
    with lock:
        turns.append("A")
    other.join(timeout=10)
    assert turns == ["B", "A"]


def test_an_interrupted_waiter_passes_its_turn_on():
    lock, done = TurnLock(), threading.Event()
    lock.__enter__()  # a tuner measures

    def interrupted():
        try:
            with lock:
                pass
        except KeyboardInterrupt:
            pass

    # A waiter interrupted in its wait, as Ctrl-C would interrupt the main thread.
    original_wait = lock._changed.wait
    lock._changed.wait = lambda *a: (_ for _ in ()).throw(KeyboardInterrupt)
    waiter = threading.Thread(target=interrupted)
    waiter.start()
    waiter.join(timeout=10)
    lock._changed.wait = original_wait

    def later_tuner():
        with lock:
            done.set()

    later = threading.Thread(target=later_tuner)
    later.start()
    lock.__exit__()
    assert done.wait(timeout=10), "the turn stuck at the interrupted waiter's ticket"
    later.join(timeout=10)
