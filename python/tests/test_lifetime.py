"""Lifetime: a batch's memory stays valid, and unchanged, while the Batch or any array made from it
lives; the staging slot returns when the last is gone (back-pressure: at most staging.slots batches
are in the ring; held batches move out of it at the same address, so holding any number of them
never hangs the run)."""
import gc

import numpy as np
import pytest

import imgpipe
from conftest import sample_images

SMALL = {"resize": {"width": 32, "height": 24}}


def test_a_batch_kept_past_the_next_iterations_stays_intact(host):
    p = host(batch={"size": 2}, transform=SMALL, staging={"slots": 3})
    kept, copies = None, None
    later = 0
    for b in p:
        if kept is None:
            kept, copies = b, np.from_dlpack(b).copy()
        else:
            later += 1
            assert np.array_equal(np.from_dlpack(kept), copies)  # while others flow through
        if later == 3:
            break
    assert np.array_equal(np.from_dlpack(kept), copies)
    assert kept.samples[0].path == str(sample_images()[0])


def test_an_array_from_dlpack_keeps_the_memory_after_the_batch_is_gone(host):
    p = host(batch={"size": 2}, transform=SMALL, staging={"slots": 2})
    arrays, copies = [], []
    for b in p:
        a = np.from_dlpack(b)
        del b
        gc.collect()
        if len(arrays) < 1:
            arrays.append(a)
            copies.append(a.copy())
        # Later batches come (the kept array holds one of the two slots) and do not overwrite it.
        assert np.array_equal(arrays[0], copies[0])
        del a  # else the next batch could not come: this and the kept one hold both slots
    assert np.array_equal(arrays[0], copies[0])


def test_views_of_every_slot_move_out_of_the_ring_unchanged(host):
    p = host(batch={"size": 2}, transform=SMALL, staging={"slots": 2})
    with p.start() as s:
        first = s.next()
        view = np.from_dlpack(first)
        want = view.copy()
        first.release()
        second = s.next()
        # The caller holds both slots (one through the array): the array's batch moves out of the
        # ring, at the same address, and the run goes on.
        third = s.next()
        assert third is not None and third.index == 2
        assert np.array_equal(view, want)
        second.release()
        third.release()
        while s.next() is not None:
            pass
        assert s.report()["memory"]["held_batch_copies"] == 1


def test_an_unconsumed_capsule_drops_its_hold(host):
    p = host(batch={"size": 2}, transform=SMALL, staging={"slots": 2})
    with p.start() as s:
        b = s.next()
        for _ in range(5):
            b.__dlpack__()  # never consumed: its destructor deletes the tensor
        b.release()
        gc.collect()
        held = [s.next(), s.next()]  # both slots free again
        assert all(h is not None for h in held)


def test_release_is_idempotent_and_a_released_batch_says_so(host):
    b = next(iter(host(batch={"size": 2}, transform=SMALL)))
    shape = b.shape
    b.release()
    b.release()
    assert b.shape == shape
    with pytest.raises(imgpipe.UsageError):
        b.samples
    with pytest.raises(imgpipe.UsageError):
        np.from_dlpack(b)


def test_batches_outlive_their_pipeline(host):
    p = host(batch={"size": 4}, transform=SMALL, staging={"slots": 3})
    s = p.start()
    b = s.next()
    want = np.from_dlpack(b).copy()
    s.close()
    p.close()
    del s, p
    gc.collect()
    assert np.array_equal(np.from_dlpack(b), want)


def test_stopping_a_run_while_holding_every_slot(host):
    p = host(batch={"size": 2}, transform=SMALL, staging={"slots": 2})
    s = p.start()
    held = [s.next(), s.next()]
    want = [np.from_dlpack(b).copy() for b in held]
    p.stop()  # returns: the run's threads are joined although the caller holds both slots
    # The held batches moved out of the ring, so the run could end: it has a report.
    r = p.report()
    assert r["interrupted"] and r["memory"]["held_batch_copies"] >= 1
    for b, w in zip(held, want):
        assert np.array_equal(np.from_dlpack(b), w)  # held batches stay valid
    assert s.next() is None
    del held, b
    gc.collect()
    assert sum(len(b) for b in p) == len(sample_images())  # and the pipeline runs again


def test_report_after_stop_without_iterating_to_the_end(host):
    # stop() asks the run to end; report() then waits for that end and gives its report (it raised
    # "the run is still going" before).
    p = host(batch={"size": 2}, transform=SMALL)
    s = p.start()
    first = s.next()
    s.stop()
    r = p.report()
    assert r["interrupted"] and 1 <= r["batches"] <= len(sample_images()) // 2
    assert s.report() is r and s.next() is None
    first.release()
    s = p.start()
    next(s)
    p.request_stop()
    assert p.report()["interrupted"]
    assert sum(len(b) for b in p) == len(sample_images())  # and the pipeline runs again
