"""The compiled kernels' data behind one pointer each: the model's kernel arrays
(:class:`~.kernel_params.KernelParams`) and the work buffers (:class:`~.kernels.Work`), as MuJoCo passes
``mjModel*`` and ``mjData*``.

Passed as named tuples, the ~50 model arrays and ~30 work arrays were flattened into ~600 machine-level
arguments at every call between kernels, and numba and LLVM spent most of a multi-minute compile moving
them (a two-line kernel taking both tuples compiled in 1.5 s). Here each is one pointer to a C struct of
array descriptors (:class:`DataPtrType`): field reads are plain loads, the arrays are *borrowed* (no
reference counting, so the kernels compile without numba's runtime, ``_nrt=False``, as before), and the
kernels compile several times faster.

:func:`params_ref` and :func:`work_ref` build the structs from the named tuples (which the Python side
keeps for reading): the struct lives in a NumPy byte buffer held, with the arrays it points to, by the
returned :class:`DataRef` (so it must outlive every kernel call that uses it; :mod:`.kernel_params` keeps
the model's, the Simulator holds its own). Arrays are normalised to C-contiguous float64/int64 so every
model gives the same numba types (one compile for all models).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.core.datamodel import models
from numba.core.extending import (NativeValue, lower_getattr_generic, register_model, typeof_impl,
                                  unbox)
from numba.core.typing.templates import AttributeTemplate, infer_getattr

from tensegrity_engine.dynamics.kernels import Work


class DataPtrType(types.Type):
    """numba type of a pointer to a struct with named fields (arrays and integers)."""

    def __init__(self, kind: str, fields: tuple):
        self.kind = kind
        self.fields = tuple(fields)            # ((name, numba type), ...)
        super().__init__(name=f"{kind}Ptr({', '.join(f'{n}: {t}' for n, t in self.fields)})")


def _struct_type(dmm, field_types) -> ir.LiteralStructType:
    """The C struct laid out for numba values of ``field_types`` (each in its in-memory form)."""
    return ir.LiteralStructType([dmm.lookup(t).get_data_type() for t in field_types])


@register_model(DataPtrType)
class _DataPtrModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _struct_type(dmm, [t for _, t in fe_type.fields]).as_pointer())


@infer_getattr
class _DataPtrAttributes(AttributeTemplate):
    key = DataPtrType

    def generic_resolve(self, typ, attr):
        return dict(typ.fields).get(attr)


@lower_getattr_generic(DataPtrType)
def _data_ptr_getattr(context, builder, typ, value, attr):
    names = [n for n, _ in typ.fields]
    i = names.index(attr)
    ftype = typ.fields[i][1]
    ptr = cgutils.gep_inbounds(builder, value, 0, i)
    return context.data_model_manager[ftype].load_from_data_pointer(builder, ptr)


class DataRef:
    """A struct of arrays for the kernels: ``kind`` ('Params' or 'Work'), the numba field types, the byte
    buffer holding the struct and the arrays it points to (kept alive here)."""

    def __init__(self, kind, fields, buffer, arrays):
        self.kind, self.fields, self.buffer, self.arrays = kind, fields, buffer, arrays
        self.address = buffer.ctypes.data
        self.numba_type = DataPtrType(kind, fields)     # built once: its name spells ~60 fields (20 µs a call)


@typeof_impl.register(DataRef)
def _typeof_data_ref(val, c):
    return val.numba_type


@unbox(DataPtrType)
def _unbox_data_ref(typ, obj, c):
    address = c.pyapi.object_getattr_string(obj, "address")
    ptr = c.pyapi.long_as_voidptr(address)
    c.pyapi.decref(address)
    struct_ptr = c.builder.bitcast(ptr, c.context.get_value_type(typ))
    return NativeValue(struct_ptr)


def _descriptor_words(value) -> list:
    """The 8-byte words of one struct field as numba lays it out: an int64, or an array descriptor
    {meminfo, parent, nitems, itemsize, data, shape..., strides...} with meminfo and parent NULL (borrowed:
    the kernels never count references)."""
    if isinstance(value, int):
        return [value]
    return [0, 0, value.size, value.itemsize, value.ctypes.data, *value.shape, *value.strides]


def _pack(field_types, values) -> np.ndarray:
    """The C struct of :class:`DataPtrType` for ``values``, written in Python (compiling a writer for tuples of
    ~60 fields cost seconds); its size is checked against numba's own layout of the same fields."""
    from numba.core.registry import cpu_target
    words = [w for v in values for w in _descriptor_words(v)]
    context = cpu_target.target_context
    size = context.get_abi_sizeof(_struct_type(context.data_model_manager, field_types))
    if size != 8 * len(words):      # all members are 8 bytes; their order is checked by test_kernel_data
        raise RuntimeError(f"numba lays this struct out in {size} bytes, not {8 * len(words)}: kernel_data "
                           "needs updating for this numba version")
    buffer = np.zeros(8 * len(words) + 64, np.uint8)
    offset = (-buffer.ctypes.data) % 64                 # cache-line aligned struct
    buffer = buffer[offset:offset + 8 * len(words)]
    buffer.view(np.int64)[:] = words
    return buffer


def _normalised(value, writable: bool):
    if isinstance(value, (int, np.integer)):
        return int(value)
    a = np.asarray(value)
    a = np.ascontiguousarray(a, dtype=np.int64 if a.dtype.kind in "iub" else np.float64)
    if not writable and a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


def _make(kind, names, values) -> DataRef:
    from numba import typeof
    fields = tuple((n, typeof(v)) for n, v in zip(names, values))
    return DataRef(kind, fields, _pack([t for _, t in fields], values), values)


def params_ref(params) -> DataRef:
    """The kernel-side reference to a :class:`~.kernel_params.KernelParams` (read-only arrays, shared)."""
    return _make("Params", params._fields, tuple(_normalised(v, False) for v in params))


def work_ref(work) -> DataRef:
    """The kernel-side reference to a :class:`~.kernels.Work` (its arrays, shared: the kernels write into
    them and the Python side reads them through the named tuple)."""
    for name, a in zip(Work._fields, work):
        if not (a.flags.c_contiguous and a.flags.writeable and a.dtype == np.float64):
            raise TypeError(f"work buffer {name} must be a writable C-contiguous float64 array")
    return _make("Work", Work._fields, tuple(work))
