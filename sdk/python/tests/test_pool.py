"""The handler pool on a real event loop: few threads for quick jobs, more as soon as jobs block."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

from svc_sdk.pool import HandlerPool


def _on_loop(body: Callable[[HandlerPool], None], then: Callable[[HandlerPool], None], max_threads: int = 64) -> None:
    """Run `body(pool)` in one callback on a running loop (as the worker hands calls in), then
    `then(pool)` in a thread while the loop runs on, and shut the pool down."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        pool = HandlerPool(max_threads, "test-pool", loop)
        try:
            body(pool)
            await loop.run_in_executor(None, then, pool)  # the loop's own default executor: not this pool
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    asyncio.run(main())


def _wait(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out after {timeout}s waiting for {what}"
        time.sleep(0.005)


def test_quick_jobs_handed_in_together_run_on_few_threads() -> None:
    """A read's worth of quick calls is one thread's work: more threads would only contend for the
    GIL (the stock pool woke a thread per waiting job, up to its limit)."""
    threads: set[int] = set()
    done = threading.Semaphore(0)
    n = 300

    def quick(_: int) -> None:
        threads.add(threading.get_ident())
        sum(range(50))
        done.release()

    def body(pool: HandlerPool) -> None:
        for i in range(n):
            pool.run_soon(quick, i)

    def then(pool: HandlerPool) -> None:
        for _ in range(n):
            assert done.acquire(timeout=10), "a quick job did not run"

    _on_loop(body, then)
    # One thread unless the machine stalled it for a millisecond or more; the stock pool used 64.
    assert len(threads) <= 8, f"{n} quick jobs ran on {len(threads)} threads"


def test_jobs_behind_a_blocked_thread_get_threads_of_their_own() -> None:
    block = threading.Event()
    finished: list[int] = []

    def job(i: int) -> None:
        if i == 0:
            block.wait(10)
        finished.append(i)

    def body(pool: HandlerPool) -> None:
        for i in range(20):
            pool.run_soon(job, i)

    def then(_: HandlerPool) -> None:
        try:
            _wait(lambda: len(finished) == 19, 2, "the 19 jobs queued behind a blocked one")
            assert 0 not in finished
        finally:
            block.set()
        _wait(lambda: len(finished) == 20, 5, "the blocked job")

    _on_loop(body, then)


def test_blocking_jobs_soon_run_side_by_side() -> None:
    """Threads double while the running ones are blocked: 64 sleeping jobs are all running within a
    small part of one job's time, as with a thread per job."""
    state = {"now": 0, "peak": 0}
    lock = threading.Lock()
    done = threading.Semaphore(0)

    def sleepy(_: int) -> None:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.5)
        with lock:
            state["now"] -= 1
        done.release()

    def body(pool: HandlerPool) -> None:
        for i in range(64):
            pool.run_soon(sleepy, i)

    started = time.monotonic()

    def then(pool: HandlerPool) -> None:
        for _ in range(64):
            assert done.acquire(timeout=10), "a sleeping job did not finish"

    _on_loop(body, then)
    assert state["peak"] == 64, f"at most {state['peak']} of 64 sleeping jobs ran at once"
    assert time.monotonic() - started < 1.5, "the sleeping jobs ran in more than three rounds"


def test_a_stall_is_reported_while_threads_block_and_then_ever_less_often() -> None:
    """on_stall (the worker sends answers finished before a block) comes within milliseconds of a
    block, and while the thread stays blocked with nothing waiting, the checks back off."""
    go, block = threading.Event(), threading.Event()
    stalls: list[float] = []
    finished: list[str] = []

    def first(_: int) -> None:
        go.wait(10)
        finished.append("first")

    def blocker(_: int) -> None:
        block.wait(10)

    def body(pool: HandlerPool) -> None:
        pool.on_stall = lambda: stalls.append(time.monotonic())
        pool.run_soon(first, 0)  # both handed in in one pass: one thread runs first, then blocker
        pool.run_soon(blocker, 1)

    def then(_: HandlerPool) -> None:
        go.set()
        _wait(lambda: finished == ["first"], 2, "the first job")
        _wait(lambda: bool(stalls), 1, "a stall report while the second job blocks")
        time.sleep(0.6)
        block.set()

    _on_loop(body, then)
    # Every millisecond would be ~600; doubling up to 100 ms is ~12.
    assert len(stalls) < 40, f"{len(stalls)} stall checks in 0.6 s of one blocked thread"


def test_jobs_from_other_threads_wake_a_thread_at_once() -> None:
    """Off the loop there is no stall check: a job handed in there never waits behind a blocked one."""
    block = threading.Event()
    ran = threading.Event()

    def blocked(_: int) -> None:
        block.wait(10)

    def body(pool: HandlerPool) -> None:
        pool.run_soon(blocked, 0)

    def then(pool: HandlerPool) -> None:
        try:
            time.sleep(0.05)  # the first job is running (and blocked) by now
            pool.run_soon(lambda _: ran.set(), 1)
            assert ran.wait(2), "a job handed in from another thread waited behind a blocked one"
        finally:
            block.set()

    _on_loop(body, then)


def test_a_failing_on_drained_costs_no_thread_and_no_count() -> None:
    """`on_drained` runs in a pool thread after its job: if it raises, the thread still counts
    itself out of the running ones and serves the next job (else every later job on the loop
    waited for the stall check behind a thread that is gone)."""
    ran: list[int] = []

    def failing() -> None:
        raise RuntimeError("on_drained failed")

    def body(pool: HandlerPool) -> None:
        pool.on_drained = failing
        pool.run_soon(ran.append, 1)

    def then(pool: HandlerPool) -> None:
        _wait(lambda: ran == [1] and pool._running == 0, 2, "the first job and the running count back to 0")
        assert all(thread.is_alive() for thread in pool._workers), "the thread died"

    _on_loop(body, then)
