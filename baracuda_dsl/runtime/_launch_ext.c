/* The compiled cache-hit launch path: one pre-packed kernel launch.
 *
 * A Call holds everything of a launch that a repeated call does not change: the kernel handle,
 * grid, block, dynamic shared memory, and the packed parameter buffer (one 8-byte slot per
 * scalar parameter, a 64-byte aligned 128-byte slot per TMA descriptor: the layout of
 * baracuda_dsl.abi.ArgPack).  Call.launch(stream, *values) copies the buffer to the stack,
 * writes the per-call values (pointers, scalar operands) into their slots and calls the driver's
 * cuLaunchKernel, resolved from libcuda at import (no CUDA headers or toolkit needed to build).
 * It returns the CUresult as an int (0 = success); the Python side turns errors into
 * DriverError.  The buffer lives on the calling thread's stack, so one Call is safe to launch
 * from many threads at once.  Built against the limited C API (abi3) of Python 3.10.
 */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int (*launch_fn)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                         unsigned by, unsigned bz, unsigned smem, void *stream, void **params,
                         void **extra);

static launch_fn cu_launch = NULL;

#define MAX_PARAMS 512
#define STACK_BYTES 8192

typedef struct {
    PyObject_HEAD
    void *func;
    unsigned grid[3], block, smem;
    Py_ssize_t size, nparams, npatch;
    unsigned char *tmpl;      /* size bytes */
    uint32_t *param_off;      /* nparams offsets into the buffer */
    uint32_t *patch_off;      /* npatch offsets */
    char *patch_kind;         /* Q (u64 / pointer), q (i64), i (i32), f (f32), d (f64) */
} Call;

static void Call_dealloc(PyObject *o) {
    Call *self = (Call *)o;
    free(self->tmpl);
    free(self->param_off);
    free(self->patch_off);
    free(self->patch_kind);
    PyTypeObject *tp = Py_TYPE(o);
    freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    f(o);
    Py_DECREF(tp);
}

/* offsets[i] = int(tup[i]) for i < n, each a valid 8-byte slot of a ``size``-byte buffer */
static int read_offsets(PyObject *tup, uint32_t *offsets, Py_ssize_t n, Py_ssize_t size) {
    for (Py_ssize_t i = 0; i < n; i++) {
        long v = PyLong_AsLong(PyTuple_GetItem(tup, i));
        if (v < 0 || v + 8 > size) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "Call: bad offset");
            return -1;
        }
        offsets[i] = (uint32_t)v;
    }
    return 0;
}

/* Call(func, grid(3-tuple), block, smem, template(bytes), param_offsets(tuple),
 *      patch_offsets(tuple), patch_kinds(str)) */
static int Call_init(PyObject *o, PyObject *args, PyObject *kw) {
    Call *self = (Call *)o;
    unsigned long long func;
    unsigned gx, gy, gz, block, smem;
    PyObject *tmpl, *poffs, *patches;
    const char *kinds;
    Py_ssize_t nkinds;
    if (kw && PyDict_Size(kw)) {
        PyErr_SetString(PyExc_TypeError, "Call takes no keyword arguments");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "K(III)IISOOs#", &func, &gx, &gy, &gz, &block, &smem, &tmpl,
                          &poffs, &patches, &kinds, &nkinds))
        return -1;
    if (!PyBytes_Check(tmpl) || !PyTuple_Check(poffs) || !PyTuple_Check(patches)) {
        PyErr_SetString(PyExc_TypeError, "Call: template must be bytes, offsets tuples");
        return -1;
    }
    Py_ssize_t size = PyBytes_Size(tmpl);
    Py_ssize_t np = PyTuple_Size(poffs), npatch = PyTuple_Size(patches);
    if (size > STACK_BYTES || np > MAX_PARAMS || npatch != nkinds) {
        PyErr_SetString(PyExc_ValueError, "Call: parameter block too large or kinds mismatch");
        return -1;
    }
    self->func = (void *)(uintptr_t)func;
    self->grid[0] = gx; self->grid[1] = gy; self->grid[2] = gz;
    self->block = block; self->smem = smem;
    self->size = size; self->nparams = np; self->npatch = npatch;
    self->tmpl = malloc(size ? size : 1);
    self->param_off = malloc(sizeof(uint32_t) * (np ? np : 1));
    self->patch_off = malloc(sizeof(uint32_t) * (npatch ? npatch : 1));
    self->patch_kind = malloc(npatch ? npatch : 1);
    if (!self->tmpl || !self->param_off || !self->patch_off || !self->patch_kind) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(self->tmpl, PyBytes_AsString(tmpl), size);
    if (read_offsets(poffs, self->param_off, np, size) < 0 ||
        read_offsets(patches, self->patch_off, npatch, size) < 0)
        return -1;
    memcpy(self->patch_kind, kinds, npatch);
    return 0;
}

