/*
 * pyleak: a CPython extension module with a leaking function and a
 * healthy one (leakcore.h), driven by leak_driver.py.
 *
 *   pyleak.keep_record() -> bytes kept (leaked) by this call
 *   pyleak.scratch()     -> bytes allocated and freed by this call
 *   pyleak.counts()      -> (leaked bytes in all, bytes the healthy path holds)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "leakcore.h"

static PyObject *py_keep_record(PyObject *self, PyObject *args)
{
	(void)self;
	(void)args;
	return PyLong_FromSize_t(keep_record());
}

static PyObject *py_scratch(PyObject *self, PyObject *args)
{
	(void)self;
	(void)args;
	return PyLong_FromSize_t(scratch());
}

static PyObject *py_counts(PyObject *self, PyObject *args)
{
	(void)self;
	(void)args;
	return Py_BuildValue("(nn)", (Py_ssize_t)leak_bytes, (Py_ssize_t)healthy_live);
}

static PyMethodDef methods[] = {
	{"keep_record", py_keep_record, METH_NOARGS, "Allocate a record and keep it (the leak)."},
	{"scratch", py_scratch, METH_NOARGS, "Allocate a buffer and free it."},
	{"counts", py_counts, METH_NOARGS, "(leaked bytes, healthy bytes live)."},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "pyleak", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_pyleak(void)
{
	return PyModule_Create(&module);
}
