"""Builds the Python package with libimgpipe_c.so inside it (pyproject.toml holds the metadata).

build_py copies python/imgpipe, then CMake configures this repository into its own folder
($IMGPIPE_PIP_BUILD_DIR, default build-pip/) and builds the target imgpipe_c alone (the C API and
the layers it links; no tests, samples or CLI), with as many jobs as CPUs (nproc), and the library
goes beside the package's files, where imgpipe/_capi.py looks first. The backend is the project's
choice (IMGPIPE_WITH_CUDA=auto: CUDA when nvcc is found); $IMGPIPE_CMAKE_ARGS adds CMake options,
e.g. IMGPIPE_CMAKE_ARGS=-DIMGPIPE_WITH_CUDA=off for the host backend.
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
        configure += shlex.split(os.environ.get("IMGPIPE_CMAKE_ARGS", ""))
        run(configure)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(len(os.sched_getaffinity(0)))
        run([cmake, "--build", BUILD_DIR, "--target", "imgpipe_c", "-j", jobs])
        built = os.path.join(BUILD_DIR, "python", "imgpipe", "libimgpipe_c.so")  # capi/CMakeLists.txt
        if not os.path.exists(built):
            sys.exit(f"setup.py: {built} was not built: is libdlpack-dev installed (CMake's warnings above)?")
        target = os.path.join(self.build_lib, "imgpipe")
        os.makedirs(target, exist_ok=True)
        self.copy_file(built, os.path.join(target, "libimgpipe_c.so"))


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
