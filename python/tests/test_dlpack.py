"""The DLPack tensors the C API makes: the ctypes mirrors below against the library's offsetof and
sizeof of dlpack.h's structs (imgpipe_dlpack_layout), the tensor's fields, both capsule kinds, and
the imgpipe_batch_info mirror of the package."""
import ctypes

import numpy as np
import pytest

from imgpipe import _capi

lib = _capi.lib


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


MIRRORS = {"DLDevice": DLDevice, "DLDataType": DLDataType, "DLTensor": DLTensor,
           "DLManagedTensor": DLManagedTensor, "DLManagedTensorVersioned": DLManagedTensorVersioned,
           "imgpipe_batch_info": _capi.BatchInfo}


def layout(name):
    v = lib.imgpipe_dlpack_layout(name.encode())
    assert v >= 0, f"the library does not know {name}"
    return v


@pytest.mark.parametrize("struct", sorted(MIRRORS))
def test_ctypes_mirrors_match_the_c_layout(struct):
    cls = MIRRORS[struct]
    assert ctypes.sizeof(cls) == layout(f"sizeof({struct})")
    checked = 0
    for field, *_ in cls._fields_:
        v = lib.imgpipe_dlpack_layout(f"{struct}.{field}".encode())
        if v >= 0:
            assert getattr(cls, field).offset == v, f"{struct}.{field}"
            checked += 1
    assert checked >= min(3, len(cls._fields_))
    assert lib.imgpipe_dlpack_layout(b"DLTensor.no_such_field") == -1


def capsule_name(cap):
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    return get_name(cap)


def capsule_pointer(cap, name):
    get = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
        ("PyCapsule_GetPointer", ctypes.pythonapi))
    return get(cap, name)


@pytest.mark.parametrize("versioned", [False, True], ids=["dltensor", "dltensor_versioned"])
def test_the_tensor_describes_the_batch(host, versioned):
    p = host(batch={"size": 3}, transform={"resize": {"width": 20, "height": 10}, "layout": "nhwc",
                                             "dtype": "uint8"})
    b = next(iter(p))
    cap = b.__dlpack__(max_version=(1, 0)) if versioned else b.__dlpack__()
    name = b"dltensor_versioned" if versioned else b"dltensor"
    assert capsule_name(cap) == name
    m = (DLManagedTensorVersioned if versioned else DLManagedTensor).from_address(capsule_pointer(cap, name))
    if versioned:
        assert (m.version.major, m.version.minor) == (1, 0) and m.flags == 0
    t = m.dl_tensor
    assert t.data == b.data_ptr and t.byte_offset == 0
    assert (t.device.device_type, t.device.device_id) == (1, 0)  # kDLCPU
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (1, 8, 1)  # kDLUInt, 8
    assert [t.shape[i] for i in range(t.ndim)] == [3, 10, 20, 3]
    assert [t.strides[i] for i in range(t.ndim)] == [600, 60, 3, 1]
    assert m.deleter
    del cap  # not consumed: the capsule's destructor calls the deleter


def test_float_dtypes_and_numpy(host):
    for dtype, np_dtype in (("float32", np.float32), ("float16", np.float16)):
        b = next(iter(host(batch={"size": 2}, transform={"resize": {"width": 8, "height": 4}, "dtype": dtype})))
        a = np.from_dlpack(b)
        assert a.dtype == np_dtype and a.shape == (2, 3, 4, 8) and a.flags["C_CONTIGUOUS"]


def test_dlpack_arguments(host):
    b = next(iter(host(batch={"size": 2}, transform={"resize": {"width": 8, "height": 4}})))
    with pytest.raises(BufferError):
        b.__dlpack__(copy=True)
    with pytest.raises(BufferError):
        b.__dlpack__(dl_device=(2, 0))
    b.__dlpack__(dl_device=(1, 0), copy=False)
    b.wait(0)  # host: nothing to wait for
    b.synchronize()
