"""``inventory.workers``: ``in_order``'s results in order from worker processes and the caller, at
most ``window`` taken ahead of the consumer, a worker's exception raised in its turn, a worker
that dies leaving its work to the caller, no worker at all where none can be started; and
``trim_heap``'s threshold."""

import multiprocessing
import operator
import os
import signal
import threading
import time

import pytest

from fatbin_inspect.inventory import workers

FORK = multiprocessing.get_start_method(allow_none=True) in (None, "fork") and hasattr(os, "fork")


def _square_where(log, parent, i):
    """``i * i``, and who computed it: the caller (``parent``) or a worker (each takes 2 ms, so
    the caller does not finish them all while the workers start)."""
    time.sleep(0.002)
    with log.get_lock():
        log[i] = 1 if os.getpid() == parent else 2
    return i * i


def test_results_come_in_order_from_the_workers_and_the_caller():
    n = 60
    log = multiprocessing.Array("b", n)
    got = list(workers.in_order(_square_where, (log, os.getpid()), n, 3, 4))
    assert got == [i * i for i in range(n)]
    assert set(log) <= {1, 2} and 2 in set(log)  # every i computed once, some by a worker


def _taken_ahead(taken, i):
    with taken.get_lock():
        taken.value += 1
    time.sleep(0.002)
    return i


@pytest.mark.parametrize("window", [1, 3])
def test_no_more_than_the_window_is_taken_ahead_of_the_consumer(window):
    """The consumer is slow: however fast the workers are, at most ``window`` results are taken
    and not yet consumed (what bounds the memory files a slice is written into)."""
    taken = multiprocessing.Value("q", 0)
    most = 0
    for k, i in enumerate(workers.in_order(_taken_ahead, (taken,), 40, 3, window)):
        assert i == k
        time.sleep(0.005)
        most = max(most, taken.value - k)
    assert 1 <= most <= window


def test_an_exception_is_raised_in_its_turn():
    """1/i fails at i = 0 only after nothing; at 1/(i - 5) after the first five results."""
    gen = workers.in_order(operator.truediv, (1.0,), 4, 2, 2)
    with pytest.raises(ZeroDivisionError):
        next(gen)
    got = []
    with pytest.raises(ZeroDivisionError):
        for x in workers.in_order(_one_over, (5,), 12, 2, 3):
            got.append(x)
    assert got == [1 / (i - 5) for i in range(5)]


def _one_over(k, i):
    return 1 / (i - k)


def _die_in_a_worker(parent, died, i):
    """``-i``; the first worker to take an ``i`` dies with it, the others live on."""
    if os.getpid() != parent:
        with died.get_lock():
            first, died.value = died.value == 0, 1
        if first:
            os._exit(9)  # as the OOM killer would end it: no answer, no traceback
    time.sleep(0.005)
    return -i


def _slow_in_a_worker(parent, i):
    time.sleep(0.02 if os.getpid() == parent else 0.4)  # (the worker starts before all is taken)
    return i


@pytest.mark.skipif(not FORK, reason="the test's task reaches the workers by fork")
def test_the_caller_waits_for_a_workers_answer_once_everything_is_taken(monkeypatch):
    """Once the counter is past ``n``, the caller blocks on the workers' pipes for the answer it
    needs, not taking from the counter again and again while a worker computes it."""
    past = []
    take = workers._take

    def counted(taken, timeout=None):
        i = take(taken, timeout)
        if i is not None and i >= 6 and os.getpid() == parent:
            past.append(i)
        return i

    parent = os.getpid()
    monkeypatch.setattr(workers, "_take", counted)
    assert list(workers.in_order(_slow_in_a_worker, (parent,), 6, 2, 6)) == list(range(6))
    assert len(past) <= 1  # (taking again and again, it took thousands)


@pytest.mark.skipif(not FORK, reason="the test's task reaches the workers by fork")
def test_a_worker_that_dies_leaves_its_work_to_the_caller():
    """One of two workers dies holding an ``i``; the other lives on. (In a thread, so that a
    caller left waiting for the dead one's answer fails the test rather than hangs it.)"""
    got: list = []
    died = multiprocessing.Value("b", 0)
    t = threading.Thread(
        target=lambda: got.extend(workers.in_order(_die_in_a_worker, (os.getpid(), died), 30, 3, 4)),
        daemon=True,
    )
    t.start()
    t.join(60)
    assert died.value == 1 and got == [-i for i in range(30)]


