"""Builds the Python package with libimgpipe_c.so (and libimgpipe_opencv_io.so) inside it (pyproject.toml holds the metadata).

build_py copies python/imgpipe, then CMake configures this repository into its own folder
($IMGPIPE_PIP_BUILD_DIR, default build-pip/) and builds the target imgpipe_c alone (the C API and
the layers it links; no tests, samples or CLI), with as many jobs as CPUs (nproc), and the library
goes beside the package's files, where imgpipe/_capi.py looks first.

The backend is built for this machine: with a GPU (nvidia-smi names it) and nvcc, CUDA for that
GPU's architecture alone; without a GPU, the host backend alone (compiling CUDA for GPUs the
machine does not have took most of a 4-minute install on 2 cores). $IMGPIPE_CMAKE_ARGS adds CMake
options and overrides that choice when it names IMGPIPE_WITH_CUDA or CMAKE_CUDA_ARCHITECTURES, e.g.
IMGPIPE_CMAKE_ARGS='-DIMGPIPE_WITH_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=80;90' for a wheel that
other machines' GPUs run. `pip install -v` shows the choice and CMake's progress.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))
BUILD_DIR = os.path.abspath(os.environ.get("IMGPIPE_PIP_BUILD_DIR") or os.path.join(ROOT, "build-pip"))


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"^project\(imgpipe VERSION ([0-9.]+)", f.read(), re.M)
    if not m:
        sys.exit("setup.py: CMakeLists.txt has no 'project(imgpipe VERSION x.y.z' line")
    return m.group(1)


def gpu_architectures():
    """This machine's GPUs' CUDA architectures ("90", ...), [] when nvidia-smi finds none."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return [], "nvidia-smi not found"
    try:
        out = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        return [], f"nvidia-smi failed: {e}"
    caps = sorted({c.strip().replace(".", "") for c in out.stdout.splitlines() if re.fullmatch(r"\d+\.\d+", c.strip())})
    if out.returncode != 0 or not caps:
        return [], f"nvidia-smi found no GPU (exit {out.returncode})"
    return caps, ""


def backend_args(user_args):
    """The CMake options that pick the backend, and the line that says why."""
    if any(re.match(r"-DIMGPIPE_WITH_CUDA\b|-DCMAKE_CUDA_ARCHITECTURES\b", a) for a in user_args):
        return [], "the backend as IMGPIPE_CMAKE_ARGS says"
    archs, why = gpu_architectures()
    if not archs:
        return ["-DIMGPIPE_WITH_CUDA=off"], (
            f"no GPU found ({why}): building the host backend alone; for a CUDA build set "
            "IMGPIPE_CMAKE_ARGS='-DIMGPIPE_WITH_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=80;90' (your GPUs' architectures)")
    return ["-DCMAKE_CUDA_ARCHITECTURES=" + ";".join(archs)], (
        f"building for this machine's GPU(s), architecture {', '.join('sm_' + a for a in archs)} "
        "(CUDA when nvcc is found; IMGPIPE_CMAKE_ARGS=-DCMAKE_CUDA_ARCHITECTURES=... for others)")


def run(cmd):
    print("imgpipe:", " ".join(shlex.quote(c) for c in cmd), flush=True)
    subprocess.check_call(cmd, cwd=ROOT)


class BuildWithLibrary(build_py):
    """build_py, then libimgpipe_c.so built by CMake into the package."""

    def run(self):
        super().run()
        cmake = shutil.which("cmake")
        if cmake is None:
            sys.exit("setup.py: cmake not found: install Debian's cmake (./setup.sh build installs what "
                     "the C++ build needs)")
        configure = [cmake, "-S", ROOT, "-B", BUILD_DIR, "-DCMAKE_BUILD_TYPE=Release",
                     "-DIMGPIPE_BUILD_TESTS=OFF", "-DIMGPIPE_BUILD_SAMPLES=OFF", "-DIMGPIPE_BUILD_PYTHON=ON"]
        if shutil.which("ninja") and not os.path.exists(os.path.join(BUILD_DIR, "CMakeCache.txt")):
            configure += ["-G", "Ninja"]
        user_args = shlex.split(os.environ.get("IMGPIPE_CMAKE_ARGS", ""))
        chosen, why = backend_args(user_args)
        print("imgpipe:", why, flush=True)
        configure += chosen + user_args
        run(configure)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(len(os.sched_getaffinity(0)))
        run([cmake, "--build", BUILD_DIR, "--target", "imgpipe_c", "imgpipe_opencv_io", "-j", jobs])
        built = os.path.join(BUILD_DIR, "python", "imgpipe", "libimgpipe_c.so")  # capi/CMakeLists.txt
        if not os.path.exists(built):
            sys.exit(f"setup.py: {built} was not built: is libdlpack-dev installed (CMake's warnings above)?")
        # OpenCV's image codecs and video capture, which the library loads when first needed
        # from beside itself (codecs/opencv_io/opencv_io.hpp).
        module = os.path.join(BUILD_DIR, "lib", "libimgpipe_opencv_io.so")
        if not os.path.exists(module):
            sys.exit(f"setup.py: {module} was not built")
        target = os.path.join(self.build_lib, "imgpipe")
        os.makedirs(target, exist_ok=True)
        self.copy_file(built, os.path.join(target, "libimgpipe_c.so"))
        self.copy_file(module, os.path.join(target, "libimgpipe_opencv_io.so"))


class BinaryDistribution(Distribution):
    """A wheel for this platform (the package holds a native library)."""

    def has_ext_modules(self):
        return True


os.makedirs(BUILD_DIR, exist_ok=True)
setup(
    version=project_version(),
    distclass=BinaryDistribution,
    cmdclass={"build_py": BuildWithLibrary},
    options={"build": {"build_base": os.path.join(BUILD_DIR, "setuptools")},
             "egg_info": {"egg_base": BUILD_DIR}},
)