static PyObject *Call_launch(PyObject *o, PyObject *const *args, Py_ssize_t nargs) {
    Call *self = (Call *)o;
    if (nargs != 1 + self->npatch) {
        PyErr_Format(PyExc_TypeError, "Call.launch takes the stream and %zd values, got %zd",
                     self->npatch, nargs);
        return NULL;
    }
    unsigned long long stream = PyLong_AsUnsignedLongLong(args[0]);
    if (PyErr_Occurred()) return NULL;
    _Alignas(64) unsigned char buf[STACK_BYTES];
    void *params[MAX_PARAMS];
    memcpy(buf, self->tmpl, self->size);
    for (Py_ssize_t i = 0; i < self->npatch; i++) {
        unsigned char *slot = buf + self->patch_off[i];
        PyObject *v = args[1 + i];
        switch (self->patch_kind[i]) {
        case 'Q': { unsigned long long x = PyLong_AsUnsignedLongLong(v); memcpy(slot, &x, 8); break; }
        case 'q': { long long x = PyLong_AsLongLong(v); memcpy(slot, &x, 8); break; }
        case 'i': { long x = PyLong_AsLong(v); int32_t y = (int32_t)x; memcpy(slot, &y, 4); break; }
        case 'f': { float x = (float)PyFloat_AsDouble(v); memcpy(slot, &x, 4); break; }
        case 'd': { double x = PyFloat_AsDouble(v); memcpy(slot, &x, 8); break; }
        default: PyErr_SetString(PyExc_ValueError, "Call: unknown patch kind"); return NULL;
        }
        if (PyErr_Occurred()) return NULL;
    }
    for (Py_ssize_t i = 0; i < self->nparams; i++) params[i] = buf + self->param_off[i];
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = cu_launch(self->func, self->grid[0], self->grid[1], self->grid[2], self->block, 1, 1,
                  self->smem, (void *)(uintptr_t)stream, params, NULL);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(r);
}

static PyMethodDef Call_methods[] = {
    {"launch", (PyCFunction)(void (*)(void))Call_launch, METH_FASTCALL,
     "launch(stream, *values) -> CUresult: write the per-call values and launch"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot Call_slots[] = {
    {Py_tp_dealloc, Call_dealloc},
    {Py_tp_init, Call_init},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_methods, Call_methods},
    {Py_tp_doc, "A pre-packed kernel launch (see the module docstring)."},
    {0, NULL},
};

static PyType_Spec Call_spec = {
    "baracuda_dsl.runtime._launch_ext.Call", sizeof(Call), 0, Py_TPFLAGS_DEFAULT, Call_slots,
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "_launch_ext",
    "Compiled cache-hit kernel launches (optional; the pure-Python path is the fallback).", -1,
    NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__launch_ext(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h) h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) {
        PyErr_SetString(PyExc_ImportError, "_launch_ext: libcuda.so.1 is not loadable");
        return NULL;
    }
    cu_launch = (launch_fn)dlsym(h, "cuLaunchKernel");
    if (!cu_launch) {
        PyErr_SetString(PyExc_ImportError, "_launch_ext: cuLaunchKernel not found in libcuda");
        return NULL;
    }
    PyObject *m = PyModule_Create(&moddef);
    if (!m) return NULL;
    PyObject *tp = PyType_FromSpec(&Call_spec);
    if (!tp || PyModule_AddObject(m, "Call", tp) < 0) {
        Py_XDECREF(tp);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