def _hang_in_a_worker(parent, i):
    if os.getpid() != parent and i:
        time.sleep(60)
    return i


@pytest.mark.skipif(not FORK, reason="the test's task reaches the workers by fork")
def test_a_consumer_that_stops_early_ends_the_workers():
    gen = workers.in_order(_hang_in_a_worker, (os.getpid(),), 10, 3, 4)
    assert next(gen) == 0
    kids = multiprocessing.active_children()
    assert kids
    start = time.monotonic()
    gen.close()
    assert time.monotonic() - start < 10
    assert not [p for p in kids if p.is_alive()]


@pytest.mark.parametrize("started", [0, 1])
def test_no_worker_process_computes_everything_here(monkeypatch, started):
    """Where no process can be started (no fork, no /dev/shm, no process to spare), the caller
    computes every i; a worker started before another could not be is ended first (it would
    take and compute some too)."""
    real = workers._start_all

    def refuse(crew):
        real(crew[:started])
        raise OSError("no processes here")

    monkeypatch.setattr(workers, "_start_all", refuse)
    log = multiprocessing.Array("b", 20)
    got = list(workers.in_order(_square_where, (log, os.getpid()), 20, 3, 2))
    assert got == [i * i for i in range(20)] and list(log) == [1] * 20


def test_workers_ignore_ctrl_c_and_leave_it_to_the_caller():
    """A SIGINT to the workers (Ctrl-C reaches the whole foreground group) neither ends them nor
    prints anything: the caller alone handles it (``workers.init``)."""
    if not FORK:
        pytest.skip("the signal is sent to workers made by fork")
    gen = workers.in_order(pow, (2,), 200, 3, 4)
    first = next(gen)
    for p in multiprocessing.active_children():
        os.kill(p.pid, signal.SIGINT)
    assert [first, *gen] == [2**i for i in range(200)]


@pytest.mark.parametrize(
    ("free", "over", "trims"), [(9 << 20, 8 << 20, 1), (7 << 20, 8 << 20, 0), (7 << 20, 0, 1)]
)
def test_the_heap_is_trimmed_only_past_what_glibc_may_keep(monkeypatch, free, over, trims):
    """``trim_heap(over)`` gives pages back only when glibc holds more than ``over`` bytes free
    (a trim after every slice re-faulted them in the next); ``over`` 0 always trims."""
    import types

    calls = []
    libc = types.SimpleNamespace(
        malloc_trim=calls.append, mallinfo2=lambda: types.SimpleNamespace(fordblks=free)
    )
    monkeypatch.setattr(workers, "_libc", lambda: libc)
    workers.trim_heap(over)
    assert calls == [0] * trims


def test_glibcs_own_figures_are_read_where_it_has_them():
    libc = workers._libc()
    if libc is None or libc.mallinfo2 is None:
        pytest.skip("no glibc >= 2.33 here (mallinfo2)")
    before = libc.mallinfo2().uordblks
    hold = [bytearray(1000) for _ in range(2000)]  # ~2 MB in small chunks: glibc's, not mmap's
    assert libc.mallinfo2().uordblks >= before + 1_000_000
    del hold


def _in_order_in_a_daemon(q):
    q.put(list(workers.in_order(pow, (2,), 6, 2, 2)))


@pytest.mark.skipif(not FORK, reason="the daemonic process is made by fork")
def test_a_daemonic_process_computes_everything_itself():
    """multiprocessing lets a daemonic process (a pool's worker, say) have no children: there
    ``in_order`` computes every i itself rather than fail."""
    q = multiprocessing.Queue()
    p = multiprocessing.Process(target=_in_order_in_a_daemon, args=(q,), daemon=True)
    p.start()
    got = q.get(timeout=60)
    p.join(60)
    assert got == [2**i for i in range(6)] and p.exitcode == 0
