/*
 * rbleak: a Ruby C extension with a leaking method and a healthy one
 * (leakcore.h), driven by leak_driver.rb.
 *
 *   RbLeak.keep_record -> bytes kept (leaked) by this call
 *   RbLeak.scratch     -> bytes allocated and freed by this call
 *   RbLeak.counts      -> [leaked bytes in all, bytes the healthy path holds]
 */
#include <ruby.h>

#include "leakcore.h"

static VALUE rb_keep_record(VALUE self)
{
	(void)self;
	return SIZET2NUM(keep_record());
}

static VALUE rb_scratch(VALUE self)
{
	(void)self;
	return SIZET2NUM(scratch());
}

static VALUE rb_counts(VALUE self)
{
	(void)self;
	return rb_ary_new_from_args(2, SIZET2NUM(leak_bytes), SIZET2NUM(healthy_live));
}

void Init_rbleak(void)
{
	VALUE m = rb_define_module("RbLeak");
	rb_define_module_function(m, "keep_record", rb_keep_record, 0);
	rb_define_module_function(m, "scratch", rb_scratch, 0);
	rb_define_module_function(m, "counts", rb_counts, 0);
}
