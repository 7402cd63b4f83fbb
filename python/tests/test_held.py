"""Batches are values to their holders (issue 29; docs/architecture.md, "Holding batches"): with
staging.slots 2, list(p) and keeping batches work, held batches move out of the staging ring
(counted by the report's memory.held_batch_copies), values unchanged; a loop that lets go of each
batch copies nothing."""
import numpy as np

SMALL = {"resize": {"width": 32, "height": 24}}


def _reference(host):
    """(index, values, paths) per batch of a loop that lets go of each batch."""
    p = host(batch={"size": 2}, transform=SMALL, staging={"slots": 2})
    out = [(b.index, np.from_dlpack(b).copy(), [s.path for s in b.samples]) for b in p]
    return out, p.report()


def test_a_loop_that_lets_go_copies_nothing(host):
    want, report = _reference(host)
    assert len(want) >= 4
    assert report["memory"]["held_batch_copies"] == 0
    assert report["memory"]["held_batch_copy_bytes"] == 0


def test_list_of_the_pipeline_holds_every_batch(host):
    want, _ = _reference(host)
    p = host(batch={"size": 2}, transform=SMALL, staging={"slots": 2})
    batches = list(p)
    assert [b.index for b in batches] == [w[0] for w in want]
    for b, (_, values, paths) in zip(batches, want):
        assert np.array_equal(np.from_dlpack(b), values)
        assert [s.path for s in b.samples] == paths
    r = p.report()
    assert r["memory"]["held_batch_copies"] >= len(batches) - 2
    assert r["memory"]["held_batch_copy_bytes"] >= sum(b.nbytes for b in batches[:-2])


def test_keeping_every_other_batch(host):
    want, _ = _reference(host)
    p = host(batch={"size": 2}, transform=SMALL, staging={"slots": 2})
    kept = [b for i, b in enumerate(p) if i % 2 == 0]
    assert len(kept) == (len(want) + 1) // 2
    for b, (index, values, _) in zip(kept, want[::2]):
        assert b.index == index
        assert np.array_equal(np.asarray(b), values)
    assert p.report()["memory"]["held_batch_copies"] > 0


def test_keeping_batch_zero_while_looping(host):
    want, _ = _reference(host)
    p = host(batch={"size": 2}, transform=SMALL, staging={"slots": 2})
    first = None
    for b in p:
        if first is None:
            first = b
    assert np.array_equal(np.asarray(first), want[0][1])


def test_arrays_of_every_batch(host):
    want, _ = _reference(host)
    p = host(batch={"size": 2}, transform=SMALL, staging={"slots": 2})
    arrays = [np.asarray(b) for b in p]  # only the arrays hold the batches
    assert len(arrays) == len(want)
    for a, (_, values, _) in zip(arrays, want):
        assert np.array_equal(a, values)
    assert p.report()["memory"]["held_batch_copies"] >= len(arrays) - 2
