/*
 * Test-only stand-ins for the nginx drivers (act/knob_nginx.c, act/knob_listen.c, act/knob_listen_param.c,
 * act/knob_upstream.c), so the other drivers' tests
 * link without nginx: knob_ops_for() names these tables. Every operation says "not supported".
 */
#include <errno.h>

#include "act/knob.h"

static int stub_probe(struct knob *k, char *why, size_t whylen)
{
	(void)k;
	if (why && whylen)
		why[0] = '\0';
	return -ENOTSUP;
}

static int stub_read(struct knob *k, char *out, size_t outlen)
{
	(void)k;
	if (out && outlen)
		out[0] = '\0';
	return -ENOTSUP;
}

static int stub_write(struct knob *k, const char *value, char *why, size_t whylen, knob_done_fn done, void *ctx)
{
	(void)k;
	(void)value;
	(void)done;
	(void)ctx;
	if (why && whylen)
		why[0] = '\0';
	return -ENOTSUP;
}

static void stub_release(struct knob *k)
{
	(void)k;
}

const struct knob_ops knob_nginx_ops = {
	.kind = "nginx_directive",
	.probe = stub_probe,
	.read = stub_read,
	.write = stub_write,
	.release = stub_release,
};

const struct knob_ops knob_listen_ops = {
	.kind = "listen_queue",
	.probe = stub_probe,
	.read = stub_read,
	.write = stub_write,
	.release = stub_release,
};

const struct knob_ops knob_listen_param_ops = {
	.kind = "listen_param",
	.probe = stub_probe,
	.read = stub_read,
	.write = stub_write,
	.release = stub_release,
};

const struct knob_ops knob_upstream_ops = {
	.kind = "upstream_keepalive",
	.probe = stub_probe,
	.read = stub_read,
	.write = stub_write,
	.release = stub_release,
};
