"""imgpipe's messages reach Python's logging, logger "imgpipe", at their level; with no handler
configured, warnings print on stderr as the CLI's do."""
import logging
import shutil
import subprocess
import sys
import textwrap

import imgpipe
from conftest import SOURCE_DIR, sample_images

SMALL = {"resize": {"width": 16, "height": 16}}


def folder_with_a_broken_file(tmp_path):
    for i, p in enumerate(sample_images()[:3]):
        shutil.copy(p, tmp_path / f"a{i}{p.suffix}")
    (tmp_path / "a9_broken.jpg").write_bytes(b"\xff\xd8\xff\xe0" + b"not really a jpeg" * 50)
    return tmp_path


def test_a_failed_input_is_a_warning_record_of_the_imgpipe_logger(tmp_path, caplog):
    folder = folder_with_a_broken_file(tmp_path)
    with caplog.at_level(logging.WARNING, logger="imgpipe"):
        n = sum(len(b) for b in imgpipe.Pipeline(None, inputs=[folder], device="cpu", transform=SMALL))
    assert n == 3
    records = [r for r in caplog.records if r.name == "imgpipe" and "a9_broken.jpg" in r.getMessage()]
    assert len(records) == 1, [r.getMessage() for r in caplog.records]
    assert records[0].levelno == logging.WARNING
    assert "[imgpipe]" not in records[0].getMessage() and "[warning]" not in records[0].getMessage()


def test_the_application_filters_them_as_any_library(tmp_path, caplog):
    folder = folder_with_a_broken_file(tmp_path)
    logging.getLogger("imgpipe").setLevel(logging.ERROR)
    try:
        with caplog.at_level(logging.WARNING):
            sum(len(b) for b in imgpipe.Pipeline(None, inputs=[folder], device="cpu", transform=SMALL))
    finally:
        logging.getLogger("imgpipe").setLevel(logging.NOTSET)
    assert not [r for r in caplog.records if r.name == "imgpipe"]


def run_python(code, tmp_path):
    env_code = textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", env_code, str(folder_with_a_broken_file(tmp_path))],
                          capture_output=True, text=True, timeout=120, cwd=str(SOURCE_DIR))


def test_without_a_handler_warnings_print_as_the_cli_prints_them(tmp_path):
    r = run_python("""
        import sys, imgpipe
        n = sum(len(b) for b in imgpipe.Pipeline(None, inputs=[sys.argv[1]], device="cpu",
                                                 transform={"resize": {"width": 16, "height": 16}}))
        print("delivered", n)
    """, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "delivered 3" in r.stdout
    lines = [line for line in r.stderr.splitlines() if "a9_broken.jpg" in line]
    assert len(lines) == 1 and lines[0].startswith("imgpipe: warning: "), r.stderr
    assert "[imgpipe]" not in r.stderr, r.stderr  # not spdlog's line


def test_with_the_applications_handler_they_print_once_in_its_format(tmp_path):
    r = run_python("""
        import logging, sys, imgpipe
        logging.basicConfig(format="APP %(name)s %(levelname)s %(message)s")
        n = sum(len(b) for b in imgpipe.Pipeline(None, inputs=[sys.argv[1]], device="cpu",
                                                 transform={"resize": {"width": 16, "height": 16}}))
    """, tmp_path)
    assert r.returncode == 0, r.stderr
    lines = [line for line in r.stderr.splitlines() if "a9_broken.jpg" in line]
    assert len(lines) == 1 and lines[0].startswith("APP imgpipe WARNING "), r.stderr
