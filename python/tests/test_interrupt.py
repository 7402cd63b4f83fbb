"""Ctrl-C in a loop over batches: KeyboardInterrupt comes promptly (the wait for a batch is cut
into short waits between which Python handles the signal), the run is stopped, its threads are
joined and the process exits as an interrupted Python program does."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import SAMPLES

SCRIPT = textwrap.dedent("""
    import sys, time
    import imgpipe
    body_sleep = float(sys.argv[1])
    p = imgpipe.Pipeline(None, inputs=[sys.argv[2]], device="cpu", batch={"size": 2},
                         input={"loop": 100000}, decode={"threads": 1, "reduced": "off"},
                         transform={"resize": {"width": 320, "height": 320}})
    try:
        for b in p:
            print("batch", b.index, flush=True)
            if body_sleep:
                time.sleep(body_sleep)
    except KeyboardInterrupt:
        t = time.monotonic()
        p.stop()
        r = p.report()
        print("stopped interrupted=%s delivered=%d in %.2f s" % (r["interrupted"], r["inputs"]["delivered"],
              time.monotonic() - t), flush=True)
        raise
""")


def interrupt(body_sleep):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(body_sleep), str(SAMPLES)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        for line in proc.stdout:  # a few batches, so the run is in full flow
            lines.append(line)
            if len(lines) == 3:
                break
        assert len(lines) == 3, proc.stderr.read()
        t = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
        took = time.monotonic() - t
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, out, err, took


@pytest.mark.parametrize("body_sleep", [0.0, 0.2], ids=["waiting_in_next", "in_the_loop_body"])
def test_ctrl_c_stops_the_run_and_raises_keyboard_interrupt(body_sleep):
    rc, out, err, took = interrupt(body_sleep)
    assert "KeyboardInterrupt" in err, err
    assert "stopped interrupted=True" in out, out + err
    # Python ends an uncaught KeyboardInterrupt by dying of SIGINT (or exit 130 on some builds).
    assert rc in (-signal.SIGINT, 130), (rc, err)
    assert took < 10, f"took {took:.1f} s to stop"
    for bad in ("terminate called", "Segmentation", "Aborted", "Fatal Python error", "core dumped"):
        assert bad not in err, err
